// ConversationListWidget (see conversation_list_widget.h).
#include "conversation_list_widget.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QShortcut>
#include <QVBoxLayout>

#include "models/chat_store.h"

namespace kvscope::ui {

ConversationListWidget::ConversationListWidget(QWidget* parent) : QWidget(parent) {
  search_ = new QLineEdit(this);
  search_->setAccessibleName(tr("Search conversations"));
  search_->setPlaceholderText(tr("Search conversations (Ctrl+F)"));
  search_->setClearButtonEnabled(true);
  list_ = new QListWidget(this);
  list_->setAccessibleName(tr("Conversations"));
  list_->setSelectionMode(QAbstractItemView::SingleSelection);
  // A long title ends in "…" (the tooltip has it whole) instead of giving the
  // list a horizontal scroll bar.
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setTextElideMode(Qt::ElideRight);
  notice_ = new QLabel(this);
  notice_->setWordWrap(true);
  notice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  notice_->hide();
  new_ = new QPushButton(tr("New"), this);
  new_->setToolTip(tr("New chat (Ctrl+N)"));
  rename_ = new QPushButton(tr("Rename"), this);
  delete_ = new QPushButton(tr("Delete"), this);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(new_);
  buttons->addWidget(rename_);
  buttons->addWidget(delete_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(search_);
  layout->addWidget(list_, 1);
  layout->addWidget(notice_);
  layout->addLayout(buttons);

  auto* find = new QShortcut(QKeySequence::Find, this);
  find->setContext(Qt::WindowShortcut);
  connect(find, &QShortcut::activated, this, [this] {
    search_->setFocus(Qt::ShortcutFocusReason);
    search_->selectAll();
  });
  // The conversation open in the window, not the list's current item: a
  // search that hid it left none current, and clearing the search then left
  // the open one unselected (Rename and Delete greyed out).
  connect(search_, &QLineEdit::textChanged, this, [this] { refresh(open_id_); });
  connect(list_, &QListWidget::currentItemChanged, this,
          [this](QListWidgetItem* item, QListWidgetItem*) { onCurrentItemChanged(item); });
  connect(new_, &QPushButton::clicked, this, &ConversationListWidget::newRequested);
  connect(rename_, &QPushButton::clicked, this, &ConversationListWidget::renameCurrent);
  connect(delete_, &QPushButton::clicked, this, [this] { deleteCurrent(true); });
  updateButtons();
}

void ConversationListWidget::setStore(ChatStore* store) {
  store_ = store;
  const bool usable = store_ && store_->is_open();
  search_->setEnabled(usable);
  list_->setEnabled(usable);
  notice_->setVisible(!usable);
  if (!usable) {
    notice_->setText(tr("Conversations are not saved: %1")
                         .arg(store_ ? store_->lastError() : tr("no conversation store")));
  }
  refresh();
}

qint64 ConversationListWidget::currentConversation() const {
  const QListWidgetItem* item = list_->currentItem();
  return item ? item->data(Qt::UserRole).toLongLong() : -1;
}

QString ConversationListWidget::currentTitle() const {
  const QListWidgetItem* item = list_->currentItem();
  return item ? item->text() : QString();
}

int ConversationListWidget::count() const { return list_->count(); }

void ConversationListWidget::refresh(qint64 select_id) {
  open_id_ = select_id;
  refreshing_ = true;
  list_->clear();
  if (store_ && store_->is_open()) {
    const auto conversations = store_->list_conversations(search_->text().trimmed());
    if (!store_->lastError().isEmpty()) emit storeError(store_->lastError());
    for (const ConversationSummary& c : conversations) {
      auto* item = new QListWidgetItem(c.title.isEmpty() ? tr("(untitled)") : c.title, list_);
      item->setData(Qt::UserRole, c.id);
      item->setToolTip(tr("%1\nupdated %2").arg(c.title, QLocale().toString(c.updated_at.toLocalTime(),
                                                                              QLocale::ShortFormat)));
      if (c.id == select_id) list_->setCurrentItem(item);
    }
  }
  refreshing_ = false;
  updateButtons();
}

void ConversationListWidget::onCurrentItemChanged(QListWidgetItem* item) {
  updateButtons();
  if (refreshing_ || !item) return;
  emit conversationSelected(item->data(Qt::UserRole).toLongLong());
}

void ConversationListWidget::renameCurrent() {
  const qint64 id = currentConversation();
  if (id < 0 || !store_) return;
  QInputDialog dialog(this);
  dialog.setWindowTitle(tr("Rename conversation"));
  dialog.setLabelText(tr("Title:"));
  dialog.setTextValue(list_->currentItem()->text());
  // Room for a title of a few words: the dialog's own size showed about 25
  // characters, a prompt's first line cut in the middle.
  dialog.resize(std::max(dialog.sizeHint().width(), fontMetrics().averageCharWidth() * 60), dialog.sizeHint().height());
  if (dialog.exec() != QDialog::Accepted) return;
  const QString title = dialog.textValue().trimmed();
  if (title.isEmpty()) return;
  if (!store_->rename_conversation(id, title)) emit storeError(store_->lastError());
  refresh(id);
}

void ConversationListWidget::deleteCurrent(bool confirm) {
  const qint64 id = currentConversation();
  if (id < 0 || !store_) return;
  if (confirm) {
    // Plain text: a title is the user's words, never markup ("<b>x</b>"
    // showed as a bold x).
    QMessageBox box(QMessageBox::Question, tr("Delete conversation"),
                    tr("Delete “%1” and all its messages?").arg(list_->currentItem()->text()),
                    QMessageBox::Yes | QMessageBox::Cancel, this);
    box.setTextFormat(Qt::PlainText);
    box.setDefaultButton(QMessageBox::Cancel);
    if (box.exec() != QMessageBox::Yes) return;
  }
  if (!store_->delete_conversation(id)) {
    emit storeError(store_->lastError());
    return;
  }
  refresh();
  emit conversationDeleted(id);
}

void ConversationListWidget::updateButtons() {
  const bool usable = store_ && store_->is_open();
  const bool selected = usable && list_->currentItem() != nullptr;
  new_->setEnabled(true);  // a new chat works without the store too
  rename_->setEnabled(selected);
  delete_->setEnabled(selected);
}

}  // namespace kvscope::ui
