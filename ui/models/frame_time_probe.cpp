// FrameTimeProbe (see frame_time_probe.h).
#include "models/frame_time_probe.h"

#include <algorithm>
#include <cmath>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

namespace kvscope::ui {

double percentileOf(std::vector<double> values, double percent) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(std::clamp(percent, 0.0, 100.0) / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::max(rank, 1.0)) - 1;
  return values[std::min(index, values.size() - 1)];
}

FrameTimeProbe::FrameTimeProbe(QObject* parent) : QObject(parent), timer_(new QTimer(this)) {
  timer_->setTimerType(Qt::PreciseTimer);
  timer_->setInterval(kTickMs);
  connect(timer_, &QTimer::timeout, this, &FrameTimeProbe::tick);
}

void FrameTimeProbe::start() {
  clock_.start();
  last_ns_ = -1;
  timer_->start();
}

void FrameTimeProbe::stop() { timer_->stop(); }
void FrameTimeProbe::reset() {
  gaps_ms_.clear();
  last_ns_ = -1;
}
bool FrameTimeProbe::running() const { return timer_->isActive(); }

void FrameTimeProbe::tick() {
  const qint64 now = clock_.nsecsElapsed();
  if (last_ns_ >= 0) gaps_ms_.push_back(static_cast<double>(now - last_ns_) / 1e6);
  last_ns_ = now;
}

FrameTimeStats FrameTimeProbe::stats() const {
  FrameTimeStats s;
  s.count = static_cast<int>(gaps_ms_.size());
  if (gaps_ms_.empty()) return s;
  s.median_ms = percentileOf(gaps_ms_, 50);
  s.p99_ms = percentileOf(gaps_ms_, 99);
  s.max_ms = *std::max_element(gaps_ms_.begin(), gaps_ms_.end());
  s.over_16ms = static_cast<int>(std::count_if(gaps_ms_.begin(), gaps_ms_.end(), [](double g) { return g > 16.0; }));
  return s;
}

QString FrameTimeProbe::toJson(const FrameTimeStats& s) {
  QJsonObject o;
  o.insert(QStringLiteral("count"), s.count);
  o.insert(QStringLiteral("median_ms"), s.median_ms);
  o.insert(QStringLiteral("p99_ms"), s.p99_ms);
  o.insert(QStringLiteral("max_ms"), s.max_ms);
  o.insert(QStringLiteral("over_16ms"), s.over_16ms);
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

}  // namespace kvscope::ui
