// ChatWidget (see chat_widget.h).
#include "chat_widget.h"

#include <QKeyEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace kvscope::ui {

ChatWidget::ChatWidget(QWidget* parent) : QWidget(parent) {
  sampling_.temperature = 0.7f;
  sampling_.max_tokens = 512;

  view_ = new QTextBrowser(this);
  view_->setOpenExternalLinks(true);
  view_->setPlaceholderText(tr("Ask the model something. Ctrl+Enter sends, Esc stops."));
  input_ = new QPlainTextEdit(this);
  input_->setPlaceholderText(tr("Message (Ctrl+Enter to send)"));
  input_->setMaximumHeight(96);
  input_->installEventFilter(this);
  send_ = new QPushButton(tr("Send"), this);
  send_->setToolTip(tr("Send (Ctrl+Enter)"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setToolTip(tr("Stop the reply (Esc)"));
  status_ = new QLabel(tr("No model loaded"), this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* buttons = new QVBoxLayout;
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addStretch();
  auto* input_row = new QHBoxLayout;
  input_row->addWidget(input_, 1);
  input_row->addLayout(buttons);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(view_, 1);
  layout->addLayout(input_row);
  layout->addWidget(status_);

  connect(send_, &QPushButton::clicked, this, &ChatWidget::sendFromInput);
  connect(stop_, &QPushButton::clicked, this, &ChatWidget::stop);
  auto* esc = new QShortcut(QKeySequence(Qt::Key_Escape), this, this, &ChatWidget::stop);
  esc->setContext(Qt::WidgetWithChildrenShortcut);
  updateButtons();
}

QString ChatWidget::statusText() const { return status_->text(); }
void ChatWidget::setStatus(const QString& text) { status_->setText(text); }

bool ChatWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched == input_ && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && (key->modifiers() & Qt::ControlModifier)) {
      sendFromInput();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void ChatWidget::sendFromInput() {
  const QString text = input_->toPlainText().trimmed();
  if (text.isEmpty() || busy() || !model_ready_) return;
  input_->clear();
  sendPrompt(text);
}

void ChatWidget::sendPrompt(const QString& text) {
  if (busy() || text.trimmed().isEmpty()) return;
  history_.push_back({"user", text.toStdString()});
  reply_.clear();
  awaiting_start_ = true;
  first_token_count_ = -1;
  setStatus(tr("processing prompt…"));
  render();
  updateButtons();
  emit sendRequested(history_, sampling_);
}

void ChatWidget::stop() {
  if (active_id_ != 0) emit stopRequested(active_id_);
}

void ChatWidget::newChat() {
  stop();
  history_.clear();
  reply_.clear();
  render();
  if (model_ready_) setStatus(tr("New chat"));
}

void ChatWidget::setHistory(const ChatHistory& history) {
  stop();
  history_ = history;
  reply_.clear();
  render();
  updateButtons();
}

void ChatWidget::onModelLoading(const QString& path) {
  model_ready_ = false;
  setStatus(tr("loading model %1…").arg(path));
  updateButtons();
}

void ChatWidget::onModelLoaded(const kvscope::ModelInfo& info) {
  model_ready_ = true;
  awaiting_start_ = false;
  active_id_ = 0;
  context_length_ = info.context_length;
  setStatus(tr("%1 loaded · %2 KV blocks of %3 tokens · context %4")
                .arg(QString::fromStdString(info.name))
                .arg(info.num_kv_blocks)
                .arg(info.block_size)
                .arg(info.context_length));
  updateButtons();
  input_->setFocus();
}

void ChatWidget::onRequestStarted(quint64 request_id, bool is_chat) {
  if (!is_chat || !awaiting_start_) return;
  awaiting_start_ = false;
  active_id_ = request_id;
  updateButtons();
  emit replyStarted();
}

void ChatWidget::onTokens(quint64 request_id, const QString& text) {
  if (request_id != active_id_ || active_id_ == 0) return;
  if (reply_.isEmpty()) setStatus(tr("generating…"));
  reply_ += text;
  render();
}

void ChatWidget::onFinished(quint64 request_id, const kvscope::ui::FinishInfo& info) {
  if (request_id != active_id_ || active_id_ == 0) return;
  history_.push_back({"assistant", reply_.toStdString()});
  const QString content = reply_;
  reply_.clear();
  active_id_ = 0;
  const RequestStats& st = info.stats;
  const int used = st.num_prompt_tokens + st.num_generated_tokens;
  QString status = tr("%1 · %2 tokens · %3 tok/s · first token %4 s · context %5 / %6")
                       .arg(QString::fromLatin1(finish_reason_name(info.reason)))
                       .arg(st.num_generated_tokens)
                       .arg(st.decode_tokens_per_s, 0, 'f', 1)
                       .arg(st.time_to_first_token_s, 0, 'f', 2)
                       .arg(used)
                       .arg(context_length_);
  if (st.num_cached_prompt_tokens > 0) status += tr(" · %1 prompt tokens from cache").arg(st.num_cached_prompt_tokens);
  if (info.reason == FinishReason::Error) status = tr("error: %1").arg(QString::fromStdString(info.error));
  setStatus(status);
  render();
  updateButtons();
  emit replyFinished(content);
}

void ChatWidget::onSnapshot(const kvscope::ui::SnapshotPtr& snapshot) {
  if (!snapshot || active_id_ == 0) return;
  for (const SequenceSnapshot& seq : snapshot->sequences) {
    if (seq.id != active_id_ || seq.index != 0) continue;
    const int total = static_cast<int>(seq.tokens.size());
    const int generated = total - seq.num_prompt_tokens;
    if (generated <= 0) {
      setStatus(tr("processing prompt · %1 / %2 tokens").arg(seq.num_computed_tokens).arg(seq.num_prompt_tokens));
      return;
    }
    if (first_token_count_ < 0) {
      first_token_count_ = generated;
      since_first_token_.start();
    }
    const double secs = since_first_token_.elapsed() / 1000.0;
    const double rate = secs > 0.2 ? (generated - first_token_count_) / secs : 0.0;
    setStatus(tr("generating · %1 tokens · %2 tok/s · context %3 / %4")
                  .arg(generated)
                  .arg(rate, 0, 'f', 1)
                  .arg(total)
                  .arg(context_length_));
    return;
  }
}

void ChatWidget::onError(const QString& message) {
  if (awaiting_start_) {
    // The request never started: take the user's turn back into the input box.
    awaiting_start_ = false;
    if (!history_.empty() && history_.back().role == "user") {
      input_->setPlainText(QString::fromStdString(history_.back().content));
      history_.pop_back();
    }
    render();
  }
  setStatus(tr("error: %1").arg(message));
  updateButtons();
}

void ChatWidget::render() {
  QScrollBar* bar = view_->verticalScrollBar();
  const bool at_bottom = bar->value() >= bar->maximum() - 4;
  QString md;
  auto add = [&md](const QString& who, const QString& text) {
    if (!md.isEmpty()) md += QStringLiteral("\n\n---\n\n");
    md += QStringLiteral("**%1**\n\n%2").arg(who, text);
  };
  for (const ChatMessage& m : history_) {
    add(m.role == "user" ? tr("You") : m.role == "assistant" ? tr("Assistant") : QString::fromStdString(m.role),
        QString::fromStdString(m.content));
  }
  if (busy()) add(tr("Assistant"), reply_.isEmpty() ? tr("*…*") : reply_);
  view_->document()->setMarkdown(md);
  if (at_bottom) bar->setValue(bar->maximum());
}

void ChatWidget::updateButtons() {
  send_->setEnabled(model_ready_ && !busy());
  stop_->setEnabled(active_id_ != 0);
}

}  // namespace kvscope::ui
