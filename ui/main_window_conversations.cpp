// MainWindow's conversations (see main_window.h): the chat's turns mirrored
// into the ChatStore as they change, new / open / delete / export, the reply
// being written saved into its own conversation (by request id, so a reply
// that left the view still lands where it began), and a close that waits for
// that reply's end.
#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QTimer>

#include "chat_widget.h"
#include "conversation_list_widget.h"
#include "conversation_settings_dialog.h"
#include "invariance_panel.h"
#include "main_window.h"
#include "models/chat_store.h"
#include "models/conversation_export.h"

namespace kvscope::ui {
namespace {

// A conversation's title from its first prompt: the first line, shortened.
QString titleFromPrompt(const QString& prompt) {
  QString title = prompt.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
  if (title.size() > 48) title = title.left(47) + QStringLiteral("…");
  return title;
}

}  // namespace

void MainWindow::newConversation() {
  chat_->newChat();
  chat_->setConversationSettings(chat_defaults_);
  invariance_panel_->promptSourceChanged();
  chat_->input()->setFocus(Qt::ShortcutFocusReason);  // typing right after Ctrl+N goes into the new chat
  if (untitled_ && conversation_id_ >= 0) return;  // the empty one already made
  conversation_id_ = -1;
  untitled_ = false;
  if (!store_->is_open()) return;
  const qint64 id = store_->create_conversation(tr("New chat"));
  if (id < 0) return reportStoreError(store_->lastError());
  if (!store_->set_conversation_settings(id, chat_defaults_.toJson())) reportStoreError(store_->lastError());
  conversation_id_ = id;
  untitled_ = true;
  conversations_->refresh(id);
}

void MainWindow::openConversation(qint64 id) {
  if (id == conversation_id_ || !store_->is_open()) return;
  if (chat_->busy()) {
    statusBar()->showMessage(tr("Stop the reply before opening another conversation."), 5000);
    // After the click that chose the other row has been handled: refreshed
    // inside it, the list would select the new row at the clicked place.
    QMetaObject::invokeMethod(
        this, [this] { conversations_->refresh(conversation_id_); }, Qt::QueuedConnection);
    return;
  }
  const std::vector<StoredMessage> messages = store_->messages(id);
  if (!store_->lastError().isEmpty()) return reportStoreError(store_->lastError());
  ChatTurns turns;
  // An empty assistant turn is kept as it is: a reply stopped before its first
  // token, or the placeholder of one that never finished (the app ended).
  for (const StoredMessage& m : messages)
    turns.push_back({m.role.toStdString(), m.content, m.alternatives, m.selected_alternative, m.stats_json});
  const QString settings_json = store_->conversation_settings(id);
  ConversationSettings settings = chat_defaults_;
  if (!settings_json.isEmpty()) {
    QString why;
    if (auto stored = ConversationSettings::fromJson(settings_json, &why)) {
      settings = *stored;
    } else {
      statusBar()->showMessage(tr("This conversation's settings are unreadable (%1); using the defaults.").arg(why),
                               10000);
    }
  }
  chat_->setTurns(turns);
  chat_->setConversationSettings(settings);
  invariance_panel_->promptSourceChanged();
  conversation_id_ = id;
  conversations_->setOpenConversation(id);
  untitled_ = messages.empty() && conversations_->currentTitle() == tr("New chat");
}

qint64 MainWindow::ensureConversation(const QString& first_prompt) {
  if (!store_->is_open()) return -1;
  if (conversation_id_ < 0) {
    conversation_id_ = store_->create_conversation(titleFromPrompt(first_prompt));
    if (conversation_id_ < 0) {
      reportStoreError(store_->lastError());
      return -1;
    }
    if (!store_->set_conversation_settings(conversation_id_, chat_->conversationSettings().toJson()))
      reportStoreError(store_->lastError());
  } else if (untitled_) {
    if (!store_->rename_conversation(conversation_id_, titleFromPrompt(first_prompt)))
      reportStoreError(store_->lastError());
  }
  untitled_ = false;
  return conversation_id_;
}

void MainWindow::onUserTurnAdded(const QString& text) {
  const qint64 id = ensureConversation(text);
  if (id < 0) return;
  if (store_->append_message(id, QStringLiteral("user"), text) < 0) reportStoreError(store_->lastError());
  conversations_->refresh(id);
}

void MainWindow::onTurnsRemoved(int index) {
  if (conversation_id_ < 0 || !store_->is_open()) return;
  if (!store_->truncate_conversation(conversation_id_, index)) reportStoreError(store_->lastError());
}

void MainWindow::onReplyStarted(quint64 request_id) {
  // A placeholder now, completed on finish: the turn order survives a crash.
  if (conversation_id_ < 0 || !store_->is_open()) return;
  const qint64 message = store_->append_message(conversation_id_, QStringLiteral("assistant"), QString());
  if (message < 0) return reportStoreError(store_->lastError());
  reply_places_[request_id] = {conversation_id_, message};
}

bool MainWindow::saveReply(quint64 request_id, const ChatTurn& turn) {
  const auto place = reply_places_.find(request_id);
  if (place == reply_places_.end()) return false;
  const ReplyPlace where = place->second;
  reply_places_.erase(place);
  if (!store_->is_open()) return false;
  if (!store_->update_message(where.conversation, where.message, turn.content, turn.stats_json, turn.alternatives,
                              turn.selected)) {
    reportStoreError(store_->lastError());
    return false;
  }
  return true;
}

void MainWindow::onReplyFinished(quint64 request_id, const ChatTurn& turn) {
  if (saveReply(request_id, turn)) conversations_->refresh(conversation_id_);
  if (closing_ && !chat_->busy()) close();  // the reply that held the window back is saved
}

void MainWindow::closeEvent(QCloseEvent* event) {
  // A reply being written when the window closes is stopped, as Esc stops
  // it, and its end saved (text and figures, "cancelled") before the window
  // goes: the end arrives within an engine step. If it does not within
  // kCloseWaitMs (a long prompt step on a slow machine), what the reply has
  // so far is saved without its figures.
  constexpr int kCloseWaitMs = 3000;
  if (!chat_->busy() || closing_) {
    if (closing_ && chat_->busy()) saveReply(chat_->activeRequest(), chat_->replySoFar());
    if (persist_settings_) saveLayout();
    QMainWindow::closeEvent(event);
    return;
  }
  closing_ = true;
  event->ignore();
  statusBar()->showMessage(tr("Stopping the reply to save it before closing…"));
  chat_->stop();
  QTimer::singleShot(kCloseWaitMs, this, &QWidget::close);
}

void MainWindow::onAlternativeSelected(int message_index, int alternative) {
  if (conversation_id_ < 0 || !store_->is_open()) return;
  const std::vector<StoredMessage> messages = store_->messages(conversation_id_);
  if (message_index < 0 || message_index >= static_cast<int>(messages.size())) return;
  if (!store_->select_alternative(messages[static_cast<size_t>(message_index)].id, alternative))
    reportStoreError(store_->lastError());
}

void MainWindow::showConversationSettings() {
  const QString title = conversation_id_ >= 0 ? conversations_->currentTitle() : tr("New chat");
  // "Reset to defaults" shows the chat defaults as they apply to the loaded model.
  ConversationSettingsDialog dialog(title, chat_->conversationSettings(), chat_->withModelDefaults(chat_defaults_), this);
  if (dialog.exec() != QDialog::Accepted) return;
  chat_->setConversationSettings(dialog.settings());
  if (conversation_id_ >= 0 && store_->is_open() &&
      !store_->set_conversation_settings(conversation_id_, dialog.settings().toJson()))
    reportStoreError(store_->lastError());
}

bool MainWindow::exportConversation(const QString& path) {
  ConversationSummary summary;
  summary.title = tr("Unsaved chat");
  QString settings_json = chat_->conversationSettings().toJson();
  std::vector<StoredMessage> messages;
  if (conversation_id_ >= 0 && store_->is_open()) {
    if (auto c = store_->conversation(conversation_id_)) summary = *c;
    messages = store_->messages(conversation_id_);
  } else {
    // Not saved (no store): export what the chat shows.
    int ordinal = 0;
    for (const ChatTurn& t : chat_->turns()) {
      StoredMessage m;
      m.role = QString::fromStdString(t.role);
      m.content = t.content;
      m.ordinal = ordinal++;
      m.stats_json = t.stats_json;
      m.alternatives = t.alternatives;
      m.selected_alternative = t.selected;
      messages.push_back(m);
    }
  }
  const bool json = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
  const QByteArray bytes = json ? conversationToJson(summary, settings_json, messages)
                                : conversationToMarkdown(summary, settings_json, messages).toUtf8();
  QString error;
  if (!writeExportFile(path, bytes, &error)) {
    showErrorBox(tr("Cannot export the conversation"), error);
    return false;
  }
  statusBar()->showMessage(tr("Exported to %1").arg(path), 5000);
  return true;
}

void MainWindow::showExportDialog() {
  QString filter;
  const QString suggested = exportFileStem(titleFromPrompt(conversations_->currentTitle()));
  const QString path = QFileDialog::getSaveFileName(this, tr("Export conversation"), suggested + QStringLiteral(".md"),
                                                    tr("Markdown (*.md);;JSON (*.json)"), &filter);
  if (path.isEmpty()) return;
  QString target = path;
  if (QFileInfo(target).suffix().isEmpty()) target += filter.contains(QLatin1String("json")) ? QStringLiteral(".json") : QStringLiteral(".md");
  exportConversation(target);
}

void MainWindow::onConversationDeleted(qint64 id) {
  std::erase_if(reply_places_, [id](const auto& entry) { return entry.second.conversation == id; });
  if (id != conversation_id_) return;
  conversation_id_ = -1;
  untitled_ = false;
  chat_->newChat();
  chat_->setConversationSettings(chat_defaults_);
  invariance_panel_->promptSourceChanged();
}

void MainWindow::reportStoreError(const QString& message) {
  statusBar()->showMessage(tr("Conversations are not saved: %1").arg(message), 10000);
}

}  // namespace kvscope::ui
