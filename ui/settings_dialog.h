// SettingsDialog: the application settings in three tabs.
//   Model         the model file (path, Browse…, recently used models);
//   Engine        every user knob of EngineConfig (threads, KV memory as a
//                 budget or an exact block count, block size, lengths and
//                 batch limits, paged / prefix caching, scheduling policy,
//                 preemption mode and swap space);
//   Chat defaults the ConversationSettings new conversations start with
//                 (only when the caller passes them).
// Every edit is checked (EngineConfig::validate(), the model path must exist,
// ConversationSettings::validate()); the message appears next to the offending
// control, a summary names the tab, and OK stays disabled until it is fixed.
// The caller persists the result (engine_settings.h, conversation_settings.h)
// and re-creates the engine only when engineChanged().
//   tested by tests/ui/settings_dialog_test.cpp
#pragma once

#include <optional>

#include <QDialog>
#include <QMap>

#include "engine_settings.h"
#include "kvscope/engine_config.h"
#include "models/conversation_settings.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QRadioButton;
class QSpinBox;
class QTabWidget;

namespace kvscope::ui {

class SamplingEditor;

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  // Engine and model only, no chat-defaults tab.
  explicit SettingsDialog(const kvscope::EngineConfig& config, QWidget* parent = nullptr);
  // All three tabs; recent_models fills the Model tab's list (recentModels()).
  SettingsDialog(const kvscope::EngineConfig& config, const ConversationSettings& chat_defaults,
                 const QStringList& recent_models, QWidget* parent = nullptr);

  // The config given with the dialog's knobs applied (record_snapshots passes
  // through). Values the user did not touch come back exactly as given.
  kvscope::EngineConfig config() const;
  // The chat defaults as edited (those given when there is no chat tab).
  ConversationSettings chatDefaults() const;
  // Whether a user knob of config() differs from the config given: the engine
  // must be re-created to apply it.
  bool engineChanged() const;
  bool chatDefaultsChanged() const;

  bool isValid() const { return problem_.isEmpty(); }
  // The current problem, "Tab: message"; empty when valid.
  QString problem() const { return problem_; }

 private:
  SettingsDialog(const kvscope::EngineConfig& config, const std::optional<ConversationSettings>& chat_defaults,
                 const QStringList& recent_models, QWidget* parent);
  void buildModelTab(const QStringList& recent_models);
  void buildEngineTab();
  QLabel* addRow(QFormLayout* form, EngineField field, const QString& label, QWidget* control,
                 const QString& tooltip);
  void loadConfig(const kvscope::EngineConfig& config);
  void browseModel();
  void revalidate();

  kvscope::EngineConfig given_;
  std::optional<ConversationSettings> chat_given_;  // nullopt: no chat tab
  QString problem_;
  QMap<EngineField, QLabel*> messages_;   // the message label under each knob's control

  QTabWidget* tabs_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
  QLabel* summary_ = nullptr;

  QLineEdit* model_path_ = nullptr;
  QComboBox* recent_models_ = nullptr;

  QSpinBox* threads_ = nullptr;
  QRadioButton* kv_by_budget_ = nullptr;
  QRadioButton* kv_by_blocks_ = nullptr;
  QSpinBox* kv_budget_mib_ = nullptr;
  QSpinBox* num_blocks_ = nullptr;
  QSpinBox* block_size_ = nullptr;
  QSpinBox* max_model_len_ = nullptr;
  QSpinBox* max_seqs_ = nullptr;
  QSpinBox* max_batched_tokens_ = nullptr;
  QCheckBox* paged_ = nullptr;
  QCheckBox* prefix_caching_ = nullptr;
  QComboBox* policy_ = nullptr;
  QComboBox* preemption_ = nullptr;
  QSpinBox* swap_space_mib_ = nullptr;

  SamplingEditor* chat_editor_ = nullptr;
};

}  // namespace kvscope::ui
