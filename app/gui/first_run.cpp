// See first_run.h.
#include "first_run.h"

#include <QDir>

#include "first_run_dialog.h"
#include "main_window.h"
#include "model_fetch_job.h"

namespace kvscope::gui {

void connectFirstRunDialog(kvscope::ui::FirstRunDialog& dialog, ModelFetchJob& job) {
  using kvscope::ui::FirstRunDialog;
  QObject::connect(&dialog, &FirstRunDialog::downloadRequested, &job, &ModelFetchJob::start);
  QObject::connect(&dialog, &FirstRunDialog::cancelRequested, &job, &ModelFetchJob::cancel);
  QObject::connect(&job, &ModelFetchJob::progress, &dialog, &FirstRunDialog::setProgress);
  QObject::connect(&job, &ModelFetchJob::finished, &dialog, &FirstRunDialog::setFinished);
  QObject::connect(&job, &ModelFetchJob::failed, &dialog, &FirstRunDialog::setFailed);
  QObject::connect(&job, &ModelFetchJob::cancelled, &dialog, &FirstRunDialog::setCancelled);
}

void offerDefaultModel(kvscope::ui::MainWindow& window, const kvscope::EngineConfig& config, const QString& model_dir) {
  const kvscope::fetch::ModelSource& source = kvscope::fetch::default_model_source();
  const QString path = QDir(model_dir).filePath(QString::fromStdString(source.file_name));
  // The button names what the download costs, as the CLI and the README do (89 MiB, not the 94 installed).
  auto* dialog = new kvscope::ui::FirstRunDialog(path, static_cast<qint64>(source.archive_size), &window);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  // The job dies with the dialog; its destructor cancels and joins the thread.
  auto* job = new ModelFetchJob(source, model_dir, dialog);
  connectFirstRunDialog(*dialog, *job);
  QObject::connect(job, &ModelFetchJob::finished, &window, [&window, config](const QString& model_path) {
    kvscope::EngineConfig c = config;
    c.model_path = model_path.toStdString();
    window.loadEngine(c);
  });
  QObject::connect(dialog, &QDialog::accepted, &window, [&window, dialog] {
    if (dialog->choice() == kvscope::ui::FirstRunDialog::Choice::OpenModel) window.openModel();
  });
  dialog->open();  // window-modal, and the event loop keeps running
}

}  // namespace kvscope::gui
