// SettingsDialog: the application settings in three tabs.
//   Model         the model file (path, Browse…, recently used models);
//   Engine        every other row of the engine's setting table
//                 (kvscope/setting_table.h), one control per row, grouped by
//                 the row's group, with its label, unit, range and help;
//   Chat defaults the ConversationSettings new conversations start with
//                 (only when the caller passes them).
// The controls are generated from the table: a control's object name is the
// setting's key ("block_size"), its message label's is key + "_message". A
// control whose setting does not apply under the other values (swap space
// without preemption by swap) is disabled. Every edit is checked
// (EngineConfig::validate(), the model path must exist,
// ConversationSettings::validate()); each problem appears next to its
// setting's control, a summary names the first, and OK stays disabled until
// all are fixed. The caller persists the result (engine_settings.h,
// conversation_settings.h) and re-creates or reconfigures the engine only when
// engineChanged().
//   tested by tests/ui/settings_dialog_test.cpp
#pragma once

#include <optional>

#include <QDialog>
#include <QMap>

#include "engine_settings.h"
#include "kvscope/engine_config.h"
#include "kvscope/kv_plan.h"
#include "models/conversation_settings.h"

class QComboBox;
class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QTabWidget;

namespace kvscope::ui {

class SamplingEditor;

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  // The size it opens at where the screen has room (window_fit.h bounds it).
  static constexpr QSize kOpeningSize{760, 780};

  // Engine and model only, no chat-defaults tab.
  explicit SettingsDialog(const kvscope::EngineConfig& config, QWidget* parent = nullptr);
  // All three tabs; recent_models fills the Model tab's list (recentModels()).
  SettingsDialog(const kvscope::EngineConfig& config, const ConversationSettings& chat_defaults,
                 const QStringList& recent_models, QWidget* parent = nullptr);

  // The config given with the dialog's values applied (record_snapshots
  // passes through). Values the user did not touch come back exactly as given
  // (a budget of 1.5 MiB survives a dialog that shows whole MiB).
  kvscope::EngineConfig config() const;
  // The chat defaults as edited (those given when there is no chat tab).
  ConversationSettings chatDefaults() const;
  // Whether a setting of config() differs from the config given.
  bool engineChanged() const;
  bool chatDefaultsChanged() const;

  // The loaded model's shape: while the model path is that model's, every
  // edit is also checked by the engine's memory plan (plan_kv), so "the KV
  // budget holds no block" or "does not fit in this machine's memory" shows
  // next to its setting before OK, not as a load error after it.
  void setModelShape(const QString& model_path, const kvscope::ModelShape& shape);

  bool isValid() const { return problem_.isEmpty(); }
  // The first problem, "Tab: message"; empty when valid.
  QString problem() const { return problem_; }

 private:
  SettingsDialog(const kvscope::EngineConfig& config, const std::optional<ConversationSettings>& chat_defaults,
                 const QStringList& recent_models, QWidget* parent);
  void buildModelTab(const QStringList& recent_models);
  void buildEngineTab();
  // The control for one setting row (and its message label), added to `form`.
  void addSettingRow(QFormLayout* form, const kvscope::SettingSpec& spec);
  QLabel* addMessageLabel(QFormLayout* form, QWidget* control, const QString& key, const QString& name);
  // Reads / writes one row's control.
  kvscope::SettingValue controlValue(const kvscope::SettingSpec& spec) const;
  void setControlValue(const kvscope::SettingSpec& spec, const kvscope::SettingValue& value);
  void loadConfig(const kvscope::EngineConfig& config);
  void browseModel();
  // A file dialog titled `title` for `path`, starting at its folder.
  void browseFile(QLineEdit* path, const QString& title);
  void revalidate();

  kvscope::EngineConfig given_;
  QString shape_model_path_;  // the model `shape_` describes; empty: none
  kvscope::ModelShape shape_;
  std::optional<ConversationSettings> chat_given_;  // nullopt: no chat tab
  QString problem_;
  bool loading_ = true;              // no revalidate() while controls are built and filled
  QMap<QString, QWidget*> controls_;  // setting key -> its control
  QMap<QString, QPushButton*> browse_buttons_;  // path setting key -> its Browse… button
  QMap<QString, QLabel*> messages_;   // setting key -> the message label under its control

  QTabWidget* tabs_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
  QLabel* summary_ = nullptr;
  QComboBox* recent_models_ = nullptr;
  SamplingEditor* chat_editor_ = nullptr;
};

}  // namespace kvscope::ui
