// ChatWidget: one conversation. The turns rendered as Markdown with actions
// as links (edit an earlier user message and resend, regenerate the last
// reply, flip through n alternative replies, copy a reply or a code block),
// a stats line under each reply, a header with the conversation's settings
// (system prompt, the sampling values in force and where each came from: this
// conversation, the model file or kvscope's defaults; n), an input box (Ctrl+Enter sends, Esc stops or
// leaves editing) and a status line ("loading model 43%", "processing prompt
// 340 / 1,200 tokens", tok/s, context usage, "speculation paused").
// With speculative decoding, the text of tokens that were accepted drafts is
// tinted in the reply being written (setDraftTint; models/draft_spans.h), a
// background only: the text stays the same plain, selectable text.
//
// It knows nothing of the engine: it asks for replies with sendRequested()
// (the engine applies the model's chat template) and takes results through
// the on*() slots, wired in app/gui. Persistence is the main window's: it
// listens to userTurnAdded / turnsRemoved / replyStarted / replyFinished /
// alternativeSelected, which mirror every change of turns().
#pragma once

#include <QElapsedTimer>
#include <QWidget>

#include "engine_types.h"
#include "models/chat_turn.h"
#include "models/conversation_settings.h"
#include "models/markdown_stream.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;
class QTextCursor;
class QTimer;
class QUrl;

namespace kvscope::ui {

class LiveLabel;

class ChatWidget : public QWidget {
  Q_OBJECT
 public:
  explicit ChatWidget(QWidget* parent = nullptr);

  const ChatTurns& turns() const { return turns_; }
  // What the engine is sent: the system prompt (if any), then every turn's content.
  ChatHistory engineHistory() const;
  // The conversation as the chat sent its last user message: the request
  // that message's reply came from (system message as it was then, turns up
  // to that message), while this conversation is open since; otherwise
  // engineHistory() up to that message. Empty: no user message yet.
  ChatHistory lastPromptAsSent() const;
  bool busy() const { return awaiting_start_ || active_id_ != 0; }
  // The request of the reply being written (0: none, or not taken yet).
  quint64 activeRequest() const { return active_id_; }
  // The reply being written as it stands (its text, alternatives), without
  // figures: for saving one that could not end.
  ChatTurn replySoFar() const;
  // The index of the user turn being edited, or -1.
  int editingIndex() const { return editing_index_; }
  QString statusText() const;
  QString renderedMarkdown() const { return markdown_; }
  QPlainTextEdit* input() const { return input_; }
  // The conversation's settings with the loaded model's sampling defaults
  // filled into the fields the user has not chosen (what a reply is sent with).
  const ConversationSettings& conversationSettings() const { return settings_; }
  void setConversationSettings(const ConversationSettings& settings);
  // `settings` resolved as this widget resolves its own (for dialogs that
  // show, say, the app's chat defaults against the loaded model).
  ConversationSettings withModelDefaults(const ConversationSettings& settings) const;
  // kvscope's sampling defaults with the loaded model file's recommendation.
  const kvscope::SamplingDefaults& samplingDefaults() const { return sampling_defaults_; }
  // The header as shown (rich text).
  QString headerText() const;
  bool draftTint() const { return draft_tint_; }
  // For tests: the reply being written as rendered (plain text), and the
  // runs of it whose background is the draft tint.
  QString streamText() const;
  TextSpans tintedSpans() const;

 public slots:
  // Sends `text` as the next user turn (after the edited turn's predecessors
  // when editing); no-op while a reply is being written.
  void sendPrompt(const QString& text);
  void stop();
  void newChat();
  // Replaces the conversation shown (a saved one being opened); call when not busy().
  void setTurns(const kvscope::ui::ChatTurns& turns);
  // Asks again for the last reply (same history; the prompt's KV comes from
  // the prefix cache).
  void regenerate();
  // Puts user turn `index` into the input box; sending replaces it and drops
  // everything after it.
  void editMessage(int index);
  void cancelEdit();
  // Shows another of the last reply's alternatives (the history the next
  // prompt carries follows it); earlier replies keep theirs: the turns after
  // them were written from it.
  void selectAlternative(int message_index, int alternative);
  void setStatus(const QString& text);
  void onModelLoading(const QString& name);
  void onLoadProgress(double fraction, const QString& stage);
  void onModelLoaded(const kvscope::ModelInfo& info);
  // The context a reply may fill, shown beside its length: the engine's
  // max_model_len (after a load, and after settings that change it).
  void setMaxContext(const kvscope::ModelInfo& info);
  // Settings were applied to the loaded model: the context may have changed,
  // and the line under the input says what the engine now holds (an error
  // from before, such as a prompt the old pool could not fit, no longer
  // stands). A reply being written keeps its progress line.
  void onReconfigured(const kvscope::ModelInfo& info);
  // Loading another model failed and `info`'s model is still loaded; a reply
  // being written goes on.
  void onModelKept(const kvscope::ModelInfo& info);
  void onRequestStarted(quint64 request_id, bool is_chat);
  // `from_draft`: the characters of `text` that came from accepted draft tokens.
  void onTokens(quint64 request_id, int index, const QString& text, const kvscope::ui::TextSpans& from_draft = {});
  void onFinished(quint64 request_id, const kvscope::ui::FinishInfo& info);
  void onSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  void onError(const QString& message);
  // Tints accepted draft tokens in the reply being written (on by default).
  void setDraftTint(bool on);

 signals:
  void sendRequested(const kvscope::ui::ChatHistory& history, const kvscope::SamplingParams& sampling, int n);
  void stopRequested(quint64 request_id);
  void userTurnAdded(const QString& text);
  // Turns from `index` on were dropped (edit and resend, regenerate, a
  // request that could not start).
  void turnsRemoved(int index);
  // The engine took the request and the reply begins / is complete.
  // `request_id` tells the replies apart: a reply detached from the view (a
  // new chat, another conversation) still finishes after the next one started.
  void replyStarted(quint64 request_id);
  void replyFinished(quint64 request_id, const kvscope::ui::ChatTurn& turn);
  void alternativeSelected(int message_index, int alternative);
  void settingsRequested();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  // The request on its way and the reply being written: n streams, finished
  // one by one. When the engine takes it, turns from `keep` on are replaced
  // by `user_text` (if any) and the reply.
  struct PendingReply {
    int keep = 0;
    QString user_text;  // empty for regenerate
    QStringList texts;
    std::vector<TextSpans> from_draft;  // per text: its accepted draft tokens' characters
    std::vector<FinishInfo> finishes;
    int remaining = 0;
    int shown = 0;
  };

  // A reply whose conversation left the view while it was written (a new
  // chat, another conversation opened, its conversation deleted): cancelled
  // and no longer shown; what it got still goes out through replyFinished
  // when it ends, so its conversation keeps it. `started`: the engine had
  // taken it (else its start is awaited, to cancel it, and nothing is saved).
  struct DetachedReply {
    quint64 id = 0;
    bool started = false;
    PendingReply reply;
  };

  void startReply(const ChatHistory& history);
  // Moves the reply being written (if any) to detached_ and cancels it.
  void detachReply();
  // The finished turn of `reply` (its shown text, alternatives and stats).
  static ChatTurn finishedTurn(const PendingReply& reply);
  // Puts the view back where the reader had it after the document changed:
  // at the bottom when they were following the reply there, else where
  // they scrolled to (follow_reply_, view_value_).
  void restoreViewPlace();
  void sendFromInput();
  void onLinkClicked(const QUrl& url);
  void scheduleRender();
  void render();        // everything
  // Only the reply being written (chat_widget_stream.cpp); rerenderStream
  // renders it from its start again, its kept blocks too.
  void renderStream();
  void rerenderStream();
  // text[from, to) of the reply being written, as Markdown at `cursor` (an
  // empty block), its accepted drafts tinted.
  void renderStreamPart(QTextCursor& cursor, const QString& text, int from, int to);
  // "728 KV blocks of 16 tokens · context 8,192 · <backend>" for the status line.
  QString engineSummary(const kvscope::ModelInfo& info) const;
  void updateHeader();
  void updateButtons();
  QString markdownForTurn(int index) const;

  QLabel* header_ = nullptr;
  QTextBrowser* view_ = nullptr;
  QLabel* edit_banner_ = nullptr;
  QPlainTextEdit* input_ = nullptr;
  QPushButton* send_ = nullptr;
  QPushButton* stop_ = nullptr;
  // Changes with every snapshot while a reply streams, and wraps: a long line
  // (a backend's reason, an error) must not widen the chat column and squeeze
  // the inspector's docks.
  LiveLabel* status_ = nullptr;
  QTimer* render_timer_ = nullptr;

  ChatTurns turns_;
  ChatHistory sent_history_;  // what startReply last sent for this conversation (lastPromptAsSent)
  ConversationSettings settings_;
  kvscope::SamplingDefaults sampling_defaults_ = kvscope::resolve_sampling_defaults({});
  PendingReply pending_;
  QString markdown_;             // what the view shows
  QString markdown_head_;        // all of it but the reply being written
  int stream_start_ = -1;        // document position where that reply starts; -1: none
  // The reply's blocks that cannot change any more, rendered once: they end
  // at frozen_end_ in the document and at frozen_chars_ in the reply's text.
  StableMarkdownPrefix stable_prefix_;
  int frozen_end_ = -1;
  int frozen_chars_ = 0;
  int frozen_reply_ = -1;        // which of the replies (pending_.shown) they are
  std::vector<DetachedReply> detached_;
  // The reader's place in the view: following the bottom, or at view_value_
  // (set by their scrolling). Kept here rather than read off the scroll bar
  // after a render: replacing the document resets the bar, and the layout
  // then grows the range in steps, each of which puts the place back.
  bool follow_reply_ = true;
  int view_value_ = 0;
  bool moving_view_ = false;  // the widget itself is moving the bar
  bool awaiting_start_ = false;  // sent, request id not known yet
  bool stop_when_started_ = false;
  quint64 active_id_ = 0;
  int editing_index_ = -1;
  bool model_ready_ = false;
  bool draft_tint_ = true;
  QString model_name_;
  int max_context_ = 0;  // the context in force (ModelInfo::max_model_len)
  QElapsedTimer since_first_token_;
  int first_token_count_ = -1;  // generated tokens at the first snapshot with any
};

}  // namespace kvscope::ui
