// SamplingEditor: a form editing one ConversationSettings (system prompt, the
// sampling parameters, parallel replies). Used by the chat-defaults page of
// SettingsDialog and by ConversationSettingsDialog.
//
// Every edit is checked at once with ConversationSettings::validate(); the
// message appears right under the offending control and validityChanged()
// tells the dialog to disable OK. Values the user did not touch come back
// exactly as given (spin boxes round to their decimals otherwise).
//   tested by tests/ui/settings_dialog_test.cpp
#pragma once

#include <QHash>
#include <QWidget>

#include "models/conversation_settings.h"

class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace kvscope::ui {

class SamplingEditor : public QWidget {
  Q_OBJECT
 public:
  explicit SamplingEditor(QWidget* parent = nullptr);

  void setSettings(const ConversationSettings& settings);
  // The edited settings; check isValid() first (an unparsable seed reads as
  // the one last set).
  ConversationSettings settings() const;
  bool isValid() const { return problem_.isEmpty(); }
  // The message shown next to the offending field; empty when valid.
  QString problem() const { return problem_; }

  // Stop strings as the editor shows them: one per line, where a backslash
  // followed by n, t or another backslash stands for a newline, a tab or one
  // backslash. Blank lines are skipped.
  static QString stopStringsToText(const std::vector<std::string>& stop);
  static std::vector<std::string> stopStringsFromText(const QString& text);

 signals:
  void validityChanged(bool valid);
  // Any edit, valid or not.
  void edited();

 private:
  void revalidate();
  QLabel* addField(const QString& field, const QString& label, QWidget* control, const QString& tooltip);
  float spinValue(const QDoubleSpinBox* box, float given) const;

  ConversationSettings given_;  // what setSettings() passed; fields not shown pass through
  QString problem_;
  QHash<QString, QLabel*> messages_;  // field name -> the message label under its control
  QHash<const QDoubleSpinBox*, double> shown_;  // what each box showed after setSettings()
  QFormLayout* form_ = nullptr;

  QPlainTextEdit* system_prompt_ = nullptr;
  QDoubleSpinBox* temperature_ = nullptr;
  QSpinBox* top_k_ = nullptr;
  QDoubleSpinBox* top_p_ = nullptr;
  QDoubleSpinBox* min_p_ = nullptr;
  QDoubleSpinBox* repetition_penalty_ = nullptr;
  QSpinBox* repeat_last_n_ = nullptr;
  QDoubleSpinBox* presence_penalty_ = nullptr;
  QDoubleSpinBox* frequency_penalty_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QLineEdit* seed_ = nullptr;
  QPlainTextEdit* stop_ = nullptr;
  QSpinBox* n_ = nullptr;
};

}  // namespace kvscope::ui
