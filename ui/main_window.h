// MainWindow: the chat in the centre, the inspector as docks on the right
// (KV block map, sequences and their block tables, plots), a toolbar and menu
// (Open model…, New chat, Workload…, Settings…). It sends commands as signals
// and takes the engine worker's results in its on*() slots; app/gui/main.cpp
// wires the two. Errors from the engine go to a message box; the app stays up.
#pragma once

#include <QMainWindow>

#include "engine_types.h"

class QLabel;
class QTableView;

namespace kvscope::ui {

class BlockMapWidget;
class BlockTableModel;
class ChatWidget;
class PlotsWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  ChatWidget* chat() const { return chat_; }
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

 signals:
  void loadModelRequested(const kvscope::EngineConfig& config);
  void workloadRequested(const kvscope::ui::WorkloadSpec& spec);

 private:
  void createActions();
  void createDocks();

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
};

}  // namespace kvscope::ui
