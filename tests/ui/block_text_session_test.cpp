// The text of KV blocks end to end: the window wired to a real engine on a
// random tiny model (as the app is, connectWindowToEngine), the worker sends
// the model's token table once per load, and while a chat reply is written
// the block map's hover and the Sequences table's tooltip show the prompt's
// text (ChatML control tokens included), read from snapshot ids only.
// Offscreen.
//   ctest --test-dir build -R block_text_session_test
#include <QTemporaryDir>
#include <QtTest>

#include "app_test_support.h"
#include "block_map_widget.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "window_wiring.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;
constexpr int kContext = 4096;

}  // namespace

class BlockTextSessionTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, kContext, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void hoverShowsThePromptsText() {
    ui::MainWindow window(nullptr, dir_.filePath(QStringLiteral("chats.sqlite")));
    gui::EngineHost host;
    gui::connectWindowToEngine(window, host);
    // The spy sits in the worker's thread (direct): poll its count.
    QSignalSpy tables(host.worker(), &gui::EngineWorker::tokenBytesLoaded);
    EngineConfig config;
    config.model_path = model_.toStdString();
    config.num_threads = 1;
    config.block_size = 16;
    config.num_blocks = kContext / 16 + 16;
    window.loadEngine(config);
    QTRY_VERIFY_WITH_TIMEOUT(!window.modelInfo().name.empty(), kTimeoutMs);
    QCOMPARE(tables.count(), 1);
    const auto table = tables.at(0).at(0).value<ui::TokenBytesTable>();
    QVERIFY(table);
    QCOMPARE(table->size(), static_cast<size_t>(window.modelInfo().vocab_size));
    QCOMPARE(table->at('A'), std::string("A"));
    QCOMPARE(table->at(test::kTinyImStart), std::string("<|im_start|>"));  // control tokens as their text

    // A long reply keeps the sequence (and its blocks) in the snapshots.
    ui::ChatWidget* chat = window.chat();
    ui::ConversationSettings settings = chat->conversationSettings();
    settings.sampling.max_tokens = kContext / 2;
    settings.sampling.ignore_eos = true;
    chat->setConversationSettings(settings);
    chat->sendPrompt(QStringLiteral("Héllo,\tKV blocks & <tags>!"));
    ui::BlockTableModel* sequences = window.blockTableModel();
    QTRY_VERIFY_WITH_TIMEOUT(sequences->rowCount() > 0 && !sequences->snapshot()->sequences[0].block_table.empty(),
                             kTimeoutMs);

    // The whole prompt, escaped, in the Sequences table's tooltip.
    const QString seq_tip = sequences->data(sequences->index(0, ui::BlockTableModel::Sequence), Qt::ToolTipRole).toString();
    QVERIFY2(seq_tip.contains(QStringLiteral("&lt;|im_start|&gt;user\u21B5Héllo,\u2192KV blocks &amp; &lt;tags&gt;!")),
             qPrintable(seq_tip));
    // The prompt's first block in the block map's hover: the start of the
    // ChatML prompt.
    const int first_block = sequences->snapshot()->sequences[0].block_table[0];
    ui::BlockMapWidget* map = window.blockMap();
    QTRY_VERIFY_WITH_TIMEOUT(map->tooltipFor(first_block).contains(QStringLiteral("“<span")), kTimeoutMs);
    const QString block_tip = map->tooltipFor(first_block);
    QVERIFY2(block_tip.contains(QStringLiteral("tokens 0–15 of")), qPrintable(block_tip));
    QVERIFY2(block_tip.contains(QStringLiteral(">&lt;|im_start|&gt;")), qPrintable(block_tip));

    chat->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->busy(), kTimeoutMs);
  }

 private:
  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(BlockTextSessionTest)
#include "block_text_session_test.moc"
