// Window <-> engine worker connections (see window_wiring.h).
#include "window_wiring.h"

#include <QStatusBar>
#include <QTimer>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "gui_engine_driver.h"
#include "invariance_panel.h"
#include "invariance_runner.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "server_controller.h"
#include "server_dialog.h"
#include "server_request_tags.h"
#include "trace_panel.h"

namespace kvscope::gui {

void connectWindowToEngine(kvscope::ui::MainWindow& window, EngineHost& host) {
  using kvscope::ui::ChatWidget;
  using kvscope::ui::MainWindow;
  using W = EngineWorker;
  EngineWorker* worker = host.worker();
  ChatWidget* chat = window.chat();

  QObject::connect(&window, &MainWindow::loadModelRequested, &host, &EngineHost::loadModel);
  QObject::connect(&window, &MainWindow::workloadRequested, &host, &EngineHost::startWorkload);
  QObject::connect(&window, &MainWindow::workloadStopRequested, &host, &EngineHost::stopWorkload);
  QObject::connect(chat, &ChatWidget::sendRequested, &host, &EngineHost::submitChat);
  QObject::connect(chat, &ChatWidget::stopRequested, &host, &EngineHost::cancel);
  QObject::connect(window.tracePanel(), &kvscope::ui::TracePanel::recordingChanged, &host, &EngineHost::setTracing);

  QObject::connect(worker, &W::loadProgress, &window, &MainWindow::onLoadProgress);
  QObject::connect(worker, &W::tokenBytesLoaded, window.blockMap(), &kvscope::ui::BlockMapWidget::setTokenBytes);
  QObject::connect(worker, &W::tokenBytesLoaded, window.blockTableModel(), &kvscope::ui::BlockTableModel::setTokenBytes);
  QObject::connect(worker, &W::modelLoaded, &window, &MainWindow::onModelLoaded);
  QObject::connect(worker, &W::reconfigured, &window, &MainWindow::onReconfigured);
  QObject::connect(worker, &W::loadFailed, &window, &MainWindow::onLoadFailed);
  QObject::connect(worker, &W::snapshot, &window, &MainWindow::onSnapshot);
  QObject::connect(worker, &W::error, &window, &MainWindow::onError);
  QObject::connect(worker, &W::workloadActive, &window, &MainWindow::onWorkloadActive);
  QObject::connect(worker, &W::warning, &window,
                   [&window](const QString& message) { window.statusBar()->showMessage(message, 15000); });
  QObject::connect(worker, &W::requestStarted, chat, &ChatWidget::onRequestStarted);
  QObject::connect(worker, &W::tokens, chat, &ChatWidget::onTokens);
  QObject::connect(worker, &W::finished, chat, &ChatWidget::onFinished);
  QObject::connect(worker, &W::traceEvents, window.tracePanel(), &kvscope::ui::TracePanel::appendEvents);
  QObject::connect(worker, &W::tokenBytesLoaded, window.invariancePanel(), &kvscope::ui::InvariancePanel::setTokenBytes);
  connectInvariancePanel(*window.invariancePanel(), *new InvarianceRunner(&host));
  connectServerDialog(window, *host.server());
  QObject::connect(worker, &W::modelLoaded, window.serverRequestTags(), &kvscope::ui::ServerRequestTags::clear);
}

namespace {

kvscope::ui::ServerDialog::Phase dialogPhase(ServerController::State state) {
  using Phase = kvscope::ui::ServerDialog::Phase;
  switch (state) {
    case ServerController::State::WaitingForEngine: return Phase::Waiting;
    case ServerController::State::Starting: return Phase::Starting;
    case ServerController::State::Serving: return Phase::Serving;
    case ServerController::State::Failed: return Phase::Failed;
    case ServerController::State::Off: break;
  }
  return Phase::Off;
}

}  // namespace

void connectServerDialog(kvscope::ui::MainWindow& window, ServerController& server) {
  using kvscope::ui::ServerDialog;
  using kvscope::ui::ServerRequestTags;
  ServerDialog* dialog = window.serverDialog();
  QObject::connect(dialog, &ServerDialog::startRequested, &server, [&server](const kvscope::ui::ServerSettings& s) {
    kvscope::server::ServerOptions options;
    options.host = s.host.toStdString();
    options.port = s.port;
    options.api_key = s.api_key.toStdString();
    for (const QString& origin : s.allowed_origins) options.allowed_origins.push_back(origin.toStdString());
    server.start(options);
  });
  QObject::connect(dialog, &ServerDialog::stopRequested, &server, &ServerController::stop);
  QObject::connect(&server, &ServerController::stateChanged, dialog,
                   [dialog, &server](ServerController::State state, const QString& message) {
                     dialog->setStatus(dialogPhase(state), message, server.url());
                   });
  // Requests of the server are tagged in the Sequences table while they run,
  // and a second longer: the snapshot that drops a finished row comes after its end.
  ServerRequestTags* tags = window.serverRequestTags();
  QObject::connect(server.driver(), &GuiEngineDriver::requestSubmitted, tags, &ServerRequestTags::addRequest);
  QObject::connect(server.driver(), &GuiEngineDriver::requestFinished, tags, [tags](quint64 id) {
    QTimer::singleShot(1000, tags, [tags, id] { tags->removeRequest(id); });
  });
}

void connectInvariancePanel(kvscope::ui::InvariancePanel& panel, InvarianceRunner& runner) {
  using kvscope::ui::InvariancePanel;
  QObject::connect(&panel, &InvariancePanel::runRequested, &runner, &InvarianceRunner::run);
  QObject::connect(&panel, &InvariancePanel::cancelRequested, &runner, &InvarianceRunner::cancel);
  QObject::connect(&runner, &InvarianceRunner::progress, &panel, &InvariancePanel::onProgress);
  QObject::connect(&runner, &InvarianceRunner::finished, &panel, &InvariancePanel::onFinished);
}

}  // namespace kvscope::gui
