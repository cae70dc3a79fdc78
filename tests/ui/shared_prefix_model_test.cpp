// SharedPrefixModel / findSharedPrefixes on hand-made snapshots: unrelated
// sequences, one shared prompt, n > 1 siblings nested inside a shared system
// prompt, swapped sequences left out, rows that keep their place, the last
// step's cascade passes attached to their rows, and the cost at 64 sequences
// x 20 blocks. QAbstractItemModelTester watches every
// change.
//   ctest --test-dir build -R shared_prefix_model_test
#include <map>

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include "models/shared_prefix_model.h"
#include "test_snapshots.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

struct Seq {
  RequestId id;
  int32_t index;
  std::vector<int32_t> table;
  SequenceState state = SequenceState::Running;
};

// A pool of 64 blocks of 16 slots; every block full unless `fills` says
// otherwise. Only what findSharedPrefixes reads is filled in.
SnapshotPtr snapshotOf(const std::vector<Seq>& seqs, const std::map<int32_t, int32_t>& fills = {}) {
  auto s = std::make_shared<EngineSnapshot>();
  s->block_size = 16;
  s->blocks.resize(64);
  for (size_t b = 0; b < s->blocks.size(); ++b) {
    const auto it = fills.find(static_cast<int32_t>(b));
    s->blocks[b].fill = it == fills.end() ? 16 : it->second;
  }
  for (const Seq& q : seqs) {
    SequenceSnapshot seq;
    seq.id = q.id;
    seq.index = q.index;
    seq.state = q.state;
    seq.block_table = q.table;
    s->sequences.push_back(seq);
  }
  return s;
}

// System prompt in blocks 0, 1. Request 10 (n = 2) shares its prompt tail,
// block 2 (5 tokens), between its siblings; request 11 (n = 2) likewise
// block 5 (7 tokens). Request 12 is unrelated; request 13 is swapped out
// (its table holds swap ids that happen to equal 0 and 1).
SnapshotPtr nestedSnapshot() {
  return snapshotOf({{10, 0, {0, 1, 2, 3}},
                     {10, 1, {0, 1, 2, 4}},
                     {11, 0, {0, 1, 5, 6}},
                     {11, 1, {0, 1, 5, 7}},
                     {12, 0, {8, 9}},
                     {13, 0, {0, 1}, SequenceState::Swapped}},
                    {{2, 5}, {5, 7}, {3, 3}, {4, 3}, {6, 1}, {7, 1}});
}

using Members = std::vector<std::pair<RequestId, int32_t>>;

}  // namespace

class SharedPrefixModelTest : public QObject {
  Q_OBJECT
 private slots:
  void unrelatedSequencesShareNothing() {
    const auto groups = findSharedPrefixes(*snapshotOf({{1, 0, {0, 1}}, {2, 0, {2, 3}}, {3, 0, {}}}));
    QVERIFY(groups.empty());
  }

  void oneSharedPrompt() {
    // Three sequences whose first two (full) blocks are the same.
    const auto groups = findSharedPrefixes(*test::makeSnapshot(3, 3, 2));
    QCOMPARE(groups.size(), size_t{1});
    const SharedPrefixGroup& g = groups[0];
    QCOMPARE(g.blocks, (std::vector<int32_t>{0, 1}));
    QCOMPARE(g.first_own_block, 0);
    QCOMPARE(g.num_shared_tokens, int64_t{32});
    QCOMPARE(g.sequences, (Members{{100, 0}, {101, 0}, {102, 0}}));
    QCOMPARE(g.num_tokens_saved(), int64_t{64});  // (3 - 1) x 32
  }

  void siblingsNestInsideTheSystemPrompt() {
    const auto groups = findSharedPrefixes(*nestedSnapshot());
    QCOMPARE(groups.size(), size_t{3});
    // Outermost first: the system prompt, shared by all four running siblings.
    QCOMPARE(groups[0].blocks, (std::vector<int32_t>{0, 1}));
    QCOMPARE(groups[0].sequences, (Members{{10, 0}, {10, 1}, {11, 0}, {11, 1}}));
    QCOMPARE(groups[0].num_tokens_saved(), int64_t{96});  // 3 x 32
    // Then each request's own prompt tail, saved once (n - 1 = 1) each.
    QCOMPARE(groups[1].blocks, (std::vector<int32_t>{0, 1, 2}));
    QCOMPARE(groups[1].first_own_block, 2);
    QCOMPARE(groups[1].num_shared_tokens, int64_t{37});
    QCOMPARE(groups[1].num_own_tokens, int64_t{5});
    QCOMPARE(groups[1].sequences, (Members{{10, 0}, {10, 1}}));
    QCOMPARE(groups[1].num_tokens_saved(), int64_t{5});
    QCOMPARE(groups[2].blocks, (std::vector<int32_t>{0, 1, 5}));
    QCOMPARE(groups[2].sequences, (Members{{11, 0}, {11, 1}}));
    QCOMPARE(groups[2].num_tokens_saved(), int64_t{7});

    SharedPrefixModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy totals(&model, &SharedPrefixModel::totalsChanged);
    model.setSnapshot(nestedSnapshot());
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.totalTokensSaved(), int64_t{108});  // 96 + 5 + 7: no block counted twice
    QCOMPARE(model.index(1, SharedPrefixModel::Blocks).data().toString(), QStringLiteral("0 1 | 2"));
    QCOMPARE(model.index(0, SharedPrefixModel::Requests).data().toString(), QStringLiteral("10 #1, 10 #2, 11 #1, 11 #2"));
    QCOMPARE(model.index(0, SharedPrefixModel::NumSequences).data().toInt(), 4);
    QCOMPARE(model.index(0, SharedPrefixModel::TokensSaved).data().toLongLong(), 96);
    QCOMPARE(model.index(0, SharedPrefixModel::BytesSaved).data().toString(), QStringLiteral("—"));
    model.setKvBytesPerToken(46080);
    QCOMPARE(model.totalBytesSaved(), int64_t{108} * 46080);
    QCOMPARE(model.index(0, SharedPrefixModel::BytesSaved).data().toString(), QStringLiteral("4.22 MiB"));  // 96 x 46080 bytes
    QCOMPARE(totals.count(), 2);
    QCOMPARE(totals.last().at(0).toLongLong(), 108);
    QCOMPARE(totals.last().at(1).toLongLong(), 108 * 46080);
  }

  // Request ids as integers, in numeric order (9 before 10, not after it as
  // text would put it), completion numbers only for parallel completions.
  void requestIdsAreIntegersInNumericOrder() {
    SharedPrefixModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(snapshotOf({{10, 0, {0, 1, 2}}, {9, 0, {0, 1, 3}}, {100, 0, {0, 1, 4}}, {12, 0, {0, 5}},
                                  {12, 1, {0, 6}}}));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(0, SharedPrefixModel::Requests).data().toString(),
             QStringLiteral("9, 10, 12 #1, 12 #2, 100"));
    QCOMPARE(model.index(1, SharedPrefixModel::Requests).data().toString(), QStringLiteral("9, 10, 100"));
  }

  void rowsKeepTheirPlace() {
    SharedPrefixModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setSnapshot(nestedSnapshot());
    // Sibling 10 #2 finishes; request 14 joins the system prompt with 2 siblings.
    const auto next = snapshotOf({{10, 0, {0, 1, 2, 3}},
                                  {11, 0, {0, 1, 5, 6}},
                                  {11, 1, {0, 1, 5, 7}},
                                  {14, 0, {0, 1, 9, 10}},
                                  {14, 1, {0, 1, 9, 11}}});
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    model.setSnapshot(next);
    QCOMPARE(removed.count(), 1);  // 10's group: only 10 is left
    QCOMPARE(removed.first().at(1).toInt(), 1);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(model.rowCount(), 3);
    // The system prompt's row stays first, with its new members.
    QCOMPARE(model.index(0, SharedPrefixModel::Requests).data().toString(),
             QStringLiteral("10, 11 #1, 11 #2, 14 #1, 14 #2"));
    QCOMPARE(model.index(1, SharedPrefixModel::Requests).data().toString(), QStringLiteral("11 #1, 11 #2"));
    QCOMPARE(model.index(2, SharedPrefixModel::Requests).data().toString(), QStringLiteral("14 #1, 14 #2"));
    model.setSnapshot(nullptr);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.totalTokensSaved(), int64_t{0});
  }

  void cascadePassesGoToTheRowWhoseBlocksTheyRead() {
    // The system prompt (blocks 0, 1: 32 tokens) read once for the four
    // running siblings; request 10's siblings also share block 2, and a pass
    // over it alone belongs to their row, not the system prompt's. Blocks
    // listed in any order; a pass over blocks no row holds is left out.
    auto s = std::make_shared<EngineSnapshot>(*nestedSnapshot());
    CascadeGroupSnapshot system_prompt;
    system_prompt.num_shared_tokens = 32;
    system_prompt.blocks = {1, 0};
    system_prompt.request_ids = {10, 10, 11, 11};
    system_prompt.indices = {0, 1, 0, 1};
    CascadeGroupSnapshot stray;
    stray.num_shared_tokens = 32;
    stray.blocks = {40, 41};
    stray.request_ids = {50, 51};
    stray.indices = {0, 0};
    s->cascade_groups = {system_prompt, stray};
    s->last_step.attention_time_s = 0.003;
    s->last_step.num_cascade_groups = 2;

    SharedPrefixModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.columnCount(), int(SharedPrefixModel::NumColumns));
    QCOMPARE(model.headerData(SharedPrefixModel::Cascade, Qt::Horizontal).toString(), QStringLiteral("Cascade"));
    QCOMPARE(model.headerData(SharedPrefixModel::KvNotRead, Qt::Horizontal).toString(), QStringLiteral("K/V not read"));
    model.setSnapshot(s);
    QCOMPARE(model.rowCount(), 3);
    const auto cell = [&](int row, int column) { return model.index(row, column).data().toString(); };
    QCOMPARE(cell(0, SharedPrefixModel::Cascade), QStringLiteral("yes: 32 × 4"));
    QCOMPARE(cell(1, SharedPrefixModel::Cascade), QStringLiteral("no"));
    QCOMPARE(cell(2, SharedPrefixModel::Cascade), QStringLiteral("no"));
    // A "no" says why, by the mode in force: auto's thresholds against the
    // group's size (a bare "no" left a learner guessing), or off.
    const auto why = [&](int row) {
      return model.data(model.index(row, SharedPrefixModel::Cascade), Qt::ToolTipRole).toString();
    };
    QVERIFY2(why(1).contains(QStringLiteral("auto")) && why(1).contains(QStringLiteral("4 or more sequences")),
             qPrintable(why(1)));
    QVERIFY(model.data(model.index(0, SharedPrefixModel::Cascade), Qt::ToolTipRole).isNull());  // it had a pass
    model.setCascadeMode(kvscope::CascadeMode::Off);
    QVERIFY2(why(1).contains(QStringLiteral("off")), qPrintable(why(1)));
    model.setCascadeMode(kvscope::CascadeMode::Auto);
    QCOMPARE(model.groups()[0].num_cascade_tokens_not_read, int64_t{3 * 32});
    // Bytes need the model's K/V bytes per token.
    QCOMPARE(cell(0, SharedPrefixModel::KvNotRead), QStringLiteral("—"));
    model.setKvBytesPerToken(test::kSmolKvBytesPerToken);
    QCOMPARE(cell(0, SharedPrefixModel::KvNotRead), QStringLiteral("4.22 MiB"));  // 3 x 32 x 46080 bytes
    QCOMPARE(cell(1, SharedPrefixModel::KvNotRead), QStringLiteral("—"));
    QCOMPARE(model.lastStep().num_cascade_groups, 2);
    QCOMPARE(model.lastStep().attention_time_s, 0.003);

    // With the engine's own count for the step (what the kernel skipped),
    // that is shared out by (members - 1) x tokens: 96 of the 128 (the stray
    // pass has 32), so 3/4 of 1 MiB here.
    s->last_step.cascade_kv_bytes_saved = 1 << 20;
    model.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    QCOMPARE(cell(0, SharedPrefixModel::KvNotRead), QStringLiteral("768.0 KiB"));
    QCOMPARE(model.kvBytesNotRead(model.groups()[0]), int64_t{768 * 1024});
    QCOMPARE(model.kvBytesNotRead(model.groups()[1]), int64_t{-1});
    s->last_step.cascade_kv_bytes_saved = 0;

    // A pass over request 10's own prompt block (with the system prompt
    // before it) is that row's.
    CascadeGroupSnapshot siblings;
    siblings.num_shared_tokens = 32;  // whole tiles: 37 positions rounded down
    siblings.blocks = {0, 1, 2};
    siblings.request_ids = {10, 10};
    siblings.indices = {0, 1};
    s->cascade_groups = {siblings};
    model.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    QCOMPARE(cell(0, SharedPrefixModel::Cascade), QStringLiteral("no"));
    QCOMPARE(cell(1, SharedPrefixModel::Cascade), QStringLiteral("yes: 32 × 2"));
    QCOMPARE(cell(1, SharedPrefixModel::KvNotRead), SharedPrefixModel::formatBytes(32 * test::kSmolKvBytesPerToken));

    // The next step without cascade clears the columns.
    s->cascade_groups.clear();
    model.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    for (int row = 0; row < model.rowCount(); ++row) QCOMPARE(cell(row, SharedPrefixModel::Cascade), QStringLiteral("no"));
  }

  void badBlockIdsEndTheSharedRun() {
    auto s = snapshotOf({{1, 0, {0, 1, 999}}, {1, 1, {0, 1, 999}}, {2, 0, {-5, 0}}, {3, 0, {-5, 0}}});
    const auto groups = findSharedPrefixes(*s);
    QCOMPARE(groups.size(), size_t{1});
    QCOMPARE(groups[0].blocks, (std::vector<int32_t>{0, 1}));
  }

  void fastAt64SequencesOf20Blocks() {
    // 8 requests x 8 siblings: a 4-block system prompt, a 6-block prompt per
    // request, 10 own blocks per sibling: 64 tables of 20 blocks, 9 groups.
    auto s = std::make_shared<EngineSnapshot>();
    s->block_size = 16;
    s->blocks.resize(4096);
    for (auto& b : s->blocks) b.fill = 16;
    int32_t next = 4;
    for (RequestId r = 0; r < 8; ++r) {
      std::vector<int32_t> prompt{0, 1, 2, 3};
      for (int i = 0; i < 6; ++i) prompt.push_back(next++);
      for (int32_t k = 0; k < 8; ++k) {
        SequenceSnapshot seq;
        seq.id = 100 + r;
        seq.index = k;
        seq.state = SequenceState::Running;
        seq.block_table = prompt;
        for (int i = 0; i < 10; ++i) seq.block_table.push_back(next++);
        s->sequences.push_back(seq);
      }
    }
    SharedPrefixModel model;
    SnapshotPtr snapshot = s;
    model.setSnapshot(snapshot);
    QCOMPARE(model.rowCount(), 9);
    // 63 x 64 (system prompt) + 8 x 7 x 96 (each request's prompt).
    QCOMPARE(model.totalTokensSaved(), int64_t{63 * 64 + 8 * 7 * 96});
    constexpr int kRounds = 200;
    QElapsedTimer timer;
    timer.start();
    for (int i = 0; i < kRounds; ++i) model.setSnapshot(snapshot);
    const double us = static_cast<double>(timer.nsecsElapsed()) / 1000.0 / kRounds;
    qInfo("setSnapshot, 64 sequences x 20 blocks: %.1f us", us);
    QVERIFY2(us < 5000.0, "far above the 50 ms a 20 Hz feed allows for everything");
  }
};

QTEST_GUILESS_MAIN(SharedPrefixModelTest)
#include "shared_prefix_model_test.moc"
