// BlockTableModel under QAbstractItemModelTester while snapshots grow, shrink,
// empty and vanish; plus the values of its cells.
//   ctest --test-dir build-gui -R block_table_model_test
#include <QAbstractItemModelTester>
#include <QColor>
#include <QtTest>

#include "models/block_table_model.h"
#include "palette_colors.h"
#include "test_snapshots.h"

using kvscope::test::makeSnapshot;
using kvscope::EngineSnapshot;
using kvscope::ui::BlockTableModel;

class BlockTableModelTest : public QObject {
  Q_OBJECT
 private slots:
  void emptyModel() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(BlockTableModel::NumColumns));
    QCOMPARE(model.headerData(BlockTableModel::Blocks, Qt::Horizontal).toString(), QStringLiteral("Blocks"));
  }

  void growsShrinksAndClears() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    for (int n : {1, 3, 8, 8, 5, 0, 2}) {
      model.setSnapshot(makeSnapshot(n, 3, 1));
      QCOMPARE(model.rowCount(), n);
    }
    QCOMPARE(inserted.count(), 4);  // 0->1, 1->3, 3->8, 0->2
    model.setSnapshot(nullptr);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(removed.count(), 3);  // 8->5, 5->0, 2->0
  }

  void cellValues() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(makeSnapshot(2, 3, 1));
    QCOMPARE(model.data(model.index(0, BlockTableModel::Sequence)).toString(), QStringLiteral("100"));
    QCOMPARE(model.data(model.index(1, BlockTableModel::Sequence)).toString(), QStringLiteral("101"));
    QCOMPARE(model.data(model.index(0, BlockTableModel::State)).toString(), QStringLiteral("running"));
    QCOMPARE(model.data(model.index(0, BlockTableModel::Prompt)).toInt(), 40);
    QCOMPARE(model.data(model.index(1, BlockTableModel::Cached)).toInt(), 16);
    // Block 0 is shared; sequence 100 then has 1 2, sequence 101 has 3 4.
    QCOMPARE(model.data(model.index(0, BlockTableModel::Blocks)).toString(), QStringLiteral("0 1 2"));
    QCOMPARE(model.data(model.index(1, BlockTableModel::Blocks)).toString(), QStringLiteral("0 3 4"));
    QCOMPARE(model.data(model.index(1, 0), BlockTableModel::RequestIdRole).value<quint64>(), quint64{101});
  }

  // A swapped sequence's table holds swap-space ids, the same numbers as
  // pool blocks: its Blocks cell and tooltip say so, so that "0 1 2" is not
  // read as sharing the running sequences' pool blocks.
  void swappedBlocksAreMarked() {
    BlockTableModel model;
    auto snap = std::make_shared<EngineSnapshot>(*makeSnapshot(2, 3, 1));
    snap->sequences[1].state = kvscope::SequenceState::Swapped;
    snap->sequences[1].block_table = {0, 1, 2};
    model.setSnapshot(snap);
    QCOMPARE(model.data(model.index(0, BlockTableModel::Blocks)).toString(), QStringLiteral("0 1 2"));
    QCOMPARE(model.data(model.index(1, BlockTableModel::Blocks)).toString(), QStringLiteral("swap: 0 1 2"));
    const QString tip = model.data(model.index(1, BlockTableModel::Blocks), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("swap blocks 0 1 2 (not pool blocks)")), qPrintable(tip));
  }

  // Every column header explains itself (Cached: the first admission's).
  void headersHaveTooltips() {
    BlockTableModel model;
    for (int c = 0; c < BlockTableModel::NumColumns; ++c) {
      QVERIFY2(!model.headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty(),
               qPrintable(QString::number(c)));
    }
    QVERIFY(model.headerData(BlockTableModel::Cached, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("first admitted")));
  }

  // Ids were shown as "1.0, 2.0, ..." (id.index) and read as decimals. Now:
  // an integer (a number, so a sorting proxy orders 9 before 10), the
  // completion number only for the n > 1 completions of one request, and
  // rows in (id, index) order whatever order the scheduler lists them in.
  void idsAreIntegersInNumericOrder() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto s = std::make_shared<EngineSnapshot>();
    const std::pair<kvscope::RequestId, int32_t> listed[] = {{10, 0}, {9, 0}, {100, 0}, {11, 1}, {11, 0}};
    for (const auto& [id, index] : listed) {
      kvscope::SequenceSnapshot seq;
      seq.id = id;
      seq.index = index;
      s->sequences.push_back(seq);
    }
    model.setSnapshot(s);
    QStringList shown;
    for (int row = 0; row < model.rowCount(); ++row) shown << model.index(row, BlockTableModel::Sequence).data().toString();
    QCOMPARE(shown, (QStringList{"9", "10", "11 #1", "11 #2", "100"}));
    const QVariant nine = model.index(0, BlockTableModel::Sequence).data();
    QCOMPARE(nine.typeId(), int(QMetaType::ULongLong));
    QVERIFY(QVariant::compare(nine, model.index(1, BlockTableModel::Sequence).data()) == QPartialOrdering::Less);
    // The id and index roles follow the row's sequence, not the snapshot's order.
    QCOMPARE(model.index(3, 0).data(BlockTableModel::RequestIdRole).value<quint64>(), quint64{11});
    QCOMPARE(model.index(3, 0).data(BlockTableModel::SequenceIndexRole).toInt(), 1);
    QCOMPARE(model.index(4, 0).data(BlockTableModel::RequestIdRole).value<quint64>(), quint64{100});
    // The sort role is a number in every row, completions of a request in order.
    for (int row = 0; row + 1 < model.rowCount(); ++row) {
      const QVariant here = model.index(row, BlockTableModel::Sequence).data(BlockTableModel::SortRole);
      const QVariant after = model.index(row + 1, BlockTableModel::Sequence).data(BlockTableModel::SortRole);
      QVERIFY(QVariant::compare(here, after) == QPartialOrdering::Less);
    }

    // 11's sibling finished: 11 is a single sequence now, but its index 1
    // still says it was one of several.
    s = std::make_shared<EngineSnapshot>(*s);
    s->sequences.erase(s->sequences.begin() + 4);
    model.setSnapshot(s);
    QCOMPARE(model.index(2, BlockTableModel::Sequence).data().toString(), QStringLiteral("11 #2"));
  }

  void longBlockListIsCut() {
    std::vector<int32_t> ids(100);
    for (int i = 0; i < 100; ++i) ids[size_t(i)] = i;
    const QString text = BlockTableModel::blockList(ids, 4);
    QVERIFY(text.startsWith(QStringLiteral("0 1 2 3 …")));
    QVERIFY(text.endsWith(QStringLiteral("(+96)")));
  }

  void highlightsRequests() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(makeSnapshot(3, 2, 1));
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setHighlightedRequests({101});
    QCOMPARE(changed.count(), 1);
    QVERIFY(!model.data(model.index(0, 0), Qt::BackgroundRole).isValid());
    QVERIFY(model.data(model.index(1, 0), Qt::BackgroundRole).value<QColor>().isValid());
    // The marked row brings its own text colour, readable on its background
    // whatever the palette (a dark theme's text is light).
    QVERIFY(changed.first().at(2).value<QList<int>>().contains(Qt::ForegroundRole));
    QVERIFY(!model.data(model.index(0, 0), Qt::ForegroundRole).isValid());
    for (int column = 0; column < BlockTableModel::NumColumns; ++column) {
      const QColor background = model.data(model.index(1, column), Qt::BackgroundRole).value<QColor>();
      const QColor text = model.data(model.index(1, column), Qt::ForegroundRole).value<QColor>();
      QVERIFY(text.isValid());
      QVERIFY2(kvscope::ui::contrastRatio(text, background) >= 4.5, qPrintable(text.name()));
    }
  }

  void sequenceTooltipShowsItsText() {
    BlockTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto s = std::make_shared<EngineSnapshot>(*makeSnapshot(2, 2, 1));
    const std::string text = "<|im_start|>user\nHé  <b>";
    s->sequences[1].tokens.clear();
    for (char c : text) s->sequences[1].tokens.push_back(static_cast<unsigned char>(c));
    model.setSnapshot(s);
    QVERIFY(!model.data(model.index(1, BlockTableModel::Sequence), Qt::ToolTipRole).isValid());  // no table yet

    auto table = std::make_shared<std::vector<std::string>>();
    for (int b = 0; b < 256; ++b) table->emplace_back(1, static_cast<char>(b));
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.setTokenBytes(table);
    QCOMPARE(changed.count(), 1);
    const QString tip = model.data(model.index(1, BlockTableModel::Sequence), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("<b>101</b>, %1 tokens").arg(text.size())), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("&lt;|im_start|&gt;user\u21B5Hé  &lt;b&gt;")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("white-space:pre-wrap")));
  }
};

QTEST_GUILESS_MAIN(BlockTableModelTest)
#include "block_table_model_test.moc"
