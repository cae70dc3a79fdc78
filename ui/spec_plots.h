// SpecPlots: speculative decoding in the Plots dock (docs/speculative.md,
// docs/desktop_app.md "Speculative decoding in the app"), fed from the same snapshots
// as PlotsWidget, which holds it under its strips:
//   acceptance over time  - per verifying step, the draft tokens accepted
//                           over those proposed in the last kWindowVerifySteps
//                           verifying steps, one series per proposer: the
//                           method in effect when the step ran, so switching
//                           ngram -> early_exit leaves two series;
//   accepted per verification - how many draft tokens each verification
//                           accepted (0..k), bars of verification counts;
//   acceptance by position - P(draft token i accepted | it was judged), bars
//                           from SpecStats::acceptance_at.
// The two bar charts cover the proposer in effect since it was switched on
// (the engine's counters since then: SpecStats minus its value at the switch).
// The histogram is exact: a verification that accepted at least j + 1 tokens
// is exactly one that accepted its draft token j (a draft is judged up to its
// first rejection), so the number that accepted exactly j is
// num_accepted_at[j - 1] - num_accepted_at[j] (num_drafts for j - 1 = -1).
// Per-step counts could not give it: a step with two verifying sequences
// sums their accepted tokens.
#pragma once

#include <array>
#include <map>
#include <string>

#include <QVector>
#include <QWidget>

#include "engine_types.h"

class QCustomPlot;
class QCPBars;
class QCPGraph;
class QCPTextElement;

namespace kvscope::ui {

class SpecPlots : public QWidget {
  Q_OBJECT
 public:
  static constexpr double kWindowSteps = 300;  // as PlotsWidget's strips, so x lines up
  static constexpr int kWindowVerifySteps = 8;

  explicit SpecPlots(QWidget* parent = nullptr);

  // The proposer the engine runs with from now on. Steps are attributed to
  // it from the snapshot after the next one: the engine worker publishes a
  // snapshot right after applying new settings, and that one's steps ran
  // under the old proposer. Before any snapshot it applies at once.
  void setSpecMethod(kvscope::SpecMethod method);
  kvscope::SpecMethod specMethod() const { return method_; }
  void addSnapshot(const SnapshotPtr& snapshot);
  void clear();

  // For tests: the acceptance series' names (spec_method_name), in order of
  // appearance, and one's points (x = step, y = acceptance 0..1).
  QStringList acceptanceSeries() const;
  QVector<QPointF> acceptancePoints(const QString& method) const;
  // For tests: bar heights, index = accepted tokens / draft position.
  QVector<double> acceptedLengthCounts() const;
  QVector<double> positionAcceptance() const;
  // For tests: the histogram's title and x-axis label ("title / label").
  QString histogramTitle() const;

 protected:
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  struct Series {
    QCPGraph* graph = nullptr;
    std::vector<std::pair<int32_t, int32_t>> window;  // last verifying steps: accepted, drafted
  };
  std::array<QCustomPlot*, 3> plots() const { return {acceptance_, lengths_, positions_}; }
  void applyPalette();
  Series& seriesFor(kvscope::SpecMethod method);
  void updateBars(const SpecStats& stats);

  QCustomPlot* acceptance_ = nullptr;
  QCustomPlot* lengths_ = nullptr;
  QCustomPlot* positions_ = nullptr;
  QCPTextElement* lengths_title_ = nullptr;
  QCPTextElement* positions_title_ = nullptr;
  QCPBars* length_bars_ = nullptr;
  QCPBars* position_bars_ = nullptr;
  std::map<std::string, Series> series_;  // by spec_method_name
  QStringList series_order_;

  kvscope::SpecMethod method_ = kvscope::SpecMethod::Off;          // steps are attributed to
  kvscope::SpecMethod pending_method_ = kvscope::SpecMethod::Off;  // from the snapshot after the next
  bool method_pending_ = false;
  kvscope::SpecMethod bars_method_ = kvscope::SpecMethod::Off;   // the proposer the bars count
  SpecStats baseline_;  // the engine's counters when bars_method_ took effect
  SpecStats last_stats_;
  double last_step_ = -1;
};

}  // namespace kvscope::ui
