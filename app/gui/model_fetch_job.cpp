// See model_fetch_job.h.
#include "model_fetch_job.h"

#include <chrono>
#include <utility>

namespace kvscope::gui {

ModelFetchJob::ModelFetchJob(kvscope::fetch::ModelSource source, QString model_dir, QObject* parent)
    : QObject(parent), source_(std::move(source)), model_dir_(std::move(model_dir)) {}

ModelFetchJob::~ModelFetchJob() {
  cancel_.store(true);
  if (thread_.joinable()) thread_.join();  // libcurl polls cancel at least once a second
}

void ModelFetchJob::start() {
  if (running_.load()) return;
  if (thread_.joinable()) thread_.join();  // the last run has ended: it cleared running_
  cancel_.store(false);
  running_.store(true);
  thread_ = std::thread([this] { run(); });
}

void ModelFetchJob::cancel() { cancel_.store(true); }

void ModelFetchJob::run() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last{};
  auto last_stage = kvscope::fetch::FetchStage::kDownloading;
  kvscope::fetch::DownloadCallbacks callbacks;
  callbacks.cancelled = [this] { return cancel_.load(); };
  callbacks.progress = [&](kvscope::fetch::FetchStage stage, uint64_t done, uint64_t total) {
    const Clock::time_point now = Clock::now();
    if (stage == last_stage && done != total && now - last < std::chrono::milliseconds(50)) return;
    last = now;
    last_stage = stage;
    QString name;
    switch (stage) {
      case kvscope::fetch::FetchStage::kDownloading: name = tr("Downloading"); break;
      case kvscope::fetch::FetchStage::kVerifying: name = tr("Checking"); break;
      case kvscope::fetch::FetchStage::kExtracting: name = tr("Unpacking"); break;
    }
    emit progress(name, static_cast<qint64>(done), static_cast<qint64>(total));
  };
  const kvscope::fetch::FetchResult result =
      kvscope::fetch::fetch_model(source_, model_dir_.toStdString(), callbacks);
  running_.store(false);  // before the signal: a receiver may start() again
  const QString message = QString::fromStdString(result.status.message);
  if (result.status.ok()) {
    emit finished(QString::fromStdString(result.path));
  } else if (result.status.failure == kvscope::fetch::FetchFailure::kCancelled) {
    emit cancelled(tr("Download cancelled. What arrived is kept: the next download resumes it."));
  } else {
    emit failed(message);
  }
}

}  // namespace kvscope::gui
