// Window <-> engine worker connections (see window_wiring.h).
#include "window_wiring.h"

#include <QStatusBar>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "invariance_panel.h"
#include "invariance_runner.h"
#include "main_window.h"
#include "models/block_table_model.h"
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
  QObject::connect(worker, &W::warning, &window,
                   [&window](const QString& message) { window.statusBar()->showMessage(message, 15000); });
  QObject::connect(worker, &W::requestStarted, chat, &ChatWidget::onRequestStarted);
  QObject::connect(worker, &W::tokens, chat, &ChatWidget::onTokens);
  QObject::connect(worker, &W::finished, chat, &ChatWidget::onFinished);
  QObject::connect(worker, &W::traceEvents, window.tracePanel(), &kvscope::ui::TracePanel::appendEvents);
  QObject::connect(worker, &W::tokenBytesLoaded, window.invariancePanel(), &kvscope::ui::InvariancePanel::setTokenBytes);
  connectInvariancePanel(*window.invariancePanel(), *new InvarianceRunner(&host));
}

void connectInvariancePanel(kvscope::ui::InvariancePanel& panel, InvarianceRunner& runner) {
  using kvscope::ui::InvariancePanel;
  QObject::connect(&panel, &InvariancePanel::runRequested, &runner, &InvarianceRunner::run);
  QObject::connect(&panel, &InvariancePanel::cancelRequested, &runner, &InvarianceRunner::cancel);
  QObject::connect(&runner, &InvarianceRunner::progress, &panel, &InvariancePanel::onProgress);
  QObject::connect(&runner, &InvarianceRunner::finished, &panel, &InvariancePanel::onFinished);
}

}  // namespace kvscope::gui
