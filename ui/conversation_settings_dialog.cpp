// ConversationSettingsDialog (see conversation_settings_dialog.h).
#include "conversation_settings_dialog.h"

#include <QDialogButtonBox>
#include <QPushButton>
#include <QVBoxLayout>

#include "sampling_editor.h"

namespace kvscope::ui {

ConversationSettingsDialog::ConversationSettingsDialog(const QString& conversation_title,
                                                       const ConversationSettings& settings,
                                                       const ConversationSettings& defaults, QWidget* parent)
    : QDialog(parent), defaults_(defaults) {
  setWindowTitle(conversation_title.isEmpty() ? tr("Conversation settings")
                                              : tr("Settings of “%1”").arg(conversation_title));
  editor_ = new SamplingEditor(this);
  editor_->setSettings(settings);

  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  QPushButton* reset = buttons_->addButton(tr("Reset to defaults"), QDialogButtonBox::ResetRole);
  reset->setObjectName(QStringLiteral("reset_to_defaults"));
  reset->setAccessibleName(tr("Reset to defaults"));
  reset->setToolTip(tr("Put the chat defaults from the application settings into this form"));
  QPushButton* ok = buttons_->button(QDialogButtonBox::Ok);
  ok->setEnabled(editor_->isValid());
  connect(editor_, &SamplingEditor::validityChanged, ok, &QPushButton::setEnabled);
  connect(reset, &QPushButton::clicked, this, [this] { editor_->setSettings(defaults_); });
  connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
    if (editor_->isValid()) accept();  // Enter in a field must not get past a disabled OK
  });
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(editor_);
  layout->addWidget(buttons_);
}

ConversationSettings ConversationSettingsDialog::settings() const { return editor_->settings(); }

}  // namespace kvscope::ui
