// ConversationSettingsDialog: the settings of one conversation (system prompt,
// sampling, parallel replies) in a SamplingEditor. "Reset to defaults" loads
// the chat defaults given to the constructor; OK is disabled while a value is
// invalid, so settings() is always valid after exec() returns Accepted.
//   tested by tests/ui/settings_dialog_test.cpp
#pragma once

#include <QDialog>

#include "models/conversation_settings.h"

class QDialogButtonBox;

namespace kvscope::ui {

class SamplingEditor;

class ConversationSettingsDialog : public QDialog {
  Q_OBJECT
 public:
  ConversationSettingsDialog(const QString& conversation_title, const ConversationSettings& settings,
                             const ConversationSettings& defaults, QWidget* parent = nullptr);

  ConversationSettings settings() const;
  SamplingEditor* editor() const { return editor_; }

 private:
  ConversationSettings defaults_;
  SamplingEditor* editor_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace kvscope::ui
