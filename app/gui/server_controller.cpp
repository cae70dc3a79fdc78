// The app's server: start, stop, and restart around engine loads (see server_controller.h).
#include "server_controller.h"

#include <QMetaObject>

#include "gui_engine_driver.h"

namespace kvscope::gui {

QString serverUrl(const QString& host, int port) {
  const QString shown = host.contains(QLatin1Char(':')) ? QStringLiteral("[%1]").arg(host) : host;
  return QStringLiteral("http://%1:%2/v1").arg(shown).arg(port);
}

ServerController::ServerController(EngineWorker* worker, QObject* parent)
    : QObject(parent), driver_(new GuiEngineDriver(worker, this)) {
  qRegisterMetaType<kvscope::gui::ServerController::State>();
}

ServerController::~ServerController() { shutdown(); }

void ServerController::start(const server::ServerOptions& options) {
  if (shut_down_) return;
  stopNow();
  options_ = options;
  bound_port_ = -1;
  wanted_ = true;
  if (pending_loads_ == 0 && has_engine_) {
    startNow();
  } else {
    setState(State::WaitingForEngine, tr("Waiting for the model to load; the server starts once it is ready."));
  }
}

void ServerController::stop() {
  wanted_ = false;
  stopNow();
  setState(State::Off, tr("Stopped."));
}

int ServerController::port() const { return state_ == State::Serving ? bound_port_ : -1; }

QString ServerController::url() const {
  return state_ == State::Serving ? serverUrl(QString::fromStdString(options_.host), bound_port_) : QString();
}

void ServerController::beforeEngineLoad() {
  ++pending_loads_;
  if (!server_) return;
  stopNow();
  if (wanted_) {
    setState(State::WaitingForEngine,
             tr("The engine is being loaded or given new settings; the server starts again once it is ready."));
  }
}

void ServerController::engineLoadDone(bool has_engine) {
  if (pending_loads_ > 0) --pending_loads_;
  has_engine_ = has_engine;
  if (pending_loads_ > 0 || !wanted_ || server_ || shut_down_) return;
  if (has_engine) {
    startNow();
  } else {
    setState(State::WaitingForEngine, tr("No model is loaded; the server starts once one is."));
  }
}

void ServerController::engineReconfigured(const kvscope::ModelInfo& info) {
  has_engine_ = true;
  if (!server_) return;
  if (start_thread_.joinable()) {
    reconfigured_while_starting_ = info;
    return;
  }
  server_->engine_reconfigured(info);
}

void ServerController::shutdown() {
  if (shut_down_) return;
  wanted_ = false;
  stopNow();
  shut_down_ = true;
}

void ServerController::startNow() {
  if (!driver_->open()) {
    setState(State::WaitingForEngine, tr("No model is loaded; the server starts once one is."));
    return;
  }
  // A restart binds the port it had (0 asked for any port: keep the one picked).
  server::ServerOptions options = options_;
  if (options.port == 0 && bound_port_ > 0 && wanted_) options.port = bound_port_;
  server_ = std::make_unique<server::OpenAiServer>(*driver_, options);
  const quint64 attempt = ++attempt_;
  setState(State::Starting, tr("Starting on %1:%2…").arg(QString::fromStdString(options.host)).arg(options.port));
  server::OpenAiServer* server = server_.get();
  start_thread_ = std::thread([this, server, attempt] {
    const Status status = server->start();
    QMetaObject::invokeMethod(this, [this, attempt, status] { onStarted(attempt, status); }, Qt::QueuedConnection);
  });
}

void ServerController::onStarted(quint64 attempt, const Status& status) {
  if (attempt != attempt_ || !server_) return;  // stopped meanwhile
  if (start_thread_.joinable()) start_thread_.join();
  if (reconfigured_while_starting_) server_->engine_reconfigured(*reconfigured_while_starting_);
  reconfigured_while_starting_.reset();
  if (!status.ok()) {
    const QString why = QString::fromStdString(status.error());
    stopNow();
    wanted_ = false;
    setState(State::Failed, tr("Cannot start the server: %1").arg(why));
    return;
  }
  bound_port_ = server_->port();
  setState(State::Serving, tr("Serving model \"%1\" on %2%3")
                               .arg(QString::fromStdString(server_->model_id()),
                                    serverUrl(QString::fromStdString(options_.host), bound_port_),
                                    options_.api_key.empty() ? QString() : tr(" (API key required)")));
}

void ServerController::stopNow() {
  ++attempt_;
  reconfigured_while_starting_.reset();  // a start from now on reads the engine as it is
  // Closed first: a start or a request waiting for the worker (a long step,
  // a model being loaded) is answered at once instead of holding us up.
  driver_->close();
  if (start_thread_.joinable()) start_thread_.join();
  if (server_) {
    server_->stop();  // cancels what is in flight, joins the connection threads
    server_.reset();
  }
}

void ServerController::setState(State state, const QString& message) {
  state_ = state;
  message_ = message;
  emit stateChanged(state, message);
}

}  // namespace kvscope::gui
