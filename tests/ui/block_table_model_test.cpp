// BlockTableModel under QAbstractItemModelTester while snapshots grow, shrink,
// empty and vanish; plus the values of its cells.
//   ctest --test-dir build-gui -R block_table_model_test
#include <QAbstractItemModelTester>
#include <QColor>
#include <QtTest>

#include "models/block_table_model.h"
#include "test_snapshots.h"

using kvscope::test::makeSnapshot;
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
    QCOMPARE(model.data(model.index(0, BlockTableModel::Sequence)).toString(), QStringLiteral("100.0"));
    QCOMPARE(model.data(model.index(1, BlockTableModel::Sequence)).toString(), QStringLiteral("101.0"));
    QCOMPARE(model.data(model.index(0, BlockTableModel::State)).toString(), QStringLiteral("running"));
    QCOMPARE(model.data(model.index(0, BlockTableModel::Prompt)).toInt(), 40);
    QCOMPARE(model.data(model.index(1, BlockTableModel::Cached)).toInt(), 16);
    // Block 0 is shared; sequence 100 then has 1 2, sequence 101 has 3 4.
    QCOMPARE(model.data(model.index(0, BlockTableModel::Blocks)).toString(), QStringLiteral("0 1 2"));
    QCOMPARE(model.data(model.index(1, BlockTableModel::Blocks)).toString(), QStringLiteral("0 3 4"));
    QCOMPARE(model.data(model.index(1, 0), BlockTableModel::RequestIdRole).value<quint64>(), quint64{101});
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
  }
};

QTEST_GUILESS_MAIN(BlockTableModelTest)
#include "block_table_model_test.moc"
