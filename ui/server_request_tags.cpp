// ServerRequestTags (see server_request_tags.h).
#include "server_request_tags.h"

#include "models/block_table_model.h"

namespace kvscope::ui {

ServerRequestTags::ServerRequestTags(QObject* parent) : QIdentityProxyModel(parent) {}

QVariant ServerRequestTags::data(const QModelIndex& index, int role) const {
  QVariant value = QIdentityProxyModel::data(index, role);
  if (index.column() != BlockTableModel::Sequence || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
    return value;
  if (!isServerRequest(index.data(BlockTableModel::RequestIdRole).value<quint64>())) return value;
  if (role == Qt::DisplayRole) return tr("%1 · server").arg(value.toString());
  const QString tip = value.toString();
  return tip.isEmpty() ? tr("A request to the app's server (HTTP API)")
                       : tr("A request to the app's server (HTTP API)\n\n%1").arg(tip);
}

void ServerRequestTags::addRequest(quint64 request_id) {
  ids_.insert(request_id);
  retag();
}

void ServerRequestTags::removeRequest(quint64 request_id) {
  if (ids_.remove(request_id)) retag();
}

void ServerRequestTags::clear() {
  ids_.clear();
  retag();
}

void ServerRequestTags::retag() {
  const int rows = rowCount();
  if (rows > 0)
    emit dataChanged(index(0, BlockTableModel::Sequence), index(rows - 1, BlockTableModel::Sequence),
                     {Qt::DisplayRole, Qt::ToolTipRole});
}

}  // namespace kvscope::ui
