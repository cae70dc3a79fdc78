// MainWindow: the chat in the centre, the inspector as docks on the right
// (KV block map, sequences and their block tables, plots), a toolbar and menu
// (Open model…, New chat, Workload…, Settings…). It sends commands as signals
// and takes the engine worker's results in its on*() slots; app/gui/main.cpp
// wires the two. Errors from the engine go to a message box; the app stays up.
// Conversations are saved in a ChatStore (SQLite) and listed in a left dock;
// without a usable store the chat works as before and the dock says why.
#pragma once

#include <memory>

#include <QMainWindow>

#include "engine_types.h"

class QLabel;
class QTableView;

namespace kvscope::ui {

class BlockMapWidget;
class BlockTableModel;
class ChatStore;
class ChatWidget;
class ConversationListWidget;
class PlotsWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // `chat_store_path` empty: ChatStore::defaultPath().
  explicit MainWindow(QWidget* parent = nullptr, const QString& chat_store_path = QString());
  ~MainWindow() override;

  ChatWidget* chat() const { return chat_; }
  ChatStore* chatStore() const { return store_.get(); }
  ConversationListWidget* conversationList() const { return conversations_; }
  // The conversation shown, or -1 (a new chat not saved yet).
  qint64 currentConversation() const { return conversation_id_; }
  BlockTableModel* blockTableModel() const { return table_model_; }
  const kvscope::EngineConfig& engineConfig() const { return config_; }
  // Sets the configuration (persisted) and asks for an engine built from it.
  void loadEngine(const kvscope::EngineConfig& config);
  void startWorkload(const WorkloadSpec& spec);

 public slots:
  void openModel();
  void showSettings();
  void showWorkloadDialog();
  void onModelLoaded(const kvscope::ModelInfo& info);
  void onLoadFailed(const QString& message);
  void onSnapshot(const kvscope::ui::SnapshotPtr& snapshot);
  void onError(const QString& message);
  // Starts an empty chat saved as a new conversation (Ctrl+N).
  void newConversation();
  // Shows a saved conversation (refused while a reply is being written).
  void openConversation(qint64 id);

 signals:
  void loadModelRequested(const kvscope::EngineConfig& config);
  void workloadRequested(const kvscope::ui::WorkloadSpec& spec);

 private:
  void createActions();
  void createDocks();
  void onChatSent(const kvscope::ui::ChatHistory& history);
  void onReplyStarted();
  void onReplyFinished(const QString& content);
  void onConversationDeleted(qint64 id);
  void reportStoreError(const QString& message);

  kvscope::EngineConfig config_;
  WorkloadSpec workload_;
  ChatWidget* chat_ = nullptr;
  BlockMapWidget* block_map_ = nullptr;
  QLabel* kv_summary_ = nullptr;
  BlockTableModel* table_model_ = nullptr;
  QTableView* table_view_ = nullptr;
  PlotsWidget* plots_ = nullptr;
  QLabel* model_label_ = nullptr;
  QLabel* step_label_ = nullptr;

  std::unique_ptr<ChatStore> store_;
  ConversationListWidget* conversations_ = nullptr;
  qint64 conversation_id_ = -1;   // shown in chat_
  qint64 reply_conversation_ = -1;  // where the reply being written is saved
  bool untitled_ = false;         // conversation_id_ still has the default title and no message
};

}  // namespace kvscope::ui
