// kvscope: the desktop app. Chat with a local model while the inspector shows
// the paged-attention engine's KV blocks, sequences and batches live.
//   kvscope [--model FILE] [--prompt TEXT] [--workload N [--workload-output TOKENS]] [--workload-preset NAME]
//           [--settings FILE]
//           [--trace FILE | --record] [--show PANEL] [--serve PORT] [--screenshot FILE [--screenshot-after-ms N]]
//           [--measure-frames SECONDS]
// The engine runs in a worker thread (engine_host.h); the window only sends
// commands and receives value snapshots.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>

#include "app_theme.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "engine_settings.h"
#include "fetch/model_dir.h"
#include "first_run.h"
#include "frame_measurement.h"
#include "main_window.h"
#include "server_dialog.h"
#include "tooltip_wrap.h"
#include "wheel_guard.h"
#include "models/frame_time_probe.h"
#include "models/workload_prompts.h"
#include "startup_model.h"
#include "trace_panel.h"
#include "window_wiring.h"

namespace {

// As kvscope-cli (app/fetch/model_dir.h): SmolLM2-135M-Instruct Q4_1 in
// $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else ~/.local/share/kvscope/models.
QString defaultModelPath() { return QString::fromStdString(kvscope::fetch::default_model_path()); }

// An option's whole-number value in [lo, hi], or nullopt after saying why on stderr.
std::optional<int> intOption(const QCommandLineParser& parser, const QCommandLineOption& option, int lo, int hi,
                             const char* what) {
  bool ok = false;
  const QString text = parser.value(option);
  const int value = text.toInt(&ok);
  if (ok && value >= lo && value <= hi) return value;
  std::fprintf(stderr, "kvscope: --%s: %s is not %s (%d-%d)\n", qPrintable(option.names().constFirst()),
               qPrintable(text), what, lo, hi);
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  // --help and --version print and exit: they need no display, so they work
  // over ssh and in scripts (Qt's default platform would abort without one).
  bool platform_given = !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if ((arg == "--help" || arg == "-h" || arg == "--help-all" || arg == "--version" || arg == "-v") &&
        !platform_given) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
      platform_given = true;
    }
    // Qt's own options (QGuiApplication, the xcb plugin): they take a value.
    if ((arg == "-platform" || arg == "--platform") && i + 1 < argc) platform_given = true;
    if ((arg == "-display" || arg == "--display") && i + 1 < argc) platform_given = true;
  }
  // No display (ssh, a console): Qt would abort with a core dump and advice
  // to reinstall. Say what to do instead.
  if (!platform_given && qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    std::fprintf(stderr,
                 "kvscope: no display to open a window on ($DISPLAY and $WAYLAND_DISPLAY are unset). In a terminal, "
                 "chat with kvscope-cli chat; QT_QPA_PLATFORM=offscreen runs the app without a window "
                 "(with --screenshot).\n");
    return 1;
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("kvscope"));
  QApplication::setApplicationName(QStringLiteral("kvscope"));
  QApplication::setApplicationVersion(QStringLiteral(KVSCOPE_VERSION));
  // The installed desktop entry's id (packaging/): a Wayland compositor and
  // the taskbar match the window to the menu entry and its icon by it.
  QGuiApplication::setDesktopFileName(QStringLiteral("io.github.kvscope.Kvscope"));
  if (const QIcon icon = QIcon::fromTheme(QStringLiteral("io.github.kvscope.Kvscope")); !icon.isNull()) {
    QApplication::setWindowIcon(icon);  // installed: the hicolor theme has it
  }
  kvscope::ui::WheelGuard::install();  // the wheel scrolls forms, not the value under the pointer
  kvscope::ui::ToolTipWrap::install();  // long tooltips wrap

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
  QCommandLineOption workload_output_opt(
      QStringLiteral("workload-output"),
      QStringLiteral("Tokens each --workload request generates (default 64, the preset's with --workload-preset)."),
      QStringLiteral("TOKENS"));
  QCommandLineOption workload_preset_opt(
      QStringLiteral("workload-preset"),
      QStringLiteral("Start a preset workload on start: system-prompt (N requests sharing a 2,000-token system "
                     "prompt, to watch cascade attention), N from --workload (default 32)."),
      QStringLiteral("NAME"));
  QCommandLineOption shot_opt(QStringLiteral("screenshot"),
                              QStringLiteral("Save a PNG of the window to FILE, then quit."), QStringLiteral("FILE"));
  QCommandLineOption shot_ms_opt(QStringLiteral("screenshot-after-ms"),
                                 QStringLiteral("Delay before --screenshot (default 4000)."), QStringLiteral("MS"),
                                 QStringLiteral("4000"));
  QCommandLineOption frames_opt(
      QStringLiteral("measure-frames"),
      QStringLiteral("Measure the GUI thread's frame times while loading, then while what --prompt / --workload "
                     "start runs, until the engine is idle or SECONDS pass; print them as JSON and quit."),
      QStringLiteral("SECONDS"));
  QCommandLineOption settings_opt(
      QStringLiteral("settings"),
      QStringLiteral("Start with the engine settings and chat defaults of FILE (an INI file with the groups "
                     "[engine] and [chat] the app saves) for this run only; --model still overrides its model."),
      QStringLiteral("FILE"));
  QCommandLineOption show_opt(
      QStringLiteral("show"),
      QStringLiteral("Bring inspector panels to the front (repeatable): %1.")
          .arg(kvscope::ui::MainWindow::panelNames().join(QStringLiteral(", "))),
      QStringLiteral("PANEL"));
  QCommandLineOption record_opt(QStringLiteral("record"),
                                QStringLiteral("Record engine events in the Trace panel from the start."));
  QCommandLineOption trace_opt(QStringLiteral("trace"),
                               QStringLiteral("Open a saved Chrome trace (kvscope's) in the Trace panel for replay."),
                               QStringLiteral("FILE"));
  QCommandLineOption theme_opt(QStringLiteral("theme"),
                               QStringLiteral("Colour theme for this run: system, light or dark (View > Theme "
                                              "chooses one and keeps it)."),
                               QStringLiteral("THEME"));
  QCommandLineOption serve_opt(
      QStringLiteral("serve"),
      QStringLiteral("Serve the loaded model over the OpenAI-compatible API on PORT (0: any free port) once it is "
                     "loaded, with the other settings of Engine > Server… (127.0.0.1 unless set there)."),
      QStringLiteral("PORT"));
  parser.addOptions({model_opt, prompt_opt, workload_opt, workload_output_opt, workload_preset_opt, shot_opt, shot_ms_opt, frames_opt, settings_opt, show_opt, record_opt, trace_opt, serve_opt, theme_opt});
  parser.process(app);
  // Numbers first: nothing has started yet, so a bad one just ends the run.
  const std::optional<int> shot_delay = intOption(parser, shot_ms_opt, 0, 3'600'000, "a delay in milliseconds");
  std::optional<int> frames = 1;
  if (parser.isSet(frames_opt)) frames = intOption(parser, frames_opt, 1, 86'400, "a number of seconds");
  if (!shot_delay || !frames) return 2;
  const int shot_delay_ms = *shot_delay, frames_seconds = *frames;

  // A run for a settings file, a screenshot or a measurement does not take
  // the saved theme (as it does not take the saved layout): --theme sets one.
  const bool reproducible = parser.isSet(settings_opt) || parser.isSet(shot_opt) || parser.isSet(frames_opt);
  std::optional<kvscope::ui::AppTheme> theme =
      reproducible ? kvscope::ui::AppTheme::System : kvscope::ui::savedAppTheme();
  if (parser.isSet(theme_opt)) {
    theme = kvscope::ui::appThemeFromKey(parser.value(theme_opt));
    if (!theme) {
      std::fprintf(stderr, "kvscope: --theme '%s' is not system, light or dark\n",
                   qPrintable(parser.value(theme_opt)));
      return 2;
    }
  }
  // Before the window exists, so that nothing is drawn in the other colours first.
  if (*theme != kvscope::ui::AppTheme::System) kvscope::ui::applyAppTheme(*theme);

  kvscope::ui::registerEngineMetaTypes();
  kvscope::gui::EngineHost host;
  kvscope::ui::MainWindow window;
  kvscope::gui::EngineWorker* worker = host.worker();
  kvscope::ui::ChatWidget* chat = window.chat();
  kvscope::gui::connectWindowToEngine(window, host);
  using W = kvscope::gui::EngineWorker;

  // The layout the user left, unless this run is a state of its own: a
  // settings file, a screenshot or a measurement must not depend on it.
  // Before --show, which brings a panel to the front of that layout.
  if (!parser.isSet(settings_opt) && !parser.isSet(shot_opt) && !parser.isSet(frames_opt)) window.restoreLayout();
  for (const QString& panel : parser.values(show_opt)) {
    if (!window.showPanel(panel))
      qWarning("kvscope: --show: no panel called %s (known: %s)", qPrintable(panel),
               qPrintable(kvscope::ui::MainWindow::panelNames().join(QStringLiteral(", "))));
  }
  if (parser.isSet(record_opt)) window.tracePanel()->setRecording(true);
  if (parser.isSet(trace_opt) && !window.tracePanel()->loadTraceFile(parser.value(trace_opt)))
    qWarning("kvscope: %s", qPrintable(window.tracePanel()->messageText()));

  if (parser.isSet(serve_opt)) {
    bool ok = false;
    const int port = parser.value(serve_opt).toInt(&ok);
    if (!ok || port < 0 || port > 65535) {
      std::fprintf(stderr, "kvscope: --serve: %s is not a port (0-65535)\n", qPrintable(parser.value(serve_opt)));
      return 2;
    }
    // For this run: shown in the dialog, not saved; the server waits for the model.
    kvscope::ui::ServerSettings settings = window.serverDialog()->settings();
    settings.port = port;
    window.serverDialog()->setSettings(settings);
    emit window.serverDialog()->startRequested(settings);
    QObject::connect(host.server(), &kvscope::gui::ServerController::stateChanged, &window,
                     [](kvscope::gui::ServerController::State state, const QString& message) {
                       using State = kvscope::gui::ServerController::State;
                       if (state == State::Serving || state == State::Failed)
                         std::fprintf(stderr, "kvscope: %s\n", qPrintable(message));
                     });
  }

  // Start-up actions run once, after the first successful load.
  const QString prompt = parser.value(prompt_opt);
  if (parser.isSet(prompt_opt) && prompt.trimmed().isEmpty())
    std::fprintf(stderr, "kvscope: --prompt is empty: nothing will be sent\n");
  int workload = 0;
  if (parser.isSet(workload_opt)) {
    const std::optional<int> n = intOption(parser, workload_opt, 1, 10'000, "a number of requests");
    if (!n) return 2;
    workload = *n;
  }
  std::optional<kvscope::ui::WorkloadSpec> workload_spec;
  if (parser.isSet(workload_preset_opt)) {
    kvscope::ui::WorkloadSpec spec;
    if (!kvscope::ui::findWorkloadPreset(parser.value(workload_preset_opt), workload, &spec)) {
      QStringList known;
      for (const kvscope::ui::WorkloadPreset& preset : kvscope::ui::workloadPresets()) known << preset.key;
      std::fprintf(stderr, "kvscope: --workload-preset: no preset called %s (known: %s)\n",
                   qPrintable(parser.value(workload_preset_opt)), qPrintable(known.join(QStringLiteral(", "))));
      return 2;
    }
    workload_spec = spec;
  } else if (workload > 0) {
    workload_spec = kvscope::ui::WorkloadSpec{};
    workload_spec->num_requests = workload;
  }
  if (parser.isSet(workload_output_opt)) {
    const std::optional<int> tokens = intOption(parser, workload_output_opt, 1, 1'000'000, "a token count");
    if (!tokens) return 2;
    if (!workload_spec) {
      std::fprintf(stderr, "kvscope: --workload-output needs --workload or --workload-preset\n");
      return 2;
    }
    workload_spec->output_len = *tokens;
  }
  auto once = std::make_shared<QMetaObject::Connection>();
  *once = QObject::connect(worker, &W::modelLoaded, &window, [&, once] {
    QObject::disconnect(*once);
    if (workload_spec) window.startWorkload(*workload_spec);
    if (!prompt.isEmpty()) chat->sendPrompt(prompt);
  });

  kvscope::EngineConfig config = window.engineConfig();
  const QString settings_file = parser.value(settings_opt);
  QStringList settings_problems;
  if (parser.isSet(settings_opt)) {
    QString error;
    const auto from_file = kvscope::ui::loadEngineConfigFromFile(settings_file, &error, &settings_problems);
    if (!from_file) {
      std::fprintf(stderr, "kvscope: --settings %s: %s\n", qPrintable(settings_file), qPrintable(error));
      return 2;
    }
    config = *from_file;
    window.setPersistSettings(false);  // a state for this run, not the user's saved settings
    QSettings ini(settings_file, QSettings::IniFormat);
    window.setChatDefaults(kvscope::ui::loadChatDefaults(ini, &settings_problems));
    for (const QString& p : settings_problems)
      std::fprintf(stderr, "kvscope: --settings %s: %s\n", qPrintable(settings_file), qPrintable(p));
  }
  // With --settings the file alone says which model (its model_path, else the default).
  const kvscope::gui::StartupModel model = kvscope::gui::chooseStartupModel(
      parser.value(model_opt), parser.isSet(settings_opt) ? QString::fromStdString(config.model_path) : QString(),
      parser.isSet(settings_opt) ? QString() : QString::fromStdString(config.model_path), defaultModelPath());
  config.model_path = model.path.toStdString();
  if (!model.note.isEmpty()) std::fprintf(stderr, "kvscope: %s\n", qPrintable(model.note));
  if (!model.exists && parser.isSet(frames_opt)) {
    // A measurement has nothing to measure, and no one to answer a dialog.
    std::fprintf(stderr, "kvscope: --measure-frames: no model at %s\n", config.model_path.c_str());
    return 1;
  }
  window.show();
  if (!settings_problems.isEmpty()) {
    window.statusBar()->showMessage(
        QObject::tr("Settings file %1: %2").arg(settings_file, settings_problems.join(QStringLiteral("; "))), 30000);
  } else if (!model.note.isEmpty()) {
    window.statusBar()->showMessage(model.note, 15000);
  }
  if (model.exists) {
    window.loadEngine(config);
  } else if (model.source == kvscope::gui::StartupModel::Source::Default) {
    // First run: offer to download the default model (or to open another).
    kvscope::gui::offerDefaultModel(window, config, QString::fromStdString(kvscope::fetch::default_model_dir()));
  } else {
    window.onLoadFailed(kvscope::gui::missingModelMessage(model, settings_file));
  }

  if (parser.isSet(shot_opt)) {
    const QString file = parser.value(shot_opt);
    QTimer::singleShot(shot_delay_ms, &window, [&window, file] {
      const bool ok = window.grab().save(file);
      if (!ok) qWarning("kvscope: cannot write %s", qPrintable(file));
      QApplication::exit(ok ? 0 : 1);
    });
  }

  // Frame times: from start-up through the model load, then while what
  // --prompt / --workload started runs (frame_measurement.h).
  if (parser.isSet(frames_opt)) {
    auto* measurement =
        new kvscope::gui::FrameMeasurement(worker, frames_seconds, workload, &window);
    QObject::connect(measurement, &kvscope::gui::FrameMeasurement::measured, &window, [](const QString& json) {
      std::printf("%s\n", qPrintable(json));
      std::fflush(stdout);
      QApplication::exit(0);
    });
    QObject::connect(worker, &W::loadFailed, &window, [] { QApplication::exit(1); });
  }

  const int rc = app.exec();
  host.shutdown();  // stop and join the engine thread before the window goes
  return rc;
}
