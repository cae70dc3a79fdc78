#include "frame_measurement.h"

#include <QTimer>

namespace kvscope::gui {

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
          "\"finished_requests\":%7,\"engine_steps\":%8,\"decode_tokens\":%9,\"decode_tok_s\":%10}")
          .arg(ui::FrameTimeProbe::toJson(loading_), ui::FrameTimeProbe::toJson(probe_.stats()))
          .arg(seconds_)
          .arg(workload_)
          .arg(QString::fromLatin1(ended_by))
          .arg(busy_s, 0, 'f', 3)
          .arg(finished_requests_)
          .arg(steps_)
          .arg(decode_tokens_)
          .arg(busy_s > 0 ? static_cast<double>(decode_tokens_) / busy_s : 0.0, 0, 'f', 1);
  emit measured(json);
}

}  // namespace kvscope::gui
