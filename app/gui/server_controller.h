// ServerController: the app's Server toggle behind the UI. It runs an
// OpenAiServer (app/server) over the app's own engine through a
// GuiEngineDriver, so HTTP clients join the chat's continuous batch and the
// inspector shows their requests. Lives in the GUI thread; EngineHost owns it.
//
// The engine changing: EngineHost calls beforeEngineLoad() before a load
// that replaces the engine reaches the worker. A running server is then
// stopped (requests in flight are cancelled; their clients get an error)
// and, once the worker has finished every load asked for (engineLoadDone),
// started again with the same options on the port it had, so the server
// never reads a dead engine and never serves stale model facts (id, context
// length). Settings applied in place (Engine::reconfigure) keep it serving:
// engineReconfigured() passes on what changed.
//
// Starting binds on a thread of its own: OpenAiServer::start reads the model
// between two steps, which may wait for a long step. stateChanged() says how
// it went (the bind error when the port is taken).
#pragma once

#include <memory>
#include <optional>
#include <thread>

#include <QObject>
#include <QString>

#include "kvscope/result.h"
#include "openai_server.h"

namespace kvscope::gui {

class EngineWorker;
class GuiEngineDriver;

class ServerController : public QObject {
  Q_OBJECT
 public:
  enum class State {
    Off,               // not asked to serve
    WaitingForEngine,  // asked to, but no engine is ready (loading, reloading, none)
    Starting,          // binding
    Serving,           // listening on port()
    Failed,            // the last start failed: message() says why
  };
  Q_ENUM(State)

  explicit ServerController(EngineWorker* worker, QObject* parent = nullptr);
  ~ServerController() override;

  // Serves with `options` as soon as an engine is ready (at once if one is).
  // A server already running is stopped first.
  void start(const server::ServerOptions& options);
  // Stops serving: requests in flight are cancelled. Frees the port.
  void stop();

  State state() const { return state_; }
  // What the status line says: "Serving … on http://…/v1", the bind error, …
  QString message() const { return message_; }
  // The port bound while serving (the one asked for, or the one picked for 0); -1 otherwise.
  int port() const;
  // http://HOST:PORT/v1 while serving; empty otherwise.
  QString url() const;
  GuiEngineDriver* driver() const { return driver_; }

  // For EngineHost, around every load / reconfigure it sends the worker.
  void beforeEngineLoad();
  // The worker finished a load (it has an engine or not).
  void engineLoadDone(bool has_engine);
  // The engine took new settings in place (no beforeEngineLoad came first):
  // a server starting or serving keeps its requests and tells clients the
  // engine's new context length.
  void engineReconfigured(const kvscope::ModelInfo& info);
  // Stops the server for good (EngineHost::shutdown, before the worker goes).
  void shutdown();

 signals:
  void stateChanged(kvscope::gui::ServerController::State state, const QString& message);

 private:
  void startNow();
  void stopNow();
  void onStarted(quint64 attempt, const Status& status);
  void setState(State state, const QString& message);

  GuiEngineDriver* driver_;  // child: outlives the worker's engine
  server::ServerOptions options_;
  std::unique_ptr<server::OpenAiServer> server_;
  std::thread start_thread_;
  quint64 attempt_ = 0;  // drops the result of a start that was stopped meanwhile
  bool wanted_ = false;  // the user asked to serve
  bool shut_down_ = false;
  int pending_loads_ = 0;
  bool has_engine_ = false;
  // New settings that came while the server was starting: its start read
  // the engine, maybe before them, so they are passed on once it is done.
  std::optional<kvscope::ModelInfo> reconfigured_while_starting_;
  int bound_port_ = -1;
  State state_ = State::Off;
  QString message_;
};

// "http://127.0.0.1:8080/v1" ([…] around an IPv6 address).
QString serverUrl(const QString& host, int port);

}  // namespace kvscope::gui
