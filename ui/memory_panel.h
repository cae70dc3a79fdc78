// MemoryPanel: where the engine's memory goes, live, and a "what if" for
// another block size and KV budget.
//   - A stacked bar and a table in MiB: weights | KV used | KV cached-free |
//     KV free | workspace | swap. The KV split follows the latest snapshot's
//     KvStats; sizes the engine did not report show "—".
//   - A what-if form (block size, KV budget, prompt / output / max tokens of a
//     request) whose figures update as it is edited (memory_estimate.h): pool
//     blocks and token capacity, how many such requests fit at once paged vs
//     contiguous, and the slots each reserves but never writes.
//   - With tensor parallelism (tp > 1), a per-rank table: each rank's query
//     and KV heads, weight bytes and KV bytes (models/rank_text.h), from the
//     latest snapshot, else from the model info.
//   - "Apply to engine" emits applyRequested() with the engine's config
//     changed to the what-if block size and budget; whoever owns the engine
//     restarts it. The panel never touches the engine.
// The bar's free and cached-free segments use the block map's colours for the
// widget's palette, and error text a red readable on it; both are redone when
// the palette changes (e.g. the system switches to a dark theme).
#pragma once

#include <QWidget>

#include "engine_types.h"
#include "models/memory_estimate.h"

class QLabel;
class QPushButton;
class QSpinBox;

namespace kvscope::ui {

class MemoryBarWidget;

class MemoryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryPanel(QWidget* parent = nullptr);

  // The configuration applyRequested() would carry now (the engine's config
  // with the form's block size and budget); meaningful after setModel().
  EngineConfig whatIfConfig() const;
  // The form's current estimate.
  WhatIfResult whatIf() const { return what_if_; }
  const MemoryBreakdown& breakdown() const { return breakdown_; }

 public slots:
  // A model was loaded (or the engine restarted) with this configuration.
  // Resets the form to the engine's block size and budget.
  void setModel(const kvscope::ModelInfo& info, const kvscope::EngineConfig& config);
  void setSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  // No engine: empty figures, the form disabled.
  void clear();

 signals:
  void applyRequested(const kvscope::EngineConfig& config);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void refreshBreakdown();
  void refreshWhatIf();
  QWidget* makeBreakdownBox();
  QWidget* makeWhatIfBox();

  bool has_model_ = false;
  ModelInfo info_;
  EngineConfig config_;
  SnapshotPtr snapshot_;
  MemoryBreakdown breakdown_;
  WhatIfResult what_if_;

  QLabel* header_ = nullptr;
  MemoryBarWidget* bar_ = nullptr;
  QLabel* breakdown_table_ = nullptr;
  QLabel* rank_table_ = nullptr;  // hidden at tp = 1
  QSpinBox* block_size_ = nullptr;
  QSpinBox* budget_mib_ = nullptr;
  QSpinBox* prompt_tokens_ = nullptr;
  QSpinBox* output_tokens_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QLabel* what_if_text_ = nullptr;
  QPushButton* apply_ = nullptr;
};

}  // namespace kvscope::ui
