// InvariancePanel: checks that the engine gives the same greedy output under
// two configurations (kvscope/invariance_check.h): A is the engine settings
// in force, B is typed as "key=value,..." ("cascade=on,concurrency=16"),
// checked as it is typed (parse_invariance_side's message shows under it),
// or picked from a few examples. The prompts are the conversation's last
// prompt or the prompts of a file (separated by blank lines, as
// `kvscope-cli check --prompts`). The result is one row per prompt
// (InvarianceVerdictModel), and for the selected row the two continuations
// side by side with the first divergent token marked.
//
// The panel runs nothing itself: Run emits runRequested(job id, job) and
// app/gui's InvarianceRunner runs the check on its own thread, reporting
// back through onProgress / onFinished. Each run gets a new job id; Cancel
// and a new run retire the old id, so its late progress or result is
// dropped. Tested by tests/ui/invariance_panel_test.cpp (the panel alone)
// and tests/ui/invariance_runner_test.cpp (with the runner, tiny model).
#pragma once

#include <functional>

#include <QWidget>

#include "engine_types.h"
#include "models/invariance_job.h"
#include "models/token_text.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QTableView;
class QTextBrowser;

namespace kvscope::ui {

class InvarianceVerdictModel;

class InvariancePanel : public QWidget {
  Q_OBJECT
 public:
  explicit InvariancePanel(QWidget* parent = nullptr);

  // Second configurations offered as examples (each parses on any model).
  static QStringList exampleSpecs();

  // Side A: the settings of the engine loaded (its model included). Without
  // a model path nothing can be checked.
  void setBaseConfig(const kvscope::EngineConfig& config);
  // Asked when a run starts for the conversation as the chat sent its last
  // message (the system message, the turns, ending with that message); run
  // through the model's chat template. Empty: there is none yet.
  void setPromptSource(std::function<kvscope::ui::ChatHistory()> source) { prompt_source_ = std::move(source); }
  // The model's bytes per token id: continuations are then cut exactly at
  // the divergent token.
  void setTokenBytes(const kvscope::ui::TokenBytesTable& table);

  // The B line edit's text (as if typed).
  void setSpecB(const QString& spec);
  // Prompts from `path` instead of the conversation ("" goes back to it).
  void setPromptFile(const QString& path);

  // What a run would check now, or why not ("B: unknown setting ...",
  // "The conversation has no prompt yet.").
  kvscope::Result<InvarianceJob> buildJob() const;
  bool canRun() const;
  QString validationText() const;
  QString statusText() const;
  quint64 currentJob() const { return current_job_; }
  bool running() const { return current_job_ != 0; }
  InvarianceVerdictModel* model() const { return model_; }
  // The HTML of side a's or b's continuation for the selected row.
  QString continuationShown(bool side_b) const;

 public slots:
  void run();
  void cancel();
  void onProgress(quint64 job_id, int done, int total);
  void onFinished(quint64 job_id, const kvscope::ui::InvarianceOutcome& outcome);
  // What a run would check has changed (a message was sent in the chat, or
  // another conversation opened): a refusal shown for the old one goes.
  void promptSourceChanged();

 signals:
  void runRequested(quint64 job_id, const kvscope::ui::InvarianceJob& job);
  void cancelRequested(quint64 job_id);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void revalidate();
  QString idleStatus() const { return tr("Same greedy tokens under A and B? Pick B and run."); }
  void showRow(int row);
  void setRunning(bool on);
  void browsePromptFile();

  kvscope::EngineConfig base_;
  std::function<kvscope::ui::ChatHistory()> prompt_source_;
  TokenBytesTable token_bytes_;
  quint64 next_job_ = 0;
  quint64 current_job_ = 0;  // 0: none in flight
  bool refused_ = false;     // the status says why the last Run was refused

  QLabel* side_a_ = nullptr;
  QLineEdit* spec_b_ = nullptr;
  QComboBox* examples_ = nullptr;
  QLabel* validation_ = nullptr;
  QRadioButton* use_conversation_ = nullptr;
  QRadioButton* use_file_ = nullptr;
  QLineEdit* prompt_file_ = nullptr;
  QSpinBox* max_tokens_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  InvarianceVerdictModel* model_ = nullptr;
  QTableView* view_ = nullptr;
  QTextBrowser* text_a_ = nullptr;
  QTextBrowser* text_b_ = nullptr;
  QLabel* title_b_ = nullptr;
};

}  // namespace kvscope::ui
