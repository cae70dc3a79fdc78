// EngineWorker: the engine <-> Qt bridge. Lives in its own QThread (see
// EngineHost), owns the kvscope::Engine and is the only thing that calls
// Engine::step(). Commands arrive as queued slot calls; it runs one step at a
// time and re-posts itself, so a command (cancel, a new chat) gets in between
// two steps. Results leave as value signals: streamed text coalesced to at
// most one emission per ~16 ms, snapshots (and recorded trace events)
// throttled to ~20 Hz. Loading reports progress and stops when the window
// closes; new settings for the same model are applied in place
// (Engine::reconfigure), so running requests carry on. The app's HTTP server
// (gui_engine_driver.h) submits into the same engine from its own threads and
// wakes the loop, which steps its requests with the chat's.
// Tested by tests/ui/engine_worker_test.cpp.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include "engine_types.h"
#include "models/token_text.h"

namespace kvscope {
class Engine;
}

namespace kvscope::gui {

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  explicit EngineWorker(QObject* parent = nullptr);
  ~EngineWorker() override;

  // Thread-safe: makes the step loop return at once and stay stopped, and
  // interrupts the engine step in flight (Engine::interrupt), so the thread
  // can be joined within one layer instead of one whole step.
  void requestStop();

  // Thread-safe, for the server's driver (gui_engine_driver.h): runs `fn` on
  // the engine under the lock that guards replacing it, so a load cannot
  // swap the engine meanwhile; false, without running it, when there is none
  // or the worker is stopping. Steps run without that lock: `fn` may only
  // make the engine's thread-safe calls (submit, cancel, the tokenizer),
  // unless it runs in this worker's thread.
  bool withEngine(const std::function<void(kvscope::Engine&)>& fn);
  // Thread-safe: the step loop runs again (new work was submitted from
  // another thread; it steps until the engine has none).
  void wake();

  static constexpr int kTokenFlushMs = 16;
  static constexpr int kSnapshotIntervalMs = 50;  // 20 Hz

 public slots:
  // Same model file as the engine has: applies the settings in place
  // (Engine::reconfigure; requests are re-queued, none lost) and emits
  // reconfigured(). Otherwise replaces the engine (cancelling whatever ran on
  // the old one), reporting loadProgress() on the way, then modelLoaded().
  // `may_reload` false: the caller counts on the engine staying (a server
  // runs on it); settings that would need a new one are refused with error().
  void loadModel(const kvscope::EngineConfig& config, bool may_reload = true);
  // Records engine events and emits them in batches (traceEvents) while on.
  void setTracing(bool on);
  // Submits a conversation rendered with the model's chat template, asking
  // for `n` alternative replies (parallel sampling: they share the prompt's
  // KV blocks); emits requestStarted(id, true) or error().
  void submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling, int n = 1);
  void cancel(quint64 request_id);
  // Starts N synthetic requests (see WorkloadSpec) that share a prefix,
  // arriving at once or at spec.arrival_rate_per_s.
  void startWorkload(const kvscope::ui::WorkloadSpec& spec);
  // Cancels the workload's requests, running or still to arrive.
  void stopWorkload();

 signals:
  void loadProgress(double fraction, const QString& stage);
  // Once per loaded model, before modelLoaded(): the bytes of every token id
  // (Engine::token_bytes, control tokens as their text), so the inspector can
  // show what a block or a sequence holds without calling the engine.
  void tokenBytesLoaded(const kvscope::ui::TokenBytesTable& table);
  void modelLoaded(const kvscope::ModelInfo& info);
  // New settings applied to the loaded model; requests kept running.
  // `in_place`: only settings each step reads changed (applies_in_place), so
  // no request was re-queued and the prefix cache stayed.
  void reconfigured(const kvscope::ModelInfo& info, bool in_place);
  // `previous_kept`: the model loaded before is still there and usable.
  void loadFailed(const QString& message, bool previous_kept);
  void traceEvents(const kvscope::ui::EventBatch& events);
  void requestStarted(quint64 request_id, bool is_chat);
  // Text of a chat request's completion `index` (0..n-1), coalesced per frame;
  // `from_draft`: where in `text` the tokens that were accepted speculative
  // drafts are (TokenEvent::from_draft), in order, adjacent ones merged.
  void tokens(quint64 request_id, int index, const QString& text, const kvscope::ui::TextSpans& from_draft);
  // Once per completion; FinishInfo::index says which.
  void finished(quint64 request_id, const kvscope::ui::FinishInfo& info);
  void snapshot(const kvscope::ui::SnapshotPtr& snapshot);
  // A workload has requests running or still to arrive (true), or none
  // left (false: all finished, stopped, or a model load ended it). Emitted
  // on changes only.
  void workloadActive(bool active);
  void idle();
  void error(const QString& message);
  // Not an error: the request runs, but a person should know (the prompt had
  // text with no token in the vocabulary, and what it became).
  void warning(const QString& message);

 private:
  void scheduleStep();
  void runStep();
  void flushTokens();
  void publishSnapshot();
  void publishEvents();
  void publishTokenBytes();
  void onTokenEvent(const kvscope::TokenEvent& ev);  // on this thread, inside step()
  void submitPendingWorkload();
  void updateWorkloadActive();  // emits workloadActive() when it changed

  std::unique_ptr<kvscope::Engine> engine_;
  std::atomic<bool> stop_{false};
  // Guards replacing engine_ (this thread) against requestStop() reading it
  // (the GUI thread); steps run without it.
  std::mutex engine_mutex_;
  bool tracing_ = false;
  bool step_posted_ = false;
  // Workload requests not submitted yet. Even at once, they are held back
  // until the first request (the leader) has its first token: its prompt is
  // computed (its full blocks hashed) before the others arrive, so they find
  // the shared prefix in the prefix cache instead of all computing it at once.
  struct PendingWorkloadRequest {
    qint64 due_ms = 0;  // since the workload started
    GenerationRequest request;
  };
  std::vector<PendingWorkloadRequest> pending_workload_;  // last to arrive first
  std::set<RequestId> workload_ids_;                     // submitted, not finished
  bool workload_active_ = false;  // what workloadActive() last said
  RequestId workload_leader_ = 0;        // the workload's first request
  bool workload_leader_ready_ = false;   // it has a token (or ended): the others may come
  QElapsedTimer workload_clock_;
  int num_workload_requests_ = 0;
  using CompletionKey = std::pair<RequestId, int>;  // request, completion index
  std::map<RequestId, int> chat_requests_;  // whose text is streamed -> completions still running
  struct PendingText {
    QString text;
    ui::TextSpans from_draft;  // in `text`
  };
  std::map<CompletionKey, PendingText> pending_text_;     // not yet emitted
  std::vector<std::pair<RequestId, ui::FinishInfo>> pending_finish_;  // emitted after their text
  QElapsedTimer since_flush_;
  QElapsedTimer since_snapshot_;
};

}  // namespace kvscope::gui
