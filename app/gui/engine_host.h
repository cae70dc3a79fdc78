// EngineHost: owns the worker thread and the EngineWorker in it. Commands are
// forwarded as queued calls; the worker's signals are reachable through
// worker() for connecting (they arrive queued in the connecting thread).
// The destructor stops the step loop, quits the thread and joins it, so
// closing the window mid-generation exits at the step's next layer boundary
// (Engine::interrupt), well within a second.
// It also owns the app's OpenAI-compatible server (server()): a load of a
// model stops a running server first and restarts it once the worker has
// the engine (server_controller.h); new settings applied in place
// (Engine::reconfigure) leave it serving, its requests going on with the
// chat's; shutdown stops it before the engine goes.
#pragma once

#include <optional>

#include <QObject>
#include <QThread>

#include "engine_worker.h"
#include "server_controller.h"

namespace kvscope::gui {

class EngineHost : public QObject {
  Q_OBJECT
 public:
  explicit EngineHost(QObject* parent = nullptr);
  ~EngineHost() override;

  EngineWorker* worker() const { return worker_; }
  ServerController* server() const { return server_; }

  void loadModel(const kvscope::EngineConfig& config);
  void submitChat(const kvscope::ui::ChatHistory& messages, const kvscope::SamplingParams& sampling, int n = 1);
  void cancel(quint64 request_id);
  void setTracing(bool on);
  void startWorkload(const kvscope::ui::WorkloadSpec& spec);
  void stopWorkload();
  // Stops and joins the worker thread (idempotent; the destructor calls it).
  // A model being loaded is cancelled at its next progress report.
  void shutdown();

 private:
  QThread thread_;
  EngineWorker* worker_ = nullptr;  // lives in thread_; deleted after the join
  ServerController* server_ = nullptr;  // a child (GUI thread); stopped before the worker goes
  // The engine's settings as the worker last reported them (none: no
  // engine), and the loads sent that it has not reported on yet: with none
  // on its way, whether new settings apply in place is known here.
  std::optional<kvscope::EngineConfig> engine_config_;
  int loads_in_flight_ = 0;
};

}  // namespace kvscope::gui
