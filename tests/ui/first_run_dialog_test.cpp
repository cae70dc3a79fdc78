// FirstRunDialog wired to a ModelFetchJob (app/gui/first_run.h), offscreen,
// against a loopback HTTP server (tests/app/loopback_http_server.h) with a
// small generated zip: Download installs the model and closes the dialog;
// Cancel keeps the partial download and a second Download resumes it with a
// Range request; a 404 shows the error and offers to try again; Open model…
// ends the dialog with that choice. The GUI thread keeps turning while the
// download runs (a timer counts its ticks). No internet.
//   ctest --test-dir build -R first_run_dialog_test
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <memory>

#include "first_run.h"
#include "first_run_dialog.h"
#include "loopback_http_server.h"
#include "model_fetch_job.h"

using kvscope::gui::ModelFetchJob;
using kvscope::test::LoopbackHttpServer;
using kvscope::ui::FirstRunDialog;

namespace {

const char* kPath = "/packages/pkg-1.0-py3-none-any.whl";

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

template <typename T>
T* child(QWidget* parent, const char* name) {
  T* w = parent->findChild<T*>(QLatin1String(name));
  if (!w) qFatal("no child %s", name);
  return w;
}

}  // namespace

class FirstRunDialogTest : public QObject {
  Q_OBJECT
 private slots:
  void init() {
    // A fresh server and directory per test: nothing carries over.
    server_ = std::make_unique<LoopbackHttpServer>();
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(server_->ok());
    QVERIFY(dir_->isValid());
    model_ = kvscope::test::pseudo_random_bytes(400 * 1024, 11);
    const QString zip_path = dir_->filePath(QStringLiteral("source.zip"));
    QVERIFY(kvscope::test::write_test_zip(zip_path.toStdString(), {{"pkg/model.gguf", model_}}));
    const QByteArray zip = readAll(zip_path);
    QFile::remove(zip_path);
    server_->serve(kPath, zip.toStdString());
    server_->set_throttle(0, std::chrono::milliseconds(0));
    source_ = {};
    source_.url = server_->url(kPath);
    source_.archive_size = static_cast<uint64_t>(zip.size());
    source_.archive_sha256 = kvscope::test::sha256_hex(zip.toStdString());
    source_.member = "pkg/model.gguf";
    source_.file_name = "model.gguf";
    source_.file_size = model_.size();
    source_.file_sha256 = kvscope::test::sha256_hex(model_);
    models_ = dir_->filePath(QStringLiteral("models"));
  }

  void downloadInstallsAndCloses() {
    server_->set_throttle(32 * 1024, std::chrono::milliseconds(15));  // ~0.2 s: long enough to watch
    FirstRunDialog dialog(models_ + QStringLiteral("/model.gguf"), static_cast<qint64>(source_.file_size));
    ModelFetchJob job(source_, models_);
    kvscope::gui::connectFirstRunDialog(dialog, job);
    QSignalSpy finished(&job, &ModelFetchJob::finished);
    dialog.show();
    QVERIFY(child<QPushButton>(&dialog, "downloadButton")->text().contains(QStringLiteral("(0 MiB)")));
    QVERIFY(!child<QPushButton>(&dialog, "cancelButton")->isVisible());  // nothing to cancel yet

    int ticks = 0;
    QTimer ticker;
    connect(&ticker, &QTimer::timeout, [&ticks] { ++ticks; });
    ticker.start(5);
    QTest::mouseClick(child<QPushButton>(&dialog, "downloadButton"), Qt::LeftButton);
    QVERIFY(dialog.downloading());
    QVERIFY(child<QPushButton>(&dialog, "cancelButton")->isVisible());
    QVERIFY(!child<QPushButton>(&dialog, "openButton")->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(child<QProgressBar>(&dialog, "progressBar")->value() > 0, 5000);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QTRY_VERIFY(!dialog.isVisible());
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    // The spy counts the signal as it is emitted on the job's thread; the
    // dialog sees it through a queued connection, a moment later.
    QTRY_COMPARE_WITH_TIMEOUT(dialog.choice(), FirstRunDialog::Choice::Downloaded, 5000);
    QCOMPARE(finished.at(0).at(0).toString(), models_ + QStringLiteral("/model.gguf"));
    QCOMPARE(readAll(models_ + QStringLiteral("/model.gguf")), QByteArray::fromStdString(model_));
    QVERIFY2(ticks >= 10, qPrintable(QStringLiteral("the GUI thread ticked only %1 times").arg(ticks)));
  }

  void cancelKeepsPartAndResumes() {
    server_->set_throttle(8 * 1024, std::chrono::milliseconds(20));  // ~1 s for the whole file
    FirstRunDialog dialog(models_ + QStringLiteral("/model.gguf"), static_cast<qint64>(source_.file_size));
    ModelFetchJob job(source_, models_);
    kvscope::gui::connectFirstRunDialog(dialog, job);
    QSignalSpy cancelled(&job, &ModelFetchJob::cancelled);
    QSignalSpy finished(&job, &ModelFetchJob::finished);
    dialog.show();
    QTest::mouseClick(child<QPushButton>(&dialog, "downloadButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(child<QProgressBar>(&dialog, "progressBar")->value() > 100, 5000);
    QTest::mouseClick(child<QPushButton>(&dialog, "cancelButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 5000);
    QVERIFY(dialog.isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.downloading(), 5000);  // queued to the dialog after the spy saw it
    auto* download = child<QPushButton>(&dialog, "downloadButton");
    QVERIFY(download->isVisible());
    QVERIFY(download->text().contains(QStringLiteral("Resume")));
    QVERIFY(child<QLabel>(&dialog, "messageLabel")->text().contains(QStringLiteral("cancelled")));
    const QFileInfo part(models_ + QStringLiteral("/pkg-1.0-py3-none-any.whl.part"));
    QVERIFY(part.exists());
    const qint64 kept = part.size();
    QVERIFY(kept > 0 && kept < static_cast<qint64>(source_.archive_size));
    QVERIFY(!QFileInfo::exists(models_ + QStringLiteral("/model.gguf")));

    server_->set_throttle(0, std::chrono::milliseconds(0));
    QTest::mouseClick(download, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QCOMPARE(QString::fromStdString(server_->ranges().back()), QStringLiteral("bytes=%1-").arg(kept));
    QCOMPARE(readAll(models_ + QStringLiteral("/model.gguf")), QByteArray::fromStdString(model_));
    // The spy counts the signal as it is emitted on the job's thread; the
    // dialog sees it through a queued connection, a moment later.
    QTRY_COMPARE_WITH_TIMEOUT(dialog.choice(), FirstRunDialog::Choice::Downloaded, 5000);
  }

  void notFoundShowsTheErrorAndOffersToTryAgain() {
    source_.url = server_->url("/packages/missing.whl");
    FirstRunDialog dialog(models_ + QStringLiteral("/model.gguf"), static_cast<qint64>(source_.file_size));
    ModelFetchJob job(source_, models_);
    kvscope::gui::connectFirstRunDialog(dialog, job);
    QSignalSpy failed(&job, &ModelFetchJob::failed);
    dialog.show();
    QTest::mouseClick(child<QPushButton>(&dialog, "downloadButton"), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 5000);
    QTRY_VERIFY(child<QLabel>(&dialog, "messageLabel")->isVisible());
    QVERIFY2(child<QLabel>(&dialog, "messageLabel")->text().contains(QStringLiteral("HTTP 404")),
             qPrintable(child<QLabel>(&dialog, "messageLabel")->text()));
    QVERIFY(dialog.isVisible());
    QCOMPARE(child<QPushButton>(&dialog, "downloadButton")->text(), QStringLiteral("Try again"));
    QVERIFY(child<QPushButton>(&dialog, "openButton")->isEnabled());
  }

  void openModelEndsWithThatChoice() {
    FirstRunDialog dialog(models_ + QStringLiteral("/model.gguf"), 98362432);
    QVERIFY(child<QPushButton>(&dialog, "downloadButton")->text().contains(QStringLiteral("(94 MiB)")));
    dialog.show();
    QTest::mouseClick(child<QPushButton>(&dialog, "openButton"), Qt::LeftButton);
    QVERIFY(!dialog.isVisible());
    QCOMPARE(dialog.choice(), FirstRunDialog::Choice::OpenModel);
    QCOMPARE(server_->ranges().size(), size_t{0});
  }

 private:
  std::unique_ptr<LoopbackHttpServer> server_;
  std::unique_ptr<QTemporaryDir> dir_;
  QString models_;
  std::string model_;
  kvscope::fetch::ModelSource source_;
};

QTEST_MAIN(FirstRunDialogTest)
#include "first_run_dialog_test.moc"
