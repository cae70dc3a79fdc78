// ServerRequestTags: the Sequences table's model seen through a tag, so a
// request that came from the app's HTTP server reads "12 · server" (and says
// so in its tooltip) beside the chat's and the workload's. A proxy over
// BlockTableModel (rows, roles and selection pass through unchanged); fed
// the ids the server submits and finishes (app/gui/gui_engine_driver.h).
//   tested by tests/ui/server_toggle_test.cpp
#pragma once

#include <QIdentityProxyModel>
#include <QSet>

namespace kvscope::ui {

class ServerRequestTags : public QIdentityProxyModel {
  Q_OBJECT
 public:
  explicit ServerRequestTags(QObject* parent = nullptr);

  bool isServerRequest(quint64 request_id) const { return ids_.contains(request_id); }
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 public slots:
  void addRequest(quint64 request_id);
  void removeRequest(quint64 request_id);
  // The engine was replaced: its requests are gone.
  void clear();

 private:
  void retag();
  QSet<quint64> ids_;
};

}  // namespace kvscope::ui
