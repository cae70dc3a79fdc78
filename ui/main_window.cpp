// MainWindow (see main_window.h): where the docks, menus, settings and the
// worker's results meet; what has logic of its own lives in its widget, its
// dialog or models/. Its conversations (the chat <-> the store, new, open,
// delete, export, saving a reply on close) are main_window_conversations.cpp.
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QDateTime>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHash>
#include <QActionGroup>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QMessageBox>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "app_theme.h"
#include "block_map_widget.h"
#include "live_label.h"
#include "chat_widget.h"
#include "dock_share_keeper.h"
#include "conversation_list_widget.h"
#include "invariance_panel.h"
#include "engine_settings.h"
#include "models/block_table_model.h"
#include "models/chat_store.h"
#include "models/rank_text.h"
#include "plots_widget.h"
#include "memory_panel.h"
#include "server_dialog.h"
#include "server_request_tags.h"
#include "settings_dialog.h"
#include "shared_prefix_panel.h"
#include "spec_plots.h"
#include "trace_panel.h"
#include "window_fit.h"
#include "workload_dialog.h"

namespace kvscope::ui {
namespace {

// The window width the docks' default widths were chosen for.
constexpr int kDesignedWidth = 1500;

QString kvSummary(const EngineSnapshot& s) {
  int num_shared = 0;
  for (const BlockSnapshot& b : s.blocks) num_shared += b.shared() ? 1 : 0;
  return QObject::tr("used %1 / %2 · cached-free %3 · shared %4 · waste %5% · prefix hits %6% · "
                     "preemptions %7")
      .arg(s.kv.num_used_blocks)
      .arg(s.kv.num_blocks)
      .arg(s.kv.num_cached_free_blocks)
      .arg(num_shared)
      .arg(s.kv.waste_percent(), 0, 'f', 1)
      .arg(100.0 * s.kv.prefix_hit_rate(), 0, 'f', 0)
      .arg(s.kv.num_preemptions);
}



}  // namespace

MainWindow::MainWindow(QWidget* parent, const QString& chat_store_path)
    : QMainWindow(parent), store_(std::make_unique<ChatStore>(chat_store_path)) {
  setWindowTitle(tr("kvscope"));
  QSettings settings;
  QStringList problems;
  config_ = loadEngineConfig(settings, &problems);
  const qsizetype engine_problems = problems.size();
  chat_defaults_ = loadChatDefaults(settings, &problems);
  // "Reset" means reset: the chat defaults as used are written back, so an
  // unusable value is not reported again on every start (the engine's are
  // written back once a model loads with them). Once the event loop runs:
  // main() turns persistence off first for a --settings run.
  if (problems.size() > engine_problems) {
    QTimer::singleShot(0, this, [this] {
      if (!persist_settings_) return;
      QSettings later;
      saveChatDefaults(later, chat_defaults_);
    });
  }
  setAcceptDrops(true);
  chat_ = new ChatWidget(this);
  chat_->setConversationSettings(chat_defaults_);
  setCentralWidget(chat_);
  // Room for the chat beside the inspector's docks, within the screen; set
  // before the docks, whose widths follow it.
  resize(fittedWindowSize(QSize(kDesignedWidth, 920), screen() ? screen()->availableGeometry() : QRect()));
  createDocks();
  createActions();
  model_label_ = new LiveLabel(this);
  model_label_->setElided(true);  // a narrow window shows its start and "…", not a cut word
  model_label_->setText(tr("no model"));
  step_label_ = new LiveLabel(this);
  statusBar()->addWidget(model_label_, 1);
  statusBar()->addPermanentWidget(step_label_);
  server_dialog_ = new ServerDialog(this);
  auto* server_label = new QLabel(this);
  server_label->setObjectName(QStringLiteral("serverSummary"));
  statusBar()->addPermanentWidget(server_label);
  connect(server_dialog_, &ServerDialog::summaryChanged, server_label, &QLabel::setText);

  // Startup messages wait for the event loop: shown before the window is,
  // a status-bar message does not hide the model summary beside it, and the
  // two were drawn over each other.
  for (const QString& p : problems) qWarning("kvscope: saved settings: %s", qPrintable(p));
  if (!problems.isEmpty()) {
    const QString message =
        tr("Some saved settings were unusable and were reset: %1").arg(problems.join(QStringLiteral("; ")));
    QTimer::singleShot(0, this, [this, message] { statusBar()->showMessage(message, 15000); });
  }
  conversations_->setStore(store_.get());
  if (!store_->is_open()) {
    qWarning("kvscope: conversations are not saved: %s", qPrintable(store_->lastError()));
    QTimer::singleShot(0, this, [this, error = store_->lastError()] { reportStoreError(error); });
  }
  connect(chat_, &ChatWidget::userTurnAdded, this, &MainWindow::onUserTurnAdded);
  connect(chat_, &ChatWidget::turnsRemoved, this, &MainWindow::onTurnsRemoved);
  connect(chat_, &ChatWidget::replyStarted, this, &MainWindow::onReplyStarted);
  connect(chat_, &ChatWidget::replyFinished, this, &MainWindow::onReplyFinished);
  connect(chat_, &ChatWidget::alternativeSelected, this, &MainWindow::onAlternativeSelected);
  connect(chat_, &ChatWidget::settingsRequested, this, &MainWindow::showConversationSettings);
  connect(conversations_, &ConversationListWidget::conversationSelected, this, &MainWindow::openConversation);
  connect(conversations_, &ConversationListWidget::conversationDeleted, this, &MainWindow::onConversationDeleted);
  connect(conversations_, &ConversationListWidget::newRequested, this, &MainWindow::newConversation);
  connect(conversations_, &ConversationListWidget::storeError, this, &MainWindow::reportStoreError);
}

MainWindow::~MainWindow() = default;

void MainWindow::showErrorBox(const QString& title, const QString& message) {
  // Non-modal: the engine keeps streaming while the box is up.
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
  box->setTextFormat(Qt::PlainText);  // engine messages quote paths and text, never markup
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::createActions() {
  auto* open = new QAction(tr("&Open model…"), this);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, &MainWindow::openModel);
  auto* new_chat = new QAction(tr("&New chat"), this);
  new_chat->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
  connect(new_chat, &QAction::triggered, this, &MainWindow::newConversation);
  auto* export_chat = new QAction(tr("&Export conversation…"), this);
  export_chat->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  export_chat->setToolTip(tr("Save the conversation shown as Markdown or JSON"));
  connect(export_chat, &QAction::triggered, this, &MainWindow::showExportDialog);
  auto* chat_settings = new QAction(tr("Conversation &settings…"), this);
  chat_settings->setToolTip(tr("System prompt, sampling and number of replies of this conversation"));
  connect(chat_settings, &QAction::triggered, this, &MainWindow::showConversationSettings);
  auto* regenerate = new QAction(tr("&Regenerate reply"), this);
  regenerate->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  connect(regenerate, &QAction::triggered, chat_, &ChatWidget::regenerate);
  auto* workload = new QAction(tr("&Workload…"), this);
  workload->setToolTip(tr("Start N synthetic concurrent requests with a shared prefix"));
  connect(workload, &QAction::triggered, this, &MainWindow::showWorkloadDialog);
  auto* stop_workload = new QAction(tr("S&top workload"), this);
  stop_workload->setToolTip(tr("Cancel the synthetic requests, running or still to arrive"));
  stop_workload->setObjectName(QStringLiteral("stop_workload"));
  stop_workload->setEnabled(false);  // until a workload runs (onWorkloadActive)
  stop_workload_ = stop_workload;
  connect(stop_workload, &QAction::triggered, this, &MainWindow::workloadStopRequested);
  auto* server = new QAction(tr("Ser&ver…"), this);
  server->setToolTip(tr("Serve the loaded model over an OpenAI-compatible HTTP API"));
  connect(server, &QAction::triggered, this, &MainWindow::showServerDialog);
  auto* settings = new QAction(tr("&Settings…"), this);
  // Ctrl+, everywhere; the platform's own preferences key too where it has one.
  settings->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Comma), QKeySequence(QKeySequence::Preferences)});
  connect(settings, &QAction::triggered, this, &MainWindow::showSettings);
  auto* quit = new QAction(tr("&Quit"), this);
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  rebuildRecentMenu();
  file->addActions({new_chat, export_chat});
  file->addSeparator();
  file->addAction(quit);
  QMenu* chat = menuBar()->addMenu(tr("&Chat"));
  chat->addActions({regenerate, chat_settings});
  QMenu* engine = menuBar()->addMenu(tr("&Engine"));
  engine->addActions({workload, stop_workload, server, settings});
  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
  view->addSeparator();
  // Where speculation paid, in the reply being written; only with a proposer on.
  draft_tint_action_ = view->addAction(tr("&Tint accepted draft tokens"));
  draft_tint_action_->setObjectName(QStringLiteral("draft_tint_action"));
  draft_tint_action_->setCheckable(true);
  draft_tint_action_->setChecked(chat_->draftTint());
  draft_tint_action_->setEnabled(config_.spec != kvscope::SpecMethod::Off);
  connect(draft_tint_action_, &QAction::toggled, chat_, &ChatWidget::setDraftTint);
  // Light or dark whatever the desktop gives a Qt application (app_theme.h).
  QMenu* theme_menu = view->addMenu(tr("T&heme"));
  auto* themes = new QActionGroup(this);
  for (const auto& [theme, label] : {std::pair{AppTheme::System, tr("&System")}, {AppTheme::Light, tr("&Light")},
                                     {AppTheme::Dark, tr("&Dark")}}) {
    QAction* action = theme_menu->addAction(label);
    action->setObjectName(QStringLiteral("theme_") + appThemeKey(theme));
    action->setCheckable(true);
    action->setChecked(currentAppTheme() == theme);
    themes->addAction(action);
    connect(action, &QAction::triggered, this, [theme] {
      applyAppTheme(theme);
      saveAppTheme(theme);
    });
  }

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("main_toolbar"));
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  bar->addActions({open, new_chat, workload, stop_workload, server, settings});
}

void MainWindow::createDocks() {
  auto* map_panel = new QWidget(this);
  auto* map_layout = new QVBoxLayout(map_panel);
  map_layout->setContentsMargins(2, 2, 2, 2);
  block_map_ = new BlockMapWidget(map_panel);
  block_map_->setAccessibleName(tr("KV block map"));
  kv_summary_ = new LiveLabel(map_panel);
  kv_summary_->setWordWrap(true);
  // The counters run since the pool was built (a settings change that
  // rebuilds it starts them again): a learner read "prefix hits" as the
  // last workload's share.
  kv_summary_->setToolTip(
      tr("used: blocks held by sequences · cached-free: unowned, still findable by prefix hash · shared: held by "
         "more than one sequence · waste: reserved slots not yet written · prefix hits: prompt tokens the prefix "
         "cache served, of all it was asked for, and preemptions, both counted since the KV pool was built "
         "(the model loaded, or settings that rebuilt it)"));
  block_map_legend_text_ = tr("colour = request · deeper = fuller · ◤ shared · "
                              "<span style='color:#e68700'>◢</span> read once by cascade attention · "
                              "<span style='color:#c8143c'>✕</span> freed by a context shift (for %1 s) · "
                              "<span style='color:#6482aa'>■</span> cached-free · "
                              "<span style='color:#bbbbbb'>■</span> free · click a block to pick its requests")
                              .arg(kDroppedMarkSeconds);
  auto* legend = new QLabel(block_map_legend_text_, map_panel);
  block_map_legend_ = legend;
  legend->setObjectName(QStringLiteral("blockMapLegend"));
  legend->setWordWrap(true);
  map_layout->addWidget(kv_summary_);
  map_layout->addWidget(block_map_, 1);
  map_layout->addWidget(legend);

  createSequencesTable();

  plots_ = new PlotsWidget(this);
  trace_panel_ = new TracePanel(this);
  memory_panel_ = new MemoryPanel(this);
  connect(memory_panel_, &MemoryPanel::applyRequested, this, &MainWindow::loadEngine);
  shared_prefixes_ = new SharedPrefixPanel(this);
  invariance_panel_ = new InvariancePanel(this);
  invariance_panel_->setPromptSource([this] { return chat_->lastPromptAsSent(); });
  connect(chat_, &ChatWidget::sendRequested, invariance_panel_, &InvariancePanel::promptSourceChanged);
  conversations_ = new ConversationListWidget(this);

  // Tall panels (the plot strips, the trace, memory with its what-if) scroll
  // in a short dock rather than making the window taller than a laptop screen.
  auto scrollable = [this](QWidget* w) {
    auto* area = new QScrollArea(this);
    area->setWidget(w);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
  };
  auto addDock = [this](const QString& title, const QString& name, QWidget* w) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(w);
    // Qt keeps a tabbed dock whose tab is not selected "visible", moved off
    // screen, so Tab walked into its controls (and Space changed what
    // nobody could see). Its content is disabled while it is not shown,
    // which takes it out of the focus chain.
    connect(dock, &QDockWidget::visibilityChanged, w, [w](bool visible) { w->setEnabled(visible); });
    addDockWidget(Qt::RightDockWidgetArea, dock);
    return dock;
  };
  QDockWidget* map_dock = addDock(tr("KV blocks"), QStringLiteral("kv_blocks_dock"), map_panel);
  QDockWidget* table_dock = addDock(tr("Sequences"), QStringLiteral("sequences_dock"), table_view_);
  QDockWidget* plots_dock = addDock(tr("Plots"), QStringLiteral("plots_dock"), scrollable(plots_));
  QDockWidget* trace_dock = addDock(tr("Trace"), QStringLiteral("trace_dock"), scrollable(trace_panel_));
  QDockWidget* memory_dock = addDock(tr("Memory"), QStringLiteral("memory_dock"), scrollable(memory_panel_));
  QDockWidget* prefixes_dock = addDock(tr("Shared prefixes"), QStringLiteral("shared_prefixes_dock"), shared_prefixes_);
  tabifyDockWidget(table_dock, prefixes_dock);
  tabifyDockWidget(plots_dock, memory_dock);
  tabifyDockWidget(plots_dock, trace_dock);
  tabifyDockWidget(plots_dock, addDock(tr("Invariance"), QStringLiteral("invariance_dock"), scrollable(invariance_panel_)));
  table_dock->raise();
  plots_dock->raise();
  auto* list_dock = new QDockWidget(tr("Conversations"), this);
  list_dock->setObjectName(QStringLiteral("conversations_dock"));
  list_dock->setWidget(conversations_);
  addDockWidget(Qt::LeftDockWidgetArea, list_dock);
  const DockWidths widths = dockWidths(width(), kDesignedWidth, list_dock->minimumSizeHint().width());
  resizeDocks({list_dock, map_dock}, {widths.list, widths.inspector}, Qt::Horizontal);
  resizeDocks({map_dock, table_dock, plots_dock}, {300, 200, 380}, Qt::Vertical);
  new DockShareKeeper(this, {list_dock, map_dock});  // a child: the window's resizes keep the docks' shares
}

namespace {
// QSettings keys of the window's layout, and the version of the dock
// arrangement saveState() records: bump it when docks are added or renamed.
constexpr char kLayoutGeometryKey[] = "window/geometry";
constexpr char kLayoutStateKey[] = "window/dock_state";
constexpr int kLayoutVersion = 1;
}  // namespace

bool MainWindow::restoreLayout() {
  QSettings settings;
  const QByteArray geometry = settings.value(QLatin1String(kLayoutGeometryKey)).toByteArray();
  const QByteArray state = settings.value(QLatin1String(kLayoutStateKey)).toByteArray();
  if (geometry.isEmpty() || state.isEmpty()) return false;
  // A state of another version (docks added or renamed since) is refused by
  // Qt, and the designed layout stays.
  return restoreGeometry(geometry) && restoreState(state, kLayoutVersion);
}

void MainWindow::saveLayout() const {
  QSettings settings;
  settings.setValue(QLatin1String(kLayoutGeometryKey), saveGeometry());
  settings.setValue(QLatin1String(kLayoutStateKey), saveState(kLayoutVersion));
}

void MainWindow::onWorkloadActive(bool active) {
  stop_workload_->setEnabled(active);
  stop_workload_->setToolTip(active ? tr("Cancel the synthetic requests, running or still to arrive")
                                    : tr("No workload is running (Engine › Workload… starts one)"));
}

void MainWindow::loadEngine(const kvscope::EngineConfig& config) {
  requested_config_ = config;
  if (!model_info_.name.empty() && config.model_path == config_.model_path) {
    statusBar()->showMessage(tr("Applying the new settings…"), 3000);
  } else {
    const QString path = QString::fromStdString(config.model_path);
    chat_->onModelLoading(QFileInfo(path).fileName());
    model_label_->setText(tr("loading %1…").arg(path));
  }
  emit loadModelRequested(config);
}

void MainWindow::acceptConfig(const kvscope::ModelInfo& info) {
  config_ = requested_config_;
  model_info_ = info;
  if (persist_settings_) {
    QSettings settings;
    saveEngineConfig(settings, config_);
    addRecentModel(settings, QString::fromStdString(config_.model_path));
    rebuildRecentMenu();
  }
  showModelLabel(info);
  memory_panel_->setModel(info, config_);
  shared_prefixes_->setModelInfo(info);
  shared_prefixes_->setEngineConfig(config_);
  invariance_panel_->setBaseConfig(config_);
  plots_->specPlots()->setSpecMethod(config_.spec);
  draft_tint_action_->setEnabled(config_.spec != kvscope::SpecMethod::Off);
}

const QStringList& MainWindow::panelNames() {
  static const QStringList kNames = {QStringLiteral("blocks"), QStringLiteral("sequences"), QStringLiteral("prefixes"),
                                     QStringLiteral("plots"),  QStringLiteral("memory"),    QStringLiteral("trace"),
                                     QStringLiteral("invariance")};
  return kNames;
}

bool MainWindow::showPanel(const QString& name) {
  static const QHash<QString, QString> kDocks{{QStringLiteral("blocks"), QStringLiteral("kv_blocks_dock")},
                                              {QStringLiteral("sequences"), QStringLiteral("sequences_dock")},
                                              {QStringLiteral("prefixes"), QStringLiteral("shared_prefixes_dock")},
                                              {QStringLiteral("plots"), QStringLiteral("plots_dock")},
                                              {QStringLiteral("memory"), QStringLiteral("memory_dock")},
                                              {QStringLiteral("trace"), QStringLiteral("trace_dock")},
                                              {QStringLiteral("invariance"), QStringLiteral("invariance_dock")}};
  const QString object_name = kDocks.value(name.toLower());
  if (object_name.isEmpty()) return false;  // findChild("") would match any dock
  auto* dock = findChild<QDockWidget*>(object_name);
  if (!dock) return false;
  dock->show();
  dock->raise();
  return true;
}

void MainWindow::setChatDefaults(const ConversationSettings& defaults) {
  chat_defaults_ = defaults;
  if (chat_->turns().empty() && !chat_->busy()) chat_->setConversationSettings(defaults);
}

void MainWindow::startWorkload(const WorkloadSpec& spec) {
  workload_ = spec;
  emit workloadRequested(spec);
}

void MainWindow::openModel() {
  const QString start = QFileInfo(QString::fromStdString(config_.model_path)).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), start,
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (path.isEmpty()) return;
  kvscope::EngineConfig c = config_;
  c.model_path = path.toStdString();
  loadEngine(c);
}

void MainWindow::showSettings() {
  QSettings settings;
  SettingsDialog dialog(config_, chat_defaults_, recentModels(settings), this);
  if (!model_info_.name.empty() || model_info_.num_layers > 0)
    dialog.setModelShape(QString::fromStdString(config_.model_path), kvscope::model_shape(model_info_));
  if (dialog.exec() != QDialog::Accepted) return;
  if (dialog.chatDefaultsChanged()) {
    chat_defaults_ = dialog.chatDefaults();
    if (persist_settings_) saveChatDefaults(settings, chat_defaults_);
  }
  if (dialog.engineChanged()) loadEngine(dialog.config());
}

void MainWindow::showWorkloadDialog() {
  WorkloadDialog dialog(workload_, this);
  if (dialog.exec() == QDialog::Accepted) startWorkload(dialog.spec());
}

void MainWindow::showServerDialog() {
  server_dialog_->show();
  server_dialog_->raise();
  server_dialog_->activateWindow();
}

void MainWindow::onLoadProgress(double fraction, const QString& stage) {
  chat_->onLoadProgress(fraction, stage);
  model_label_->setText(tr("loading %1: %2% · %3")
                            .arg(QString::fromStdString(requested_config_.model_path))
                            .arg(qRound(100.0 * fraction))
                            .arg(stage));
}

void MainWindow::onModelLoaded(const kvscope::ModelInfo& info) {
  chat_->onModelLoaded(info);
  plots_->clear();
  acceptConfig(info);
  showSettingWarnings(info);
}

void MainWindow::showSettingWarnings(const kvscope::ModelInfo& info) {
  if (info.setting_warnings.empty()) return;
  QStringList warnings;
  for (const std::string& w : info.setting_warnings) warnings.append(QString::fromStdString(w));
  statusBar()->showMessage(tr("Note: %1").arg(warnings.join(QStringLiteral("; "))), 15000);
}

void MainWindow::onReconfigured(const kvscope::ModelInfo& info, bool in_place) {
  acceptConfig(info);
  chat_->onReconfigured(info);
  QString applied = tr("Settings applied: %1 KV blocks of %2 tokens").arg(info.num_kv_blocks).arg(info.block_size);
  if (in_place)
    applied += tr(", from the next step; nothing was recomputed.");
  else if (num_unfinished_ > 0)
    applied += num_unfinished_ == 1 ? tr("; the unfinished request was re-queued (its K/V is computed again).")
                                    : tr("; the %1 unfinished requests were re-queued (their K/V is computed again).")
                                          .arg(num_unfinished_);
  else
    applied += QLatin1Char('.');
  statusBar()->showMessage(applied, 8000);
  showSettingWarnings(info);
}

void MainWindow::showModelLabel(const kvscope::ModelInfo& info) {
  model_label_->setText(tr("%1 (%2, %3 layers) · %4 KV blocks × %5 tokens · %6 · %7")
                            .arg(QString::fromStdString(info.name), QString::fromStdString(info.architecture))
                            .arg(info.num_layers)
                            .arg(info.num_kv_blocks)
                            .arg(info.block_size)
                            .arg(config_.paged ? tr("paged") : tr("contiguous"))
                            .arg(!config_.paged             ? tr("no prefix caching (contiguous)")
                                 : config_.prefix_caching ? tr("prefix caching on")
                                                          : tr("prefix caching off")));
  setWindowTitle(tr("kvscope — %1").arg(QString::fromStdString(info.name)));
}

void MainWindow::onLoadFailed(const QString& message, bool previous_kept) {
  if (previous_kept && !model_info_.name.empty()) {
    chat_->onModelKept(model_info_);
    showModelLabel(model_info_);
    showErrorBox(tr("Cannot load the model"),
              tr("%1\n\n%2 is still loaded.").arg(message, QString::fromStdString(model_info_.name)));
    return;
  }
  model_info_ = {};
  if (!requested_config_.model_path.empty()) config_ = requested_config_;  // Settings shows what failed, to fix it
  chat_->setStatus(tr("no model loaded"));
  model_label_->setText(tr("no model"));
  showErrorBox(tr("Cannot load the model"), message);
}

void MainWindow::onSnapshot(const kvscope::ui::SnapshotPtr& snapshot) {
  if (!snapshot) return;
  block_map_->setSnapshot(snapshot);
  memory_panel_->setSnapshot(snapshot);
  shared_prefixes_->setSnapshot(snapshot);
  // Taken before the update: rows moving under the selection report a new
  // current row (currentRowChanged) for whatever sequence lands there.
  const auto chosen = focused_sequence_;
  table_model_->setSnapshot(snapshot);
  focused_sequence_ = chosen;
  keepSequenceSelected();
  plots_->addSnapshot(snapshot);
  chat_->onSnapshot(snapshot);
  const QString pause_note = spec_pauses_.update(*snapshot, QDateTime::currentMSecsSinceEpoch());
  if (!pause_note.isEmpty()) statusBar()->showMessage(pause_note, 10000);
  kv_summary_->setText(kvSummary(*snapshot));
  num_unfinished_ = snapshot->num_running + snapshot->num_waiting + snapshot->num_swapped;
  const QString ranks = blockSharedAcrossRanksText(snapshot->tensor_parallel);
  block_map_legend_->setText(ranks.isEmpty() ? block_map_legend_text_
                                             : block_map_legend_text_ + QStringLiteral(" · ") + ranks);
  // A count of steps done: the panels name a step by its 0-based number
  // (StepStats::step), which is one less, and "step 1965" beside "Last step
  // (1964)" read as two clocks.
  step_label_->setText(tr("%1 · running %2 · waiting %3 · swapped %4 · %5 ms/step")
                           .arg(snapshot->step == 1 ? tr("1 step") : tr("%1 steps").arg(snapshot->step))
                           .arg(snapshot->num_running)
                           .arg(snapshot->num_waiting)
                           .arg(snapshot->num_swapped)
                           .arg(snapshot->last_step.step_time_s * 1000.0, 0, 'f', 1));
}

void MainWindow::onError(const QString& message) {
  chat_->onError(message);
  showErrorBox(tr("Engine error"), message);
}

void MainWindow::rebuildRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  QSettings settings;
  const QStringList recent = recentModels(settings);
  for (const QString& path : recent) {
    QAction* a = recent_menu_->addAction(QFileInfo(path).fileName());
    a->setToolTip(path);
    connect(a, &QAction::triggered, this, [this, path] {
      kvscope::EngineConfig c = config_;
      c.model_path = path.toStdString();
      loadEngine(c);
    });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (url.isLocalFile() && url.toLocalFile().endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) {
      event->acceptProposedAction();
      return;
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (!url.isLocalFile()) continue;
    kvscope::EngineConfig c = config_;
    c.model_path = url.toLocalFile().toStdString();
    event->acceptProposedAction();
    loadEngine(c);  // a bad file ends in onLoadFailed's dialog
    return;
  }
}

}  // namespace kvscope::ui
