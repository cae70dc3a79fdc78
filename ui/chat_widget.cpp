// ChatWidget (see chat_widget.h): its controls, the turns and their actions,
// rendering. The request's lifecycle is chat_widget_reply.cpp, the reply
// being written chat_widget_stream.cpp.
//
// Every change to the turns happens when the engine has taken the request
// (onRequestStarted): a prompt that cannot start (bad settings, no room in
// the KV pool) goes back into the input box and nothing — neither the turns
// shown nor the saved conversation — has changed.
#include "chat_widget.h"

#include <algorithm>

#include <QClipboard>
#include <QDesktopServices>
#include <QGuiApplication>
#include <QKeyEvent>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include "live_label.h"
#include "models/draft_spans.h"
#include "models/markdown_code_blocks.h"
#include "models/message_stats.h"
#include "models/user_message_markdown.h"
#include "models/sampling_sources.h"
#include "palette_colors.h"

namespace kvscope::ui {
namespace {

constexpr int kRenderIntervalMs = 40;  // streaming re-renders at most 25 times a second

QString link(const QString& text, const QString& target) {
  return QStringLiteral("[%1](kvscope:%2)").arg(text, target);
}

QString roleTitle(const std::string& role) {
  if (role == "user") return ChatWidget::tr("You");
  if (role == "assistant") return ChatWidget::tr("Assistant");
  return QString::fromStdString(role);
}

// Said while the reply is still being written, from the first shift on: the
// model no longer sees all of the conversation (docs/context-overflow.md).
QString droppedNotice(int num_dropped_tokens) {
  if (num_dropped_tokens <= 0) return {};
  return ChatWidget::tr(" · context full: %n token(s) dropped from the middle", "", num_dropped_tokens);
}

}  // namespace

ChatWidget::ChatWidget(QWidget* parent) : QWidget(parent) {
  header_ = new QLabel(this);
  header_->setWordWrap(true);
  header_->setTextFormat(Qt::RichText);
  header_->setAccessibleName(tr("Conversation settings"));
  connect(header_, &QLabel::linkActivated, this, [this] { emit settingsRequested(); });

  view_ = new QTextBrowser(this);
  view_->setOpenLinks(false);  // kvscope: links are actions; web links go to the browser
  view_->setAccessibleName(tr("Conversation"));
  view_->setPlaceholderText(tr("Ask the model something. Ctrl+Enter sends, Esc stops."));
  connect(view_, &QTextBrowser::anchorClicked, this, &ChatWidget::onLinkClicked);
  QScrollBar* bar = view_->verticalScrollBar();
  connect(bar, &QScrollBar::valueChanged, this, [this, bar](int value) {
    if (moving_view_) return;
    follow_reply_ = value >= bar->maximum() - 4;
    view_value_ = value;
  });
  connect(bar, &QScrollBar::rangeChanged, this, [this] { restoreViewPlace(); });

  edit_banner_ = new QLabel(this);
  edit_banner_->setWordWrap(true);
  edit_banner_->hide();
  input_ = new QPlainTextEdit(this);
  input_->setPlaceholderText(tr("Message (Ctrl+Enter to send)"));
  input_->setAccessibleName(tr("Message"));
  input_->setMaximumHeight(96);
  // Tab moves on to Send, as in any form; a tab character is rarely wanted in a chat message.
  input_->setTabChangesFocus(true);
  input_->installEventFilter(this);
  send_ = new QPushButton(tr("Send"), this);
  send_->setToolTip(tr("Send (Ctrl+Enter)"));
  send_->setAccessibleName(tr("Send"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setToolTip(tr("Stop the reply (Esc)"));
  stop_->setAccessibleName(tr("Stop"));
  status_ = new LiveLabel(this);
  status_->setWordWrap(true);
  status_->setText(tr("No model loaded"));

  auto* buttons = new QVBoxLayout;
  buttons->addWidget(send_);
  buttons->addWidget(stop_);
  buttons->addStretch();
  auto* input_row = new QHBoxLayout;
  input_row->addWidget(input_, 1);
  input_row->addLayout(buttons);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(header_);
  layout->addWidget(view_, 1);
  layout->addWidget(edit_banner_);
  layout->addLayout(input_row);
  layout->addWidget(status_);

  render_timer_ = new QTimer(this);
  render_timer_->setSingleShot(true);
  render_timer_->setInterval(kRenderIntervalMs);
  connect(render_timer_, &QTimer::timeout, this, &ChatWidget::renderStream);

  connect(send_, &QPushButton::clicked, this, &ChatWidget::sendFromInput);
  connect(stop_, &QPushButton::clicked, this, &ChatWidget::stop);
  auto* esc = new QShortcut(QKeySequence(Qt::Key_Escape), this, this, [this] {
    if (editing_index_ >= 0 && !busy()) return cancelEdit();
    stop();
  });
  esc->setContext(Qt::WidgetWithChildrenShortcut);
  updateHeader();
  updateButtons();
}

ChatHistory ChatWidget::engineHistory() const {
  ChatHistory history;
  if (!settings_.system_prompt.trimmed().isEmpty()) history.push_back({"system", settings_.system_prompt.toStdString()});
  for (const ChatTurn& t : turns_) history.push_back({t.role, t.content.toStdString()});
  return history;
}

ChatHistory ChatWidget::lastPromptAsSent() const {
  // The sent request still describes the conversation when its user turns
  // are the conversation's up to the last one (not so after an edit that
  // was not sent, or in a conversation opened since).
  std::vector<std::string> asked;
  for (const ChatTurn& t : turns_) {
    if (t.role == "user") asked.push_back(t.content.toStdString());
  }
  std::vector<std::string> sent;
  for (const ChatMessage& m : sent_history_) {
    if (m.role == "user") sent.push_back(m.content);
  }
  if (!sent_history_.empty() && sent_history_.back().role == "user" && sent == asked) return sent_history_;
  ChatHistory history = engineHistory();
  while (!history.empty() && history.back().role != "user") history.pop_back();  // its reply, if there is one
  return history;
}

QString ChatWidget::statusText() const { return status_->text(); }
void ChatWidget::setStatus(const QString& text) { status_->setText(text); }

void ChatWidget::setConversationSettings(const ConversationSettings& settings) {
  settings_ = withModelDefaults(settings);
  updateHeader();
}

ConversationSettings ChatWidget::withModelDefaults(const ConversationSettings& settings) const {
  return settings.withDefaults(sampling_defaults_.params);
}

QString ChatWidget::headerText() const { return header_->text(); }

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
  if (busy() || !model_ready_ || text.trimmed().isEmpty()) return;
  const int keep = editing_index_ >= 0 ? editing_index_ : static_cast<int>(turns_.size());
  pending_ = PendingReply{};
  pending_.keep = keep;
  pending_.user_text = text;
  ChatHistory history = engineHistory();
  history.resize(history.size() - (turns_.size() - static_cast<size_t>(keep)));
  history.push_back({"user", text.toStdString()});
  startReply(history);
}

void ChatWidget::regenerate() {
  if (busy() || !model_ready_ || turns_.empty() || turns_.back().role != "assistant") return;
  cancelEdit();
  pending_ = PendingReply{};
  pending_.keep = static_cast<int>(turns_.size()) - 1;
  ChatHistory history = engineHistory();
  history.pop_back();
  startReply(history);
}

void ChatWidget::restoreViewPlace() {
  QScrollBar* bar = view_->verticalScrollBar();
  moving_view_ = true;
  bar->setValue(follow_reply_ ? bar->maximum() : view_value_);
  moving_view_ = false;
}

void ChatWidget::newChat() {
  detachReply();
  cancelEdit();
  turns_.clear();
  sent_history_.clear();
  follow_reply_ = true;
  render();
  if (model_ready_) setStatus(tr("New chat"));
}

void ChatWidget::setTurns(const ChatTurns& turns) {
  detachReply();
  cancelEdit();
  turns_ = turns;
  sent_history_.clear();  // sent for another conversation
  follow_reply_ = true;  // a conversation opens at its latest turns
  render();
  updateButtons();
  // The status described the chat shown before ("New chat", its last reply,
  // an error): describe this one's last reply instead, as after it finished.
  if (!model_ready_) return;
  QString status = tr("New chat");
  for (auto t = turns_.rbegin(); t != turns_.rend(); ++t) {
    if (t->role != "assistant") continue;
    const std::vector<MessageStats> stats = messageStatsFromJson(t->stats_json);
    const size_t shown = static_cast<size_t>(std::max(t->selected, 0));
    status = shown < stats.size() ? messageStatsLine(stats[shown]) : tr("%n message(s)", "", static_cast<int>(turns_.size()));
    break;
  }
  setStatus(status);
}

void ChatWidget::editMessage(int index) {
  if (busy() || index < 0 || index >= static_cast<int>(turns_.size()) || turns_[index].role != "user") return;
  editing_index_ = index;
  input_->setPlainText(turns_[index].content);
  input_->setFocus();
  const int dropped = static_cast<int>(turns_.size()) - index - 1;
  edit_banner_->setText(tr("Editing message %1. Ctrl+Enter sends it again (the %2 later message(s) are replaced; "
                           "the prompt before it comes from the prefix cache). Esc cancels.")
                            .arg(index + 1)
                            .arg(dropped));
  edit_banner_->show();
  render();
}

void ChatWidget::cancelEdit() {
  if (editing_index_ < 0) return;
  editing_index_ = -1;
  edit_banner_->hide();
  input_->clear();
  render();
}

void ChatWidget::selectAlternative(int message_index, int alternative) {
  // Only the last reply: later turns were written after an earlier one's choice.
  if (message_index < 0 || message_index + 1 != static_cast<int>(turns_.size())) return;
  ChatTurn& turn = turns_[message_index];
  if (alternative < 0 || alternative >= turn.alternatives.size() || alternative == turn.selected) return;
  turn.selected = alternative;
  turn.content = turn.alternatives[alternative];
  render();
  emit alternativeSelected(message_index, alternative);
}

void ChatWidget::onModelLoading(const QString& name) {
  model_ready_ = false;
  model_name_ = name;
  setStatus(tr("loading model %1…").arg(name));
  updateButtons();
}

void ChatWidget::onLoadProgress(double fraction, const QString& stage) {
  if (model_ready_) return;
  setStatus(tr("loading model %1 %2% · %3").arg(model_name_).arg(qRound(100.0 * fraction)).arg(stage));
}

void ChatWidget::setMaxContext(const kvscope::ModelInfo& info) {
  max_context_ = info.max_model_len > 0 ? info.max_model_len : info.context_length;
}

void ChatWidget::onModelLoaded(const kvscope::ModelInfo& info) {
  model_ready_ = true;
  if (awaiting_start_ && !pending_.user_text.isEmpty() && input_->toPlainText().isEmpty())
    input_->setPlainText(pending_.user_text);  // the old engine never took it
  awaiting_start_ = false;
  active_id_ = 0;
  setMaxContext(info);
  // A reply being written keeps what it was sent with; the next one follows
  // the new model's recommendation in every field the user has not chosen.
  sampling_defaults_ = kvscope::resolve_sampling_defaults(info.recommended_sampling);
  settings_ = withModelDefaults(settings_);
  updateHeader();
  setStatus(tr("%1 loaded · %2").arg(QString::fromStdString(info.name), engineSummary(info)));
  render();
  updateButtons();
  input_->setFocus();
}

QString ChatWidget::engineSummary(const kvscope::ModelInfo& info) const {
  // A context shorter than the model's: the pool (or the user's setting) caps it; say which number is which.
  const QString context = max_context_ < info.context_length
                              ? tr("%1 (the model's: %2)").arg(QLocale().toString(max_context_),
                                                               QLocale().toString(info.context_length))
                              : QLocale().toString(max_context_);
  return tr("%1 KV blocks of %2 tokens · context %3 · %4")
      .arg(QLocale().toString(info.num_kv_blocks))
      .arg(info.block_size)
      .arg(context)
      .arg(QString::fromStdString(info.backend_reason));
}

void ChatWidget::onReconfigured(const kvscope::ModelInfo& info) {
  setMaxContext(info);
  if (!busy()) setStatus(tr("Settings applied · %1").arg(engineSummary(info)));
}

void ChatWidget::onModelKept(const kvscope::ModelInfo& info) {
  model_ready_ = true;
  setStatus(tr("%1 is still loaded").arg(QString::fromStdString(info.name)));
  updateButtons();
}

void ChatWidget::onSnapshot(const kvscope::ui::SnapshotPtr& snapshot) {
  if (!snapshot || active_id_ == 0) return;
  // Parallel replies: the one shown may end before the others. The line
  // then says so (it kept its last "generating" figures while they ran on).
  const auto shown = static_cast<size_t>(pending_.shown);
  if (shown < pending_.finishes.size() && pending_.finishes[shown].reason != FinishReason::None &&
      pending_.remaining > 0) {
    setStatus(pending_.remaining == 1
                  ? tr("reply %1 is done · 1 other reply is still generating").arg(pending_.shown + 1)
                  : tr("reply %1 is done · %2 other replies are still generating")
                        .arg(pending_.shown + 1)
                        .arg(pending_.remaining));
    return;
  }
  for (const SequenceSnapshot& seq : snapshot->sequences) {
    if (seq.id != active_id_ || seq.index != pending_.shown) continue;
    const QLocale locale;
    const int total = static_cast<int>(seq.tokens.size());
    const int generated = total + seq.num_dropped_tokens - seq.num_prompt_tokens;  // shifts dropped some
    if (generated <= 0) {
      QString text = tr("processing prompt %1 / %2 tokens")
                         .arg(locale.toString(seq.num_computed_tokens), locale.toString(seq.num_prompt_tokens));
      if (seq.num_cached_tokens > 0) text += tr(" (%1 from the prefix cache)").arg(locale.toString(seq.num_cached_tokens));
      setStatus(text + droppedNotice(seq.num_dropped_tokens));
      return;
    }
    if (first_token_count_ < 0) {
      first_token_count_ = generated;
      since_first_token_.start();
    }
    const double secs = since_first_token_.elapsed() / 1000.0;
    const double rate = secs > 0.2 ? (generated - first_token_count_) / secs : 0.0;
    QString text = tr("generating · %1 tokens · %2 tok/s · context %3 / %4")
                       .arg(locale.toString(generated))
                       .arg(rate, 0, 'f', 1)
                       .arg(locale.toString(total), locale.toString(max_context_));
    if (seq.num_cached_tokens > 0) text += tr(" · %1 prompt tokens from cache").arg(locale.toString(seq.num_cached_tokens));
    if (seq.num_draft_tokens > 0) {
      text += tr(" · drafts accepted %1 / %2")
                  .arg(locale.toString(seq.num_accepted_tokens), locale.toString(seq.num_draft_tokens));
    }
    if (seq.spec_paused) text += tr(" · speculation paused: drafts were not paying");
    setStatus(text + droppedNotice(seq.num_dropped_tokens));
    return;
  }
}

void ChatWidget::onError(const QString& message) {
  if (awaiting_start_) {
    // The request never started: nothing changed; the prompt goes back to the input box.
    awaiting_start_ = false;
    if (!pending_.user_text.isEmpty() && input_->toPlainText().isEmpty()) input_->setPlainText(pending_.user_text);
    render();
  }
  setStatus(tr("error: %1").arg(message));
  updateButtons();
}

void ChatWidget::onLinkClicked(const QUrl& url) {
  if (url.scheme() != QLatin1String("kvscope")) {
    QDesktopServices::openUrl(url);
    return;
  }
  const QStringList parts = url.path().split(QLatin1Char('/'));
  const QString action = parts.value(0);
  const int message = parts.value(1).toInt();
  const bool valid_message = message >= 0 && message < static_cast<int>(turns_.size());
  if (action == QLatin1String("edit")) {
    editMessage(message);
  } else if (action == QLatin1String("regenerate")) {
    regenerate();
  } else if (action == QLatin1String("alt") && valid_message) {
    selectAlternative(message, parts.value(2).toInt());
  } else if (action == QLatin1String("show")) {
    // Which of the replies being written is shown (before they are a turn).
    pending_.shown = std::clamp(message, 0, static_cast<int>(pending_.texts.size()) - 1);
    render();
  } else if (action == QLatin1String("copy") && valid_message) {
    QGuiApplication::clipboard()->setText(turns_[message].content);
    setStatus(tr("Copied message %1.").arg(message + 1));
  } else if (action == QLatin1String("code") && valid_message) {
    const std::vector<CodeBlock> blocks = fencedCodeBlocks(turns_[message].content);
    const size_t k = parts.value(2).toUInt();
    if (k < blocks.size()) {
      QGuiApplication::clipboard()->setText(blocks[k].code);
      setStatus(tr("Copied a code block of message %1.").arg(message + 1));
    }
  }
}

void ChatWidget::scheduleRender() {
  if (!render_timer_->isActive()) render_timer_->start();
}

QString ChatWidget::markdownForTurn(int index) const {
  const ChatTurn& t = turns_[static_cast<size_t>(index)];
  const bool last = index + 1 == static_cast<int>(turns_.size());
  QStringList head{QStringLiteral("**%1**").arg(roleTitle(t.role))};
  QString body = t.content.isEmpty() ? tr("*(no text)*") : t.content;
  if (t.role == "user") {
    if (!t.content.isEmpty()) body = userMessageMarkdown(t.content);
    if (!busy()) head << link(tr("Edit"), QStringLiteral("edit/%1").arg(index));
    if (index == editing_index_) head << tr("*editing…*");
  } else if (t.role == "assistant") {
    head << link(tr("Copy"), QStringLiteral("copy/%1").arg(index));
    if (last && !busy()) head << link(tr("Regenerate"), QStringLiteral("regenerate"));
    body = withLinksAfterCodeBlocks(withOpenFenceClosed(body), [index](int k) {
      return link(tr("Copy code"), QStringLiteral("code/%1/%2").arg(index).arg(k));
    });
  }
  QString md = head.join(QStringLiteral(" · "));
  if (t.alternatives.size() > 1 && !last) {
    // Later turns were written after this reply, and the next prompt carries
    // the history as it stands: switching here would put a reply the model
    // never answered after. Edit the question to branch instead.
    md += QStringLiteral("\n\n") + tr("reply %1 of %2 (the conversation went on from this one)")
                                         .arg(t.selected + 1)
                                         .arg(t.alternatives.size());
  } else if (t.alternatives.size() > 1) {
    QStringList nav;
    if (t.selected > 0) nav << link(tr("‹ previous"), QStringLiteral("alt/%1/%2").arg(index).arg(t.selected - 1));
    nav << tr("reply %1 of %2").arg(t.selected + 1).arg(t.alternatives.size());
    if (t.selected + 1 < t.alternatives.size())
      nav << link(tr("next ›"), QStringLiteral("alt/%1/%2").arg(index).arg(t.selected + 1));
    md += QStringLiteral("\n\n") + nav.join(QStringLiteral(" · "));
  }
  md += QStringLiteral("\n\n") + body;
  const std::vector<MessageStats> stats = messageStatsFromJson(t.stats_json);
  if (!stats.empty()) {
    const size_t k = std::min(static_cast<size_t>(std::max(t.selected, 0)), stats.size() - 1);
    md += QStringLiteral("\n\n*%1*").arg(messageStatsLine(stats[k]));
  }
  return md;
}

void ChatWidget::render() {
  render_timer_->stop();
  moving_view_ = true;  // replacing the document moves the bar; the place is put back at the end
  const bool writing = busy();
  // While a request is on its way the turns it replaces are already hidden.
  const int shown_turns = writing ? std::min(pending_.keep, static_cast<int>(turns_.size())) : static_cast<int>(turns_.size());
  QStringList parts;
  for (int i = 0; i < shown_turns; ++i) parts << markdownForTurn(i);
  stream_start_ = -1;
  if (writing) {
    if (awaiting_start_ && !pending_.user_text.isEmpty())
      parts << QStringLiteral("**%1**\n\n%2").arg(tr("You"), userMessageMarkdown(pending_.user_text));
    QString md = QStringLiteral("**%1**").arg(tr("Assistant"));
    if (pending_.texts.size() > 1) {
      QStringList pick;
      for (int i = 0; i < pending_.texts.size(); ++i) {
        pick << (i == pending_.shown ? tr("**reply %1**").arg(i + 1)
                                     : link(tr("reply %1").arg(i + 1), QStringLiteral("show/%1").arg(i)));
      }
      md += QStringLiteral(" · ") + pick.join(QStringLiteral(" · "));
    }
    parts << md;
  }
  markdown_head_ = parts.join(QStringLiteral("\n\n---\n\n"));
  view_->document()->setMarkdown(markdown_head_, kChatMarkdown);
  if (writing) {
    // The reply being written goes after a block break; from then on only
    // that tail is replaced as tokens arrive (renderStream), so a long
    // conversation is not parsed again 25 times a second.
    QTextCursor cursor(view_->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertBlock();
    stream_start_ = cursor.position();
    rerenderStream();  // a new document
  } else {
    markdown_ = markdown_head_;
  }
  moving_view_ = false;
  restoreViewPlace();
}

void ChatWidget::setDraftTint(bool on) {
  if (draft_tint_ == on) return;
  draft_tint_ = on;
  if (stream_start_ >= 0) rerenderStream();  // the kept blocks carry the old tint too
}

void ChatWidget::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // The tint is made from the palette: a theme switch redraws it.
  if (event->type() == QEvent::PaletteChange && stream_start_ >= 0) rerenderStream();
}

void ChatWidget::updateHeader() {
  const SamplingParams& s = settings_.sampling;
  QString prompt = settings_.system_prompt.simplified();
  if (prompt.size() > 90) prompt = prompt.left(89) + QStringLiteral("…");
  QStringList parts;
  parts << (prompt.isEmpty() ? tr("No system prompt") : tr("System: “%1”").arg(prompt.toHtmlEscaped()));
  // Which sampling values are in force and where each came from, so that a
  // reply that loops or rambles can be traced to a setting.
  for (const QString& entry : samplingSummary(settings_, sampling_defaults_)) parts << entry.toHtmlEscaped();
  parts << tr("max %1 tokens").arg(s.max_tokens);
  if (settings_.n > 1) parts << tr("%1 replies").arg(settings_.n);
  parts << QStringLiteral("<a href=\"settings\">%1</a>").arg(tr("Conversation settings…"));
  header_->setText(parts.join(QStringLiteral(" · ")));
  const QString model_source = QString::fromStdString(sampling_defaults_.model_source);
  header_->setToolTip(
      tr("Sampling: values set in this conversation's settings come first, then the model file's "
         "recommendation%1, then kvscope's defaults (llama.cpp's, with a repeat penalty of 1.1 over 64 tokens).")
          .arg(model_source.isEmpty() ? tr(" (this model file recommends none)") : tr(" (%1)").arg(model_source)));
}

void ChatWidget::updateButtons() {
  send_->setEnabled(model_ready_ && !busy());
  stop_->setEnabled(active_id_ != 0);
}

}  // namespace kvscope::ui
