// ChatWidget's request lifecycle (see chat_widget.h): a reply asked for, taken
// by the engine (the turns change only then), its tokens and its end; and the
// replies detached from the view (a new chat, another conversation, a delete),
// cancelled but still handed to replyFinished so their conversation keeps them.
#include <algorithm>

#include <QLabel>
#include <QLocale>

#include "chat_widget.h"
#include "models/message_stats.h"

namespace kvscope::ui {

void ChatWidget::startReply(const ChatHistory& history) {
  follow_reply_ = true;  // the reader asked: show the reply as it comes
  const int n = std::clamp(settings_.n, ConversationSettings::kMinReplies, ConversationSettings::kMaxReplies);
  pending_.texts = QStringList(n, QString());
  pending_.from_draft.assign(static_cast<size_t>(n), TextSpans{});
  pending_.finishes.assign(static_cast<size_t>(n), FinishInfo{});
  pending_.remaining = n;
  awaiting_start_ = true;
  stop_when_started_ = false;
  first_token_count_ = -1;
  setStatus(tr("processing prompt…"));
  render();
  updateButtons();
  sent_history_ = history;
  emit sendRequested(history, settings_.sampling, n);
}

void ChatWidget::stop() {
  if (active_id_ != 0) {
    emit stopRequested(active_id_);
  } else if (awaiting_start_) {
    stop_when_started_ = true;  // Esc right after sending: cancel as soon as the id is known
  }
}

void ChatWidget::detachReply() {
  if (!busy()) return;
  DetachedReply detached{active_id_, active_id_ != 0, std::move(pending_)};
  if (active_id_ != 0) emit stopRequested(active_id_);  // else when its start arrives
  detached_.push_back(std::move(detached));
  pending_ = PendingReply{};
  active_id_ = 0;
  awaiting_start_ = false;
  stop_when_started_ = false;
  updateButtons();
}

void ChatWidget::onRequestStarted(quint64 request_id, bool is_chat) {
  if (!is_chat) return;
  // Requests start in the order they were sent: a detached one awaiting its
  // start is the first to come.
  for (DetachedReply& d : detached_) {
    if (d.started || d.id != 0) continue;
    d.id = request_id;
    emit stopRequested(request_id);
    return;
  }
  if (!awaiting_start_) return;
  awaiting_start_ = false;
  active_id_ = request_id;
  if (pending_.keep < static_cast<int>(turns_.size())) {
    turns_.resize(static_cast<size_t>(pending_.keep));
    emit turnsRemoved(pending_.keep);
  }
  if (!pending_.user_text.isEmpty()) {
    turns_.push_back({"user", pending_.user_text, {}, 0, {}});
    emit userTurnAdded(pending_.user_text);
  }
  if (editing_index_ >= 0) {
    editing_index_ = -1;
    edit_banner_->hide();
  }
  updateButtons();
  emit replyStarted(request_id);
  if (stop_when_started_) {
    stop_when_started_ = false;
    emit stopRequested(active_id_);
  }
}

void ChatWidget::onTokens(quint64 request_id, int index, const QString& text, const TextSpans& from_draft) {
  for (DetachedReply& d : detached_) {
    if (d.id != request_id || !d.started || index < 0 || index >= d.reply.texts.size()) continue;
    d.reply.texts[index] += text;  // its conversation keeps what it got
    return;
  }
  if (request_id != active_id_ || active_id_ == 0 || index < 0 || index >= pending_.texts.size()) return;
  const int offset = static_cast<int>(pending_.texts[index].size());
  TextSpans& spans = pending_.from_draft[static_cast<size_t>(index)];
  for (const TextSpan& span : from_draft) spans.push_back({offset + span.begin, span.length});
  pending_.texts[index] += text;
  scheduleRender();
}

ChatTurn ChatWidget::finishedTurn(const PendingReply& reply) {
  std::vector<MessageStats> stats;
  for (const FinishInfo& f : reply.finishes) stats.push_back(MessageStats::fromFinish(f));
  ChatTurn turn{"assistant", reply.texts.value(reply.shown), {}, 0, messageStatsToJson(stats)};
  if (reply.texts.size() > 1) {
    turn.alternatives = reply.texts;
    turn.selected = reply.shown;
  }
  return turn;
}

ChatTurn ChatWidget::replySoFar() const {
  ChatTurn turn = finishedTurn(pending_);
  turn.stats_json.clear();
  return turn;
}

void ChatWidget::onFinished(quint64 request_id, const kvscope::ui::FinishInfo& info) {
  for (auto d = detached_.begin(); d != detached_.end(); ++d) {
    if (d->id != request_id) continue;
    if (info.index >= 0 && info.index < d->reply.texts.size()) {
      d->reply.finishes[static_cast<size_t>(info.index)] = info;
      --d->reply.remaining;
    }
    if (d->reply.remaining > 0) return;
    const DetachedReply done = std::move(*d);
    detached_.erase(d);
    if (done.started) emit replyFinished(done.id, finishedTurn(done.reply));
    return;
  }
  if (request_id != active_id_ || active_id_ == 0) return;
  if (info.index < 0 || info.index >= pending_.texts.size()) return;
  pending_.finishes[static_cast<size_t>(info.index)] = info;
  if (--pending_.remaining > 0) return;

  const ChatTurn turn = finishedTurn(pending_);
  turns_.push_back(turn);
  active_id_ = 0;

  const FinishInfo& shown = pending_.finishes[static_cast<size_t>(pending_.shown)];
  const RequestStats& st = shown.stats;
  QString status = messageStatsLine(MessageStats::fromFinish(shown));
  status += tr(" · context %1 / %2")
                .arg(QLocale().toString(st.num_context_tokens))
                .arg(QLocale().toString(max_context_));
  if (shown.reason == FinishReason::Error) status = tr("error: %1").arg(QString::fromStdString(shown.error));
  setStatus(status);
  render();
  updateButtons();
  emit replyFinished(request_id, turn);
}

}  // namespace kvscope::ui
