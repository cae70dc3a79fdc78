// FirstRunDialog: shown at start when the default model is not installed
// (and no --model was given). Offers "Download the default model (94 MiB)"
// with a progress bar and Cancel, or "Open model…". A view only: it asks
// through signals, and app/gui/model_fetch_job.h downloads off the GUI thread
// and reports back through the slots (app/gui/first_run.h wires the two).
// A cancelled download is kept, and Download then resumes it.
// Test: tests/ui/first_run_dialog_test.cpp (against a loopback server).
#pragma once

#include <QDialog>

class QLabel;
class QProgressBar;
class QPushButton;

namespace kvscope::ui {

class FirstRunDialog : public QDialog {
  Q_OBJECT
 public:
  enum class Choice { None, Downloaded, OpenModel };

  // `model_path`: where the default model belongs; `download_bytes`: what
  // its download fetches (the archive: 89 MiB for a 94 MiB model).
  FirstRunDialog(const QString& model_path, qint64 download_bytes, QWidget* parent = nullptr);

  // How the dialog ended: the model is installed, or the user wants to pick a file.
  Choice choice() const { return choice_; }
  bool downloading() const { return downloading_; }

 signals:
  void downloadRequested();
  void cancelRequested();

 public slots:
  // `stage` is shown as is ("Downloading", "Checking", "Unpacking").
  void setProgress(const QString& stage, qint64 done, qint64 total);
  // The model is in place: closes the dialog with Choice::Downloaded.
  void setFinished();
  // The download stopped: back to the choices, with `message` shown.
  void setFailed(const QString& message);
  void setCancelled(const QString& message);

  // Closing the dialog while downloading cancels the download.
  void reject() override;

 private:
  void showIdle(const QString& message, const QString& download_text);
  void startDownload();
  void fitContents();

  QLabel* message_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* download_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* close_ = nullptr;
  Choice choice_ = Choice::None;
  bool downloading_ = false;
};

}  // namespace kvscope::ui
