// SharedPrefixPanel: the SharedPrefixModel (models/shared_prefix_model.h) in
// a table, under one line with the total: "Prefix sharing saves N tokens
// (X MiB) of K/V", and one with the last step's attention: its time and what
// cascade attention did ("cascade: 1 pass for 32 sequences, 1984 shared
// tokens, 87 MiB of K/V not read"). Fed with snapshots at the inspector's rate.
// A GPU times attention in one step of 16 (the setting gpu_attention_timing):
// between those, the line shows the last timed step's attention and its number.
#pragma once

#include <cstdint>
#include <optional>

#include <QWidget>

#include "engine_types.h"

class QLabel;
class QTableView;

namespace kvscope::ui {

class SharedPrefixModel;

class SharedPrefixPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SharedPrefixPanel(QWidget* parent = nullptr);

  SharedPrefixModel* model() const { return model_; }
  QString totalText() const;
  QString attentionText() const;

 public slots:
  void setSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  // Bytes of K/V per token come from the model; without them only tokens show.
  void setModelInfo(const kvscope::ModelInfo& info);
  // The settings in force: the cascade mode says why a group had no cascade
  // pass (the Cascade cell's tooltip), paging and prefix caching why nothing
  // is shared.
  void setEngineConfig(const kvscope::EngineConfig& config);
  // No engine: an empty table.
  void clear();

 private:
  void showTotals(qint64 tokens_saved, qint64 bytes_saved);
  void showAttention();

  SharedPrefixModel* model_ = nullptr;
  QLabel* total_ = nullptr;
  QLabel* attention_ = nullptr;
  QTableView* view_ = nullptr;
  bool paged_ = true;
  bool prefix_caching_ = true;
  // The latest step that timed its attention: its number and seconds.
  struct TimedStep {
    uint64_t step = 0;
    double attention_s = 0.0;
  };
  std::optional<TimedStep> last_timed_;
};

}  // namespace kvscope::ui
