// Speculative decoding through the whole window on the random tiny model,
// wired as the app is (connectWindowToEngine): with spec=ngram the Plots
// dock's speculation plots show and fill, the tint toggle is on, the reply's
// stats line says how many drafts were accepted; and a draft model that cannot
// be loaded (a Path row pointing at a file that is no model, or at a model
// with another vocabulary) is refused with a dialog that names the file,
// while the running engine and its settings stay and the chat still works.
//   ctest --test-dir build -R spec_session_test --output-on-failure
#include <QAction>
#include <QFile>
#include <QMessageBox>
#include <QTemporaryDir>
#include <QtTest>

#include "app_test_support.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "main_window.h"
#include "models/message_stats.h"
#include "plots_widget.h"
#include "spec_plots.h"
#include "window_wiring.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;
const QString kCopyPrompt = QStringLiteral("abc abc abc abc abc abc abc abc abc abc abc abc abc abc abc abc");

}  // namespace

class SpecSessionTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, 4096, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void init() {
    window_ = std::make_unique<ui::MainWindow>(nullptr, dir_.filePath(QStringLiteral("chats-%1.sqlite").arg(++run_)));
    host_ = std::make_unique<gui::EngineHost>();
    gui::connectWindowToEngine(*window_, *host_);
    window_->loadEngine(config());
    QTRY_VERIFY_WITH_TIMEOUT(!window_->modelInfo().name.empty(), kTimeoutMs);
    ui::ConversationSettings settings = window_->chat()->conversationSettings();
    settings.sampling.temperature = 0.0f;
    settings.sampling.max_tokens = 48;
    window_->chat()->setConversationSettings(settings);
  }

  void cleanup() {
    host_.reset();
    window_.reset();
  }

  void plotsStatsAndToggleWithNgram() {
    auto* plots = window_->findChild<ui::PlotsWidget*>()->specPlots();
    QVERIFY(!plots->isHidden());
    QCOMPARE(plots->specMethod(), SpecMethod::Ngram);
    auto* tint = window_->findChild<QAction*>(QStringLiteral("draft_tint_action"));
    QVERIFY(tint && tint->isEnabled() && tint->isChecked());

    window_->chat()->sendPrompt(kCopyPrompt);
    QTRY_VERIFY_WITH_TIMEOUT(window_->chat()->turns().size() == 2 && !window_->chat()->busy(), kTimeoutMs);
    const auto stats = ui::messageStatsFromJson(window_->chat()->turns().back().stats_json);
    QCOMPARE(stats.size(), size_t(1));
    QVERIFY2(stats[0].draft_tokens > 0, qPrintable(window_->chat()->turns().back().stats_json));
    QVERIFY(window_->chat()->renderedMarkdown().contains(
        QStringLiteral("drafts accepted %1 / %2").arg(stats[0].accepted_draft_tokens).arg(stats[0].draft_tokens)));
    QTRY_VERIFY_WITH_TIMEOUT(!plots->acceptancePoints(QStringLiteral("ngram")).isEmpty(), kTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(!plots->acceptedLengthCounts().isEmpty(), kTimeoutMs);

    // Speculation off: the toggle has nothing to tint.
    EngineConfig off = config();
    off.spec = SpecMethod::Off;
    QSignalSpy reconfigured(host_->worker(), &gui::EngineWorker::reconfigured);
    window_->loadEngine(off);
    QTRY_VERIFY_WITH_TIMEOUT(reconfigured.count() > 0, kTimeoutMs);
    QTRY_VERIFY(!tint->isEnabled());
  }

  void anUnusableDraftModelShowsADialogAndKeepsTheEngine() {
    const QString bad = dir_.filePath(QStringLiteral("not-a-draft.gguf"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a GGUF file");
    f.close();
    EngineConfig c = config();
    c.spec = SpecMethod::Draft;
    c.spec_draft_model = bad.toStdString();
    window_->loadEngine(c);
    QTRY_VERIFY_WITH_TIMEOUT(window_->findChild<QMessageBox*>() != nullptr, kTimeoutMs);
    const QString text = window_->findChild<QMessageBox*>()->text();
    QVERIFY2(text.contains(QStringLiteral("not-a-draft.gguf")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("runs on with the ones it had")), qPrintable(text));
    // Nothing lost: the settings in force are the ones that ran, and so is the chat.
    QCOMPARE(window_->engineConfig().spec, SpecMethod::Ngram);
    QVERIFY(window_->engineConfig().spec_draft_model.empty());
    window_->chat()->sendPrompt(QStringLiteral("Still there?"));
    QTRY_VERIFY_WITH_TIMEOUT(window_->chat()->turns().size() == 2 && !window_->chat()->busy(), kTimeoutMs);
  }

 private:
  EngineConfig config() const {
    EngineConfig c;
    c.model_path = model_.toStdString();
    c.num_threads = 1;
    c.spec = SpecMethod::Ngram;
    return c;
  }

  QTemporaryDir dir_;
  QString model_;
  int run_ = 0;
  std::unique_ptr<ui::MainWindow> window_;
  std::unique_ptr<gui::EngineHost> host_;
};

QTEST_MAIN(SpecSessionTest)
#include "spec_session_test.moc"
