// The Sequences table (ui/main_window_sequences.cpp) in the whole window:
// it sorts by any column by number, follows the numbers as snapshots
// stream in, and keeps the chosen sequence selected as rows move.
#include <QStandardPaths>
#include <QTableView>
#include <QtTest>

#include "main_window.h"
#include "models/block_table_model.h"
#include "test_snapshots.h"

using namespace kvscope;

class SequencesTableTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("kvscope-test"));
    ui::registerEngineMetaTypes();
  }

  // The Sequences table sorts by any column, by number (10 after 9), keeps
  // its order while snapshots stream in, and a selected row still names
  // its own sequence.
  void sequencesTableSorts() {
    ui::MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTableView* table = nullptr;
    for (QTableView* v : window.findChildren<QTableView*>()) {
      if (v->accessibleName() == QStringLiteral("Sequences and their block tables")) table = v;
    }
    QVERIFY(table);
    auto snapshot = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 2, 1, 64));
    const int32_t computed[] = {40, 9, 10};  // ids 100, 101, 102
    for (size_t i = 0; i < 3; ++i) snapshot->sequences[i].num_computed_tokens = computed[i];
    snapshot->sequences[1].block_table.push_back(60);  // 101 holds the most blocks
    window.onSnapshot(snapshot);
    const auto column = [table](int c) {
      QStringList shown;
      for (int row = 0; row < table->model()->rowCount(); ++row) shown << table->model()->index(row, c).data().toString();
      return shown;
    };
    QCOMPARE(column(ui::BlockTableModel::Sequence), (QStringList{"100", "101", "102"}));  // by default
    table->sortByColumn(ui::BlockTableModel::Computed, Qt::DescendingOrder);
    QCOMPARE(column(ui::BlockTableModel::Computed), (QStringList{"40", "10", "9"}));
    table->sortByColumn(ui::BlockTableModel::Blocks, Qt::DescendingOrder);
    QCOMPARE(column(ui::BlockTableModel::Sequence).first(), QStringLiteral("101"));
    table->sortByColumn(ui::BlockTableModel::Computed, Qt::AscendingOrder);
    table->selectRow(0);
    QCOMPARE(table->currentIndex().data(ui::BlockTableModel::RequestIdRole).value<quint64>(), quint64{101});
    // The next snapshot changes the numbers: the order follows them.
    auto next = std::make_shared<EngineSnapshot>(*snapshot);
    next->sequences[1].num_computed_tokens = 50;
    window.onSnapshot(next);
    QCOMPARE(column(ui::BlockTableModel::Computed), (QStringList{"10", "40", "50"}));
    QCOMPARE(table->currentIndex().data(ui::BlockTableModel::RequestIdRole).value<quint64>(), quint64{101});
    // A sequence leaving from the middle: the model's rows take new values,
    // and the selection stays with 101, not with the row it was on.
    table->sortByColumn(ui::BlockTableModel::Sequence, Qt::AscendingOrder);
    table->selectRow(2);
    QCOMPARE(table->currentIndex().data(ui::BlockTableModel::RequestIdRole).value<quint64>(), quint64{102});
    auto fewer = std::make_shared<EngineSnapshot>(*next);
    fewer->sequences.erase(fewer->sequences.begin());  // 100 leaves
    window.onSnapshot(fewer);
    QCOMPARE(table->model()->rowCount(), 2);
    QCOMPARE(table->currentIndex().data(ui::BlockTableModel::RequestIdRole).value<quint64>(), quint64{102});
    // The chosen one leaves: nothing is selected rather than another.
    auto gone = std::make_shared<EngineSnapshot>(*fewer);
    gone->sequences.pop_back();
    window.onSnapshot(gone);
    QVERIFY(!table->selectionModel()->hasSelection());
  }
};

QTEST_MAIN(SequencesTableTest)
#include "sequences_table_test.moc"
