#include "frame_measurement.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTimer>

namespace kvscope::gui {
namespace {

// `text` as a JSON string literal.
QString jsonString(const QString& text) {
  const QByteArray array = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact);  // ["..."]
  return QString::fromUtf8(array.mid(1, array.size() - 2));
}

}  // namespace

FrameMeasurement::FrameMeasurement(EngineWorker* worker, int seconds, int workload, QObject* parent)
    : QObject(parent), seconds_(seconds), workload_(workload) {
  using W = EngineWorker;
  probe_.start();
  connect(worker, &W::modelLoaded, this, &FrameMeasurement::onModelLoaded);
  connect(worker, &W::snapshot, this, [this](const ui::SnapshotPtr& snapshot) {
    if (!running_ || done_ || !snapshot) return;
    for (const StepStats& step : snapshot->steps_reported()) {
      if (step.step <= last_step_) continue;  // an idle re-publish, or counted before the window
      last_step_ = step.step;
      ++steps_;
      decode_tokens_ += step.num_decode_tokens;
      served_any_ = true;
    }
  });
  connect(worker, &W::finished, this, [this] {
    if (running_ && !done_) ++finished_requests_;
  });
  // A workload the engine refuses ran nothing: the record says why (only a
  // dialog did, and the JSON read as a slow run that timed out).
  connect(worker, &W::error, this, [this](const QString& message) {
    if (done_) return;
    if (errors_++ == 0) first_error_ = message;
  });
  // Every request served: the window ends here rather than measure an idle app.
  connect(worker, &W::idle, this, [this] {
    if (running_ && served_any_) finish("idle");
  });
}

void FrameMeasurement::onModelLoaded() {
  if (running_ || done_) return;  // a reconfigure reloads; the first load is the one measured
  loading_ = probe_.stats();
  probe_.reset();
  running_ = true;
  running_clock_.start();
  QTimer::singleShot(seconds_ * 1000, this, [this] { finish("timeout"); });
}

void FrameMeasurement::finish(const char* ended_by) {
  if (done_) return;
  done_ = true;
  probe_.stop();
  const double busy_s = static_cast<double>(running_clock_.nsecsElapsed()) / 1e9;
  const QString json =
      QStringLiteral(
          "{\"loading\":%1,\"running\":%2,\"seconds\":%3,\"workload\":%4,\"ended_by\":\"%5\",\"running_s\":%6,"
          "\"finished_requests\":%7,\"engine_steps\":%8,\"decode_tokens\":%9,\"decode_tok_s\":%10,"
          "\"errors\":%11,\"first_error\":%12}")
          .arg(ui::FrameTimeProbe::toJson(loading_), ui::FrameTimeProbe::toJson(probe_.stats()))
          .arg(seconds_)
          .arg(workload_)
          .arg(QString::fromLatin1(ended_by))
          .arg(busy_s, 0, 'f', 3)
          .arg(finished_requests_)
          .arg(steps_)
          .arg(decode_tokens_)
          .arg(busy_s > 0 ? static_cast<double>(decode_tokens_) / busy_s : 0.0, 0, 'f', 1)
          .arg(errors_)
          .arg(errors_ > 0 ? jsonString(first_error_) : QStringLiteral("null"));
  emit measured(json);
}

}  // namespace kvscope::gui
