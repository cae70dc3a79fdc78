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
#include "conversation_list_widget.h"
#include "engine_settings.h"
#include "models/block_table_model.h"
#include "models/chat_store.h"
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

// A conversation's title from its first prompt: the first line, shortened.
QString titleFromPrompt(const QString& prompt) {
  QString title = prompt.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
  if (title.size() > 48) title = title.left(47) + QStringLiteral("…");
  return title;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent, const QString& chat_store_path)
    : QMainWindow(parent), store_(std::make_unique<ChatStore>(chat_store_path)) {
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

  conversations_->setStore(store_.get());
  if (!store_->is_open()) {
    qWarning("kvscope: conversations are not saved: %s", qPrintable(store_->lastError()));
    reportStoreError(store_->lastError());
  }
  connect(chat_, &ChatWidget::sendRequested, this, &MainWindow::onChatSent);
  connect(chat_, &ChatWidget::replyStarted, this, &MainWindow::onReplyStarted);
  connect(chat_, &ChatWidget::replyFinished, this, &MainWindow::onReplyFinished);
  connect(conversations_, &ConversationListWidget::conversationSelected, this, &MainWindow::openConversation);
  connect(conversations_, &ConversationListWidget::conversationDeleted, this, &MainWindow::onConversationDeleted);
  connect(conversations_, &ConversationListWidget::newRequested, this, &MainWindow::newConversation);
  connect(conversations_, &ConversationListWidget::storeError, this, &MainWindow::reportStoreError);
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions() {
  auto* open = new QAction(tr("&Open model…"), this);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, &MainWindow::openModel);
  auto* new_chat = new QAction(tr("&New chat"), this);
  new_chat->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
  connect(new_chat, &QAction::triggered, this, &MainWindow::newConversation);
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
  conversations_ = new ConversationListWidget(this);

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
  auto* list_dock = new QDockWidget(tr("Conversations"), this);
  list_dock->setObjectName(QStringLiteral("conversations_dock"));
  list_dock->setWidget(conversations_);
  addDockWidget(Qt::LeftDockWidgetArea, list_dock);
  resizeDocks({list_dock, map_dock}, {240, 820}, Qt::Horizontal);
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

void MainWindow::newConversation() {
  chat_->newChat();
  if (untitled_ && conversation_id_ >= 0) return;  // the empty one already made
  conversation_id_ = -1;
  untitled_ = false;
  if (!store_->is_open()) return;
  const qint64 id = store_->create_conversation(tr("New chat"));
  if (id < 0) return reportStoreError(store_->lastError());
  conversation_id_ = id;
  untitled_ = true;
  conversations_->refresh(id);
}

void MainWindow::openConversation(qint64 id) {
  if (id == conversation_id_ || !store_->is_open()) return;
  if (chat_->busy()) {
    statusBar()->showMessage(tr("Stop the reply before opening another conversation."), 5000);
    conversations_->refresh(conversation_id_);
    return;
  }
  const std::vector<StoredMessage> messages = store_->messages(id);
  if (!store_->lastError().isEmpty()) return reportStoreError(store_->lastError());
  ChatHistory history;
  // An empty assistant turn is kept as it is: a reply stopped before its first
  // token, or the placeholder of one that never finished (the app ended).
  for (const StoredMessage& m : messages) history.push_back({m.role.toStdString(), m.content.toStdString()});
  chat_->setHistory(history);
  conversation_id_ = id;
  untitled_ = messages.empty() && conversations_->currentTitle() == tr("New chat");
}

void MainWindow::onChatSent(const ChatHistory& history) {
  if (!store_->is_open() || history.empty()) return;
  const QString prompt = QString::fromStdString(history.back().content);
  if (conversation_id_ < 0) {
    conversation_id_ = store_->create_conversation(titleFromPrompt(prompt));
    if (conversation_id_ < 0) return reportStoreError(store_->lastError());
  } else if (untitled_) {
    if (!store_->rename_conversation(conversation_id_, titleFromPrompt(prompt))) reportStoreError(store_->lastError());
  }
  untitled_ = false;
  if (store_->append_message(conversation_id_, QString::fromStdString(history.back().role), prompt) < 0)
    reportStoreError(store_->lastError());
  conversations_->refresh(conversation_id_);
}

void MainWindow::onReplyStarted() {
  // A placeholder now, completed on finish: the turn order survives a crash.
  reply_conversation_ = conversation_id_;
  if (reply_conversation_ < 0 || !store_->is_open()) return;
  if (store_->append_message(reply_conversation_, QStringLiteral("assistant"), QString()) < 0) {
    reportStoreError(store_->lastError());
    reply_conversation_ = -1;
  }
}

void MainWindow::onReplyFinished(const QString& content) {
  const qint64 id = reply_conversation_;
  reply_conversation_ = -1;
  if (id < 0 || !store_->is_open()) return;
  if (!store_->update_last_message(id, content)) return reportStoreError(store_->lastError());
  conversations_->refresh(conversation_id_);
}

void MainWindow::onConversationDeleted(qint64 id) {
  if (id == reply_conversation_) reply_conversation_ = -1;
  if (id != conversation_id_) return;
  conversation_id_ = -1;
  untitled_ = false;
  chat_->newChat();
}

void MainWindow::reportStoreError(const QString& message) {
  statusBar()->showMessage(tr("Conversations are not saved: %1").arg(message), 10000);
}

}  // namespace kvscope::ui
