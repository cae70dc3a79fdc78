// ChatWidget: the conversation (rendered as Markdown), an input box
// (Ctrl+Enter sends), Send and Stop (Esc) buttons and a status line
// ("loading model…", "processing prompt", tokens/s, context usage).
// It keeps the history and asks for a reply with sendRequested(history, ...);
// the engine renders the model's chat template. It knows nothing of the
// engine: replies come back through the on*() slots, wired in app/gui.
#pragma once

#include <QElapsedTimer>
#include <QWidget>

#include "engine_types.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;

namespace kvscope::ui {

class ChatWidget : public QWidget {
  Q_OBJECT
 public:
  explicit ChatWidget(QWidget* parent = nullptr);

  const ChatHistory& history() const { return history_; }
  bool busy() const { return awaiting_start_ || active_id_ != 0; }
  QString statusText() const;
  void setSampling(const SamplingParams& sampling) { sampling_ = sampling; }

 public slots:
  // Sends `text` as the next user turn (no-op while a reply is being written).
  void sendPrompt(const QString& text);
  void stop();
  void newChat();
  // Replaces the conversation shown (a saved one being opened); call when not busy().
  void setHistory(const kvscope::ui::ChatHistory& history);
  void setStatus(const QString& text);
  void onModelLoading(const QString& path);
  void onModelLoaded(const kvscope::ModelInfo& info);
  void onRequestStarted(quint64 request_id, bool is_chat);
  void onTokens(quint64 request_id, const QString& text);
  void onFinished(quint64 request_id, const kvscope::ui::FinishInfo& info);
  void onSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  void onError(const QString& message);

 signals:
  void sendRequested(const kvscope::ui::ChatHistory& history, const kvscope::SamplingParams& sampling);
  void stopRequested(quint64 request_id);
  // The engine took the last user turn and the reply begins / is complete
  // (`content` is what went into the history, possibly cut short).
  void replyStarted();
  void replyFinished(const QString& content);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void sendFromInput();
  void render();
  void updateButtons();

  QTextBrowser* view_ = nullptr;
  QPlainTextEdit* input_ = nullptr;
  QPushButton* send_ = nullptr;
  QPushButton* stop_ = nullptr;
  QLabel* status_ = nullptr;

  ChatHistory history_;
  SamplingParams sampling_;
  QString reply_;                // the reply being written (not yet in history_)
  bool awaiting_start_ = false;  // sent, request id not known yet
  quint64 active_id_ = 0;
  bool model_ready_ = false;
  int context_length_ = 0;
  QElapsedTimer since_first_token_;
  int first_token_count_ = -1;  // generated tokens at the first snapshot with any
};

}  // namespace kvscope::ui
