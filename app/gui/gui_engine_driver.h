// GuiEngineDriver: the OpenAI-compatible server (app/server) driving the
// app's own engine, the one the EngineWorker steps, so that HTTP clients and
// the chat share one continuous batch and the inspector shows both.
//
//   submit / cancel      any thread: Engine::submit / cancel, then a queued
//                        wake of the worker, which steps while the engine has
//                        work (server requests included), as it does for the chat.
//   run_between_steps    any thread: a queued call into the worker's thread,
//                        which runs one step per event-loop turn, so the call
//                        lands between two steps; the caller waits for it.
//   engine()             the engine the driver was opened on (tokenizer only).
//
// A dead engine is never touched: the driver is open only between open() and
// close(), and ServerController closes it (and stops the server) before
// EngineHost lets a load or reconfigure reach the worker, then opens it on
// the engine that is there once the load is done. While closed, submit is
// refused and run_between_steps returns false (the server answers 503); a
// call waiting in the worker's queue when close() comes is answered "not
// run" at once, so close() never waits for a model being loaded. Every call
// also checks that the worker still has the engine it was opened on.
//
// It outlives the worker's engine (EngineHost deletes the worker first): the
// engine's callbacks of a request the server cancelled may reach the driver
// after the server has stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <QObject>

#include "engine_driver.h"

namespace kvscope::gui {

class EngineWorker;

class GuiEngineDriver final : public QObject, public server::EngineDriver {
  Q_OBJECT
 public:
  // `worker` must outlive every call (EngineHost: the server stops first).
  explicit GuiEngineDriver(EngineWorker* worker, QObject* parent = nullptr);
  ~GuiEngineDriver() override;

  // GUI thread. Opens the driver on the worker's engine; false (stays closed)
  // when it has none. Call only while no load is queued in the worker.
  bool open();
  // Any thread. Refuses new work and answers queued run_between_steps calls
  // "not run". Idempotent.
  void close();
  bool isOpen() const;

  Result<RequestId> submit(GenerationRequest request, SubmittedPrompt* submitted) override;
  void cancel(RequestId id) override;
  bool run_between_steps(const std::function<void(Engine&)>& fn) override;
  const Engine& engine() const override;

  // Server requests submitted and not finished yet.
  int numLiveRequests() const;

 signals:
  // Emitted from the submitting (HTTP) thread and the worker's thread;
  // receivers in the GUI thread get them queued.
  void requestSubmitted(quint64 request_id);
  // Once every completion of the request has finished (or the engine ended it).
  void requestFinished(quint64 request_id);

 private:
  struct Job;
  // The runner's answer to a job it took.
  void finishJob(const std::shared_ptr<Job>& job, bool ran);
  // "Not run" to a job nobody has taken yet (close(), or the worker deleted first).
  void abandonJob(const std::shared_ptr<Job>& job);
  // The finish of completion `index`; emits requestFinished after the last one.
  void onRequestEvent(RequestId id, FinishReason finish);

  EngineWorker* worker_;
  std::atomic<Engine*> engine_{nullptr};  // set by open(); never dereferenced while closed except by cancel
  mutable std::mutex mutex_;
  bool open_ = false;
  std::set<std::shared_ptr<Job>> queued_;     // run_between_steps calls not yet taken by the worker
  std::map<RequestId, int> live_;             // request -> completions still running
  std::map<RequestId, int> early_finishes_;   // finishes that came before submit() counted the request
  // Shared with every request's callback so that an event arriving after the
  // driver is gone (it never should: EngineHost orders it) finds it marked dead.
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace kvscope::gui
