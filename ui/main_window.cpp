// MainWindow (see main_window.h).
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

#include "block_map_widget.h"
#include "chat_widget.h"
#include "engine_settings.h"
#include "models/block_table_model.h"
#include "plots_widget.h"
#include "settings_dialog.h"
#include "workload_dialog.h"

namespace kvscope::ui {
namespace {

void showError(QWidget* parent, const QString& title, const QString& message) {
  // Non-modal: the engine keeps streaming while the box is up.
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

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

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("kvscope"));
  QSettings settings;
  config_ = loadEngineConfig(settings);
  chat_ = new ChatWidget(this);
  setCentralWidget(chat_);
  createDocks();
  createActions();
  model_label_ = new QLabel(tr("no model"), this);
  step_label_ = new QLabel(this);
  statusBar()->addWidget(model_label_, 1);
  statusBar()->addPermanentWidget(step_label_);
  resize(1500, 920);
}

void MainWindow::createActions() {
  auto* open = new QAction(tr("&Open model…"), this);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, &MainWindow::openModel);
  auto* new_chat = new QAction(tr("&New chat"), this);
  new_chat->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
  connect(new_chat, &QAction::triggered, chat_, &ChatWidget::newChat);
  auto* workload = new QAction(tr("&Workload…"), this);
  workload->setToolTip(tr("Start N synthetic concurrent requests with a shared prefix"));
  connect(workload, &QAction::triggered, this, &MainWindow::showWorkloadDialog);
  auto* settings = new QAction(tr("&Settings…"), this);
  settings->setShortcut(QKeySequence::Preferences);
  connect(settings, &QAction::triggered, this, &MainWindow::showSettings);
  auto* quit = new QAction(tr("&Quit"), this);
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addActions({open, new_chat});
  file->addSeparator();
  file->addAction(quit);
  QMenu* engine = menuBar()->addMenu(tr("&Engine"));
  engine->addActions({workload, settings});
  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("main_toolbar"));
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  bar->addActions({open, new_chat, workload, settings});
}

void MainWindow::createDocks() {
  auto* map_panel = new QWidget(this);
  auto* map_layout = new QVBoxLayout(map_panel);
  map_layout->setContentsMargins(2, 2, 2, 2);
  block_map_ = new BlockMapWidget(map_panel);
  kv_summary_ = new QLabel(map_panel);
  kv_summary_->setWordWrap(true);
  auto* legend = new QLabel(tr("colour = request · deeper = fuller · ◤ shared · "
                               "<span style='color:#6482aa'>■</span> cached-free · "
                               "<span style='color:#bbbbbb'>■</span> free · click a block to pick its requests"),
                            map_panel);
  legend->setWordWrap(true);
  map_layout->addWidget(kv_summary_);
  map_layout->addWidget(block_map_, 1);
  map_layout->addWidget(legend);

  table_model_ = new BlockTableModel(this);
  table_view_ = new QTableView(this);
  table_view_->setModel(table_model_);
  table_view_->verticalHeader()->hide();
  table_view_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  table_view_->horizontalHeader()->setStretchLastSection(true);
  table_view_->horizontalHeader()->setDefaultSectionSize(fontMetrics().horizontalAdvance(QStringLiteral("Computed")) + 16);
  table_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_view_->setWordWrap(false);
  connect(block_map_, &BlockMapWidget::requestsSelected, table_model_, &BlockTableModel::setHighlightedRequests);

  plots_ = new PlotsWidget(this);

  auto addDock = [this](const QString& title, const QString& name, QWidget* w) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(w);
    addDockWidget(Qt::RightDockWidgetArea, dock);
    return dock;
  };
  QDockWidget* map_dock = addDock(tr("KV blocks"), QStringLiteral("kv_blocks_dock"), map_panel);
  QDockWidget* table_dock = addDock(tr("Sequences"), QStringLiteral("sequences_dock"), table_view_);
  QDockWidget* plots_dock = addDock(tr("Plots"), QStringLiteral("plots_dock"), plots_);
  resizeDocks({map_dock}, {820}, Qt::Horizontal);
  resizeDocks({map_dock, table_dock, plots_dock}, {300, 200, 380}, Qt::Vertical);
}

void MainWindow::loadEngine(const kvscope::EngineConfig& config) {
  config_ = config;
  QSettings settings;
  saveEngineConfig(settings, config_);
  const QString path = QString::fromStdString(config_.model_path);
  chat_->onModelLoading(QFileInfo(path).fileName());
  model_label_->setText(tr("loading %1…").arg(path));
  plots_->clear();
  emit loadModelRequested(config_);
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
  SettingsDialog dialog(config_, this);
  if (dialog.exec() == QDialog::Accepted) loadEngine(dialog.config());
}

void MainWindow::showWorkloadDialog() {
  WorkloadDialog dialog(workload_, this);
  if (dialog.exec() == QDialog::Accepted) startWorkload(dialog.spec());
}

void MainWindow::onModelLoaded(const kvscope::ModelInfo& info) {
  chat_->onModelLoaded(info);
  model_label_->setText(tr("%1 (%2, %3 layers) · %4 KV blocks × %5 tokens · %6 · %7")
                            .arg(QString::fromStdString(info.name), QString::fromStdString(info.architecture))
                            .arg(info.num_layers)
                            .arg(info.num_kv_blocks)
                            .arg(info.block_size)
                            .arg(config_.paged ? tr("paged") : tr("contiguous"))
                            .arg(config_.prefix_caching ? tr("prefix caching on") : tr("prefix caching off")));
  setWindowTitle(tr("kvscope — %1").arg(QString::fromStdString(info.name)));
}

void MainWindow::onLoadFailed(const QString& message) {
  chat_->setStatus(tr("no model loaded"));
  model_label_->setText(tr("no model"));
  showError(this, tr("Cannot load the model"), message);
}

void MainWindow::onSnapshot(const kvscope::ui::SnapshotPtr& snapshot) {
  if (!snapshot) return;
  block_map_->setSnapshot(snapshot);
  table_model_->setSnapshot(snapshot);
  plots_->addSnapshot(snapshot);
  chat_->onSnapshot(snapshot);
  kv_summary_->setText(kvSummary(*snapshot));
  step_label_->setText(tr("step %1 · running %2 · waiting %3 · swapped %4 · %5 ms/step")
                           .arg(snapshot->step)
                           .arg(snapshot->num_running)
                           .arg(snapshot->num_waiting)
                           .arg(snapshot->num_swapped)
                           .arg(snapshot->last_step.step_time_s * 1000.0, 0, 'f', 1));
}

void MainWindow::onError(const QString& message) {
  chat_->onError(message);
  showError(this, tr("Engine error"), message);
}

}  // namespace kvscope::ui
