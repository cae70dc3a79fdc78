// FrameTimeProbe: how responsive the GUI thread is. A precise timer asks to
// run every kTickMs; when the event loop is free the ticks arrive on time,
// when something blocks it (a slow paint, a synchronous call, a long
// snapshot update) the next tick is late by as much. The gaps between ticks
// are the frame times the user feels: p99 under 16 ms means the window kept
// up with a 60 Hz display 99% of the time.
//
// Used by `kvscope --measure-frames` (prints JSON) and tests/ui.
#pragma once

#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QString>

class QTimer;

namespace kvscope::ui {

struct FrameTimeStats {
  int count = 0;  // gaps measured
  double median_ms = 0.0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
  int over_16ms = 0;  // gaps longer than one 60 Hz frame
};

class FrameTimeProbe : public QObject {
  Q_OBJECT
 public:
  static constexpr int kTickMs = 4;

  explicit FrameTimeProbe(QObject* parent = nullptr);

  void start();
  void stop();
  void reset();
  bool running() const;
  const std::vector<double>& gapsMs() const { return gaps_ms_; }
  FrameTimeStats stats() const;
  // {"count":..,"median_ms":..,"p99_ms":..,"max_ms":..,"over_16ms":..}
  static QString toJson(const FrameTimeStats& stats);

 private:
  void tick();

  QTimer* timer_ = nullptr;
  QElapsedTimer clock_;
  qint64 last_ns_ = -1;
  std::vector<double> gaps_ms_;
};

// Percentile (0..100) of `values` by nearest rank; 0 for none.
double percentileOf(std::vector<double> values, double percent);

}  // namespace kvscope::ui
