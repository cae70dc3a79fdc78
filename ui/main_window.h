// MainWindow: the chat in the centre, the inspector as docks on the right
// (KV block map, sequences and their block tables, plots), a toolbar and menu
// (Open model…, New chat, Workload…, Settings…). It sends commands as signals
// and takes the engine worker's results in its on*() slots; app/gui/main.cpp
// wires the two. Errors from the engine go to a message box; the app stays up.
// Conversations are saved in a ChatStore (SQLite) and listed in a left dock;
// without a usable store the chat works as before and the dock says why. The
// store mirrors the chat's turns (ChatWidget's signals), each conversation
// keeps its own settings (system prompt, sampling, n), and File > Export
// writes one as Markdown or JSON. A .gguf dropped on the window is loaded.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <QMainWindow>

#include "engine_types.h"
#include "models/chat_turn.h"
#include "models/conversation_settings.h"
#include "models/spec_pause_notices.h"

class QAction;
class QLabel;
class QMenu;
class QTableView;

namespace kvscope::ui {

class BlockMapWidget;
class BlockTableModel;
class ChatStore;
class ChatWidget;
class ConversationListWidget;
class InvariancePanel;
class LiveLabel;
class MemoryPanel;
class PlotsWidget;
class ServerDialog;
class ServerRequestTags;
class SharedPrefixPanel;
class TracePanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `chat_store_path` empty: ChatStore::defaultPath().
  explicit MainWindow(QWidget* parent = nullptr, const QString& chat_store_path = QString());
  ~MainWindow() override;

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  // A reply being written is stopped and saved first (see closing_).
  void closeEvent(QCloseEvent* event) override;

 public:

  ChatWidget* chat() const { return chat_; }
  ChatStore* chatStore() const { return store_.get(); }
  ConversationListWidget* conversationList() const { return conversations_; }
  // The conversation shown, or -1 (a new chat not saved yet).
  qint64 currentConversation() const { return conversation_id_; }
  BlockTableModel* blockTableModel() const { return table_model_; }
  TracePanel* tracePanel() const { return trace_panel_; }
  MemoryPanel* memoryPanel() const { return memory_panel_; }
  SharedPrefixPanel* sharedPrefixPanel() const { return shared_prefixes_; }
  BlockMapWidget* blockMap() const { return block_map_; }
  InvariancePanel* invariancePanel() const { return invariance_panel_; }
  // Engine > Server… (the wiring connects it to the app's server).
  ServerDialog* serverDialog() const { return server_dialog_; }
  // The Sequences table's model: BlockTableModel with server requests tagged.
  ServerRequestTags* serverRequestTags() const { return server_tags_; }
  // The settings of the engine loaded (or last asked for, when none is).
  const kvscope::EngineConfig& engineConfig() const { return config_; }
  // The loaded model; name empty when none is.
  const kvscope::ModelInfo& modelInfo() const { return model_info_; }
  // Asks for an engine built with `config` (the same model: new settings
  // applied in place). It is persisted once the engine has it.
  void loadEngine(const kvscope::EngineConfig& config);
  void startWorkload(const WorkloadSpec& spec);
  // Raises the inspector dock called `name` (sequences, prefixes, plots,
  // memory, trace, invariance, blocks); false if there is none.
  bool showPanel(const QString& name);
  // The names showPanel() takes, in the order of the docks.
  static const QStringList& panelNames();
  // Off: engine settings and chat defaults changed in this session are not
  // saved (the app was started with --settings FILE, a state for this run).
  void setPersistSettings(bool on) { persist_settings_ = on; }
  // The window's size and place and its docks' arrangement (sizes, which
  // tab is raised, floating or closed) as the last session left them, saved
  // on close while settings persist. main() restores it unless the run has
  // a state of its own (--settings, a screenshot, a measurement); false when
  // nothing usable was saved.
  bool restoreLayout();
  // Settings for new conversations (also applied to the chat shown if it is empty).
  void setChatDefaults(const ConversationSettings& defaults);
  const ConversationSettings& chatDefaults() const { return chat_defaults_; }

 public slots:
  void openModel();
  void showSettings();
  void showWorkloadDialog();
  void showServerDialog();
  void onLoadProgress(double fraction, const QString& stage);
  // Stop workload is enabled while a workload has requests running or to come.
  void onWorkloadActive(bool active);
  void onModelLoaded(const kvscope::ModelInfo& info);
  // `in_place`: only settings each step reads changed; nothing was re-queued.
  void onReconfigured(const kvscope::ModelInfo& info, bool in_place = false);
  // `previous_kept`: the model loaded before still runs (a bad file lost nothing).
  void onLoadFailed(const QString& message, bool previous_kept = false);
  void onSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  void onError(const QString& message);
  // Starts an empty chat saved as a new conversation (Ctrl+N).
  void newConversation();
  // Shows a saved conversation (refused while a reply is being written).
  void openConversation(qint64 id);
  void showConversationSettings();
  // Writes the conversation shown to `path`: JSON when it ends in .json, else
  // Markdown. False (and a message box) on failure.
  bool exportConversation(const QString& path);
  void showExportDialog();

 signals:
  void loadModelRequested(const kvscope::EngineConfig& config);
  void workloadRequested(const kvscope::ui::WorkloadSpec& spec);
  void workloadStopRequested();

 private:
  void saveLayout() const;  // restoreLayout()'s counterpart, on close
  void createActions();
  void createDocks();
  // A non-modal error box (the engine keeps streaming while it is up).
  void showErrorBox(const QString& title, const QString& message);
  void onUserTurnAdded(const QString& text);
  void onTurnsRemoved(int index);
  void onReplyStarted(quint64 request_id);
  void onReplyFinished(quint64 request_id, const ChatTurn& turn);
  // Completes the placeholder of reply `request_id` with `turn` (reply_places_);
  // false when it has none or the store refused (said in the status bar).
  bool saveReply(quint64 request_id, const ChatTurn& turn);
  void onAlternativeSelected(int message_index, int alternative);
  // The conversation shown, created in the store (with the chat's settings)
  // if it is not there yet; -1 without a store.
  qint64 ensureConversation(const QString& first_prompt);
  void rebuildRecentMenu();
  void createSequencesTable();  // main_window_sequences.cpp
  void keepSequenceSelected();
  void onConversationDeleted(qint64 id);
  void reportStoreError(const QString& message);

  void acceptConfig(const kvscope::ModelInfo& info);
  // The engine's warnings about the settings in force, in the status line.
  void showSettingWarnings(const kvscope::ModelInfo& info);
  void showModelLabel(const kvscope::ModelInfo& info);

  kvscope::EngineConfig config_;
  kvscope::EngineConfig requested_config_;  // asked for, not yet confirmed by the worker
  kvscope::ModelInfo model_info_;            // of the engine loaded; name empty when none
  bool persist_settings_ = true;
  ConversationSettings chat_defaults_;  // for new conversations (Settings > Chat defaults)
  QMenu* recent_menu_ = nullptr;
  WorkloadSpec workload_;
  ChatWidget* chat_ = nullptr;
  BlockMapWidget* block_map_ = nullptr;
  LiveLabel* kv_summary_ = nullptr;  // changes with every snapshot: see live_label.h
  // The block map's legend; with tp > 1 it adds that blocks are shared by the ranks.
  QLabel* block_map_legend_ = nullptr;
  QString block_map_legend_text_;
  BlockTableModel* table_model_ = nullptr;
  QTableView* table_view_ = nullptr;
  // The sequence chosen in the Sequences table (request id, completion), kept
  // on its row as snapshots move rows (keepSequenceSelected).
  std::optional<std::pair<quint64, int>> focused_sequence_;
  ServerRequestTags* server_tags_ = nullptr;
  ServerDialog* server_dialog_ = nullptr;
  PlotsWidget* plots_ = nullptr;
  TracePanel* trace_panel_ = nullptr;
  MemoryPanel* memory_panel_ = nullptr;
  SharedPrefixPanel* shared_prefixes_ = nullptr;
  InvariancePanel* invariance_panel_ = nullptr;
  LiveLabel* model_label_ = nullptr;
  LiveLabel* step_label_ = nullptr;
  QAction* draft_tint_action_ = nullptr;  // View > Tint accepted draft tokens
  SpecPauseNotices spec_pauses_;
  // Requests in the engine at the last snapshot: what a settings change re-queues.
  int num_unfinished_ = 0;

  std::unique_ptr<ChatStore> store_;
  ConversationListWidget* conversations_ = nullptr;
  qint64 conversation_id_ = -1;   // shown in chat_
  // Where each reply being written is saved: its conversation and the
  // placeholder message it completes, by request id. More than one when a
  // reply was detached from the view (a new chat) and has not ended yet.
  struct ReplyPlace {
    qint64 conversation = -1;
    qint64 message = -1;
  };
  std::map<quint64, ReplyPlace> reply_places_;
  // The window was asked to close while a reply was being written: it
  // closes once that reply has ended and been saved (or after kCloseWaitMs).
  bool closing_ = false;
  bool untitled_ = false;         // conversation_id_ still has the default title and no message
  QAction* stop_workload_ = nullptr;
};

}  // namespace kvscope::ui
