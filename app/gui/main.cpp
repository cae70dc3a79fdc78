// kvscope: the desktop app. Chat with a local model while the inspector shows
// the paged-attention engine's KV blocks, sequences and batches live.
//   kvscope [--model FILE] [--prompt TEXT] [--workload N]
//           [--screenshot FILE [--screenshot-after-ms N]]
// The engine runs in a worker thread (engine_host.h); the window only sends
// commands and receives value snapshots.
#include <cstdlib>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include "chat_widget.h"
#include "engine_host.h"
#include "main_window.h"

namespace {

// As kvscope-cli: $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models,
// else ~/.local/share/kvscope/models; the file is SmolLM2-135M-Instruct Q4_1.
QString defaultModelPath() {
  QString dir = qEnvironmentVariable("KVSCOPE_MODEL_DIR");
  if (dir.isEmpty() && !qEnvironmentVariable("XDG_DATA_HOME").isEmpty())
    dir = qEnvironmentVariable("XDG_DATA_HOME") + QStringLiteral("/kvscope/models");
  if (dir.isEmpty()) dir = QDir::homePath() + QStringLiteral("/.local/share/kvscope/models");
  return dir + QStringLiteral("/SmolLM2-135M-Instruct.Q4_1.gguf");
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("kvscope"));
  QApplication::setApplicationName(QStringLiteral("kvscope"));
  QApplication::setApplicationVersion(QStringLiteral(KVSCOPE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Chat with a local LLM and watch its KV memory live."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption model_opt(QStringLiteral("model"),
                               QStringLiteral("GGUF model to load (default: the last one opened, else %1).")
                                   .arg(defaultModelPath()),
                               QStringLiteral("FILE"));
  QCommandLineOption prompt_opt(QStringLiteral("prompt"), QStringLiteral("Send TEXT once the model is loaded."),
                                QStringLiteral("TEXT"));
  QCommandLineOption workload_opt(QStringLiteral("workload"),
                                  QStringLiteral("Start N synthetic requests with a shared prefix on start."),
                                  QStringLiteral("N"));
  QCommandLineOption shot_opt(QStringLiteral("screenshot"),
                              QStringLiteral("Save a PNG of the window to FILE, then quit."), QStringLiteral("FILE"));
  QCommandLineOption shot_ms_opt(QStringLiteral("screenshot-after-ms"),
                                 QStringLiteral("Delay before --screenshot (default 4000)."), QStringLiteral("MS"),
                                 QStringLiteral("4000"));
  parser.addOptions({model_opt, prompt_opt, workload_opt, shot_opt, shot_ms_opt});
  parser.process(app);

  kvscope::ui::registerEngineMetaTypes();
  kvscope::gui::EngineHost host;
  kvscope::ui::MainWindow window;
  kvscope::gui::EngineWorker* worker = host.worker();
  kvscope::ui::ChatWidget* chat = window.chat();

  // Commands: window -> worker thread.
  QObject::connect(&window, &kvscope::ui::MainWindow::loadModelRequested, &host, &kvscope::gui::EngineHost::loadModel);
  QObject::connect(&window, &kvscope::ui::MainWindow::workloadRequested, &host, &kvscope::gui::EngineHost::startWorkload);
  QObject::connect(chat, &kvscope::ui::ChatWidget::sendRequested, &host, &kvscope::gui::EngineHost::submitChat);
  QObject::connect(chat, &kvscope::ui::ChatWidget::stopRequested, &host, &kvscope::gui::EngineHost::cancel);
  // Results: worker thread -> window (queued: different threads).
  using W = kvscope::gui::EngineWorker;
  QObject::connect(worker, &W::modelLoaded, &window, &kvscope::ui::MainWindow::onModelLoaded);
  QObject::connect(worker, &W::loadFailed, &window, &kvscope::ui::MainWindow::onLoadFailed);
  QObject::connect(worker, &W::snapshot, &window, &kvscope::ui::MainWindow::onSnapshot);
  QObject::connect(worker, &W::error, &window, &kvscope::ui::MainWindow::onError);
  QObject::connect(worker, &W::requestStarted, chat, &kvscope::ui::ChatWidget::onRequestStarted);
  QObject::connect(worker, &W::tokens, chat, &kvscope::ui::ChatWidget::onTokens);
  QObject::connect(worker, &W::finished, chat, &kvscope::ui::ChatWidget::onFinished);

  // Start-up actions run once, after the first successful load.
  const QString prompt = parser.value(prompt_opt);
  const int workload = parser.value(workload_opt).toInt();
  auto once = std::make_shared<QMetaObject::Connection>();
  *once = QObject::connect(worker, &W::modelLoaded, &window, [&, once] {
    QObject::disconnect(*once);
    if (workload > 0) {
      kvscope::ui::WorkloadSpec spec;
      spec.num_requests = workload;
      window.startWorkload(spec);
    }
    if (!prompt.isEmpty()) chat->sendPrompt(prompt);
  });

  kvscope::EngineConfig config = window.engineConfig();
  if (parser.isSet(model_opt)) {
    config.model_path = parser.value(model_opt).toStdString();
  } else if (config.model_path.empty() || !QFileInfo(QString::fromStdString(config.model_path)).isFile()) {
    config.model_path = defaultModelPath().toStdString();
  }
  window.show();
  if (QFileInfo(QString::fromStdString(config.model_path)).isFile()) {
    window.loadEngine(config);
  } else {
    window.onLoadFailed(QObject::tr("The model file %1 does not exist.\n\nFetch the default model with "
                                    "`python3 scripts/fetch_model.py`, or use File > Open model….")
                            .arg(QString::fromStdString(config.model_path)));
  }

  if (parser.isSet(shot_opt)) {
    const QString file = parser.value(shot_opt);
    QTimer::singleShot(parser.value(shot_ms_opt).toInt(), &window, [&window, file] {
      const bool ok = window.grab().save(file);
      if (!ok) qWarning("kvscope: cannot write %s", qPrintable(file));
      QApplication::exit(ok ? 0 : 1);
    });
  }

  const int rc = app.exec();
  host.shutdown();  // stop and join the engine thread before the window goes
  return rc;
}
