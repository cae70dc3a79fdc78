// SettingsDialog: the main engine knobs (threads, block size, KV budget,
// paged on/off, prefix caching, max sequences). The main window persists the
// result (engine_settings.h) and re-creates the engine with it.
#pragma once

#include <QDialog>

#include "kvscope/engine_config.h"

class QCheckBox;
class QSpinBox;

namespace kvscope::ui {

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit SettingsDialog(const kvscope::EngineConfig& config, QWidget* parent = nullptr);
  // `base` with the dialog's knobs applied.
  kvscope::EngineConfig config() const;

 private:
  kvscope::EngineConfig base_;
  QSpinBox* threads_ = nullptr;
  QSpinBox* block_size_ = nullptr;
  QSpinBox* kv_budget_mib_ = nullptr;
  QSpinBox* max_seqs_ = nullptr;
  QCheckBox* paged_ = nullptr;
  QCheckBox* prefix_caching_ = nullptr;
};

}  // namespace kvscope::ui
