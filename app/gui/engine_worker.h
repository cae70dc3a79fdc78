// EngineWorker: the engine <-> Qt bridge. Lives in its own QThread (see
// EngineHost), owns the kvscope::Engine and is the only thing that calls
// Engine::step(). Commands arrive as queued slot calls; it runs one step at a
// time and re-posts itself, so a command (cancel, a new chat) gets in between
// two steps. Results leave as value signals: streamed text coalesced to at
// most one emission per ~16 ms, snapshots throttled to ~20 Hz.
// Tested by tests/ui/engine_worker_test.cpp.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include "engine_types.h"

namespace kvscope {
class Engine;
}

namespace kvscope::gui {

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  explicit EngineWorker(QObject* parent = nullptr);
  ~EngineWorker() override;

  // Thread-safe: makes the step loop return at once and stay stopped.
  void requestStop() { stop_.store(true); }

  static constexpr int kTokenFlushMs = 16;
  static constexpr int kSnapshotIntervalMs = 50;  // 20 Hz

 public slots:
  // Replaces the engine (cancelling whatever ran on the old one).
  void loadModel(const kvscope::EngineConfig& config);
  // Submits a conversation rendered with the model's chat template; emits
  // requestStarted(id, true) or error().
  void submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling);
  void cancel(quint64 request_id);
  // Starts N synthetic requests (see WorkloadSpec) that share a prefix.
  void startWorkload(const kvscope::ui::WorkloadSpec& spec);

 signals:
  void modelLoaded(const kvscope::ModelInfo& info);
  void loadFailed(const QString& message);
  void requestStarted(quint64 request_id, bool is_chat);
  void tokens(quint64 request_id, const QString& text);
  void finished(quint64 request_id, const kvscope::ui::FinishInfo& info);
  void snapshot(const kvscope::ui::SnapshotPtr& snapshot);
  void idle();
  void error(const QString& message);

 private:
  void scheduleStep();
  void runStep();
  void flushTokens();
  void publishSnapshot();
  void onTokenEvent(const kvscope::TokenEvent& ev);  // on this thread, inside step()
  void submitPendingWorkload();

  std::unique_ptr<kvscope::Engine> engine_;
  std::atomic<bool> stop_{false};
  bool step_posted_ = false;
  // Workload requests held back one step: the first request's prompt is
  // computed (its full blocks hashed) before the others arrive, so they find
  // the shared prefix in the prefix cache instead of all computing it at once.
  std::vector<GenerationRequest> pending_workload_;
  int num_workload_requests_ = 0;
  std::set<RequestId> chat_requests_;       // whose text is streamed
  std::map<RequestId, std::string> pending_text_;  // not yet emitted
  std::map<RequestId, ui::FinishInfo> pending_finish_;  // emitted after their text
  QElapsedTimer since_flush_;
  QElapsedTimer since_snapshot_;
};

}  // namespace kvscope::gui
