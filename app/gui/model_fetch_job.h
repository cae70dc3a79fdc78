// ModelFetchJob: runs kvscope::fetch::fetch_model (app/fetch) on its own
// thread so that the GUI never waits on the network, and reports through
// signals, which reach receivers on the GUI thread queued. Progress is
// coalesced to about 20 reports a second. cancel() stops at the next libcurl
// progress poll and keeps the partial download; start() again resumes it.
#pragma once

#include <atomic>
#include <thread>

#include <QObject>
#include <QString>

#include "fetch/model_fetch.h"

namespace kvscope::gui {

class ModelFetchJob : public QObject {
  Q_OBJECT
 public:
  ModelFetchJob(kvscope::fetch::ModelSource source, QString model_dir, QObject* parent = nullptr);
  ~ModelFetchJob() override;  // cancels and joins a running fetch

  bool running() const { return running_.load(); }

 public slots:
  void start();   // nothing while running
  void cancel();

 signals:
  // `stage`: "Downloading", "Checking" or "Unpacking" (translated).
  void progress(const QString& stage, qint64 done, qint64 total);
  void finished(const QString& model_path);
  void failed(const QString& message);
  void cancelled(const QString& message);

 private:
  void run();  // on the fetch thread

  kvscope::fetch::ModelSource source_;
  QString model_dir_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> cancel_{false};
};

}  // namespace kvscope::gui
