// BlockMapWidget rendered into QImages: a focused sequence's blocks keep
// their colour and carry their logical numbers, the rest are washed out; the
// hover tooltip names the block (and its logical position); blocks the last
// step's cascade pass read carry the cascade mark and say so on hover;
// blocks a recent context shift freed carry a cross and say so; and
// the time to paint a 4096-block pool.
//   ctest --test-dir build -R block_map_widget_test --output-on-failure
#include <algorithm>

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QImage>
#include <QToolTip>
#include <QtTest>

#include "block_cell_style.h"
#include "block_map_widget.h"
#include "test_palettes.h"
#include "test_snapshots.h"

using namespace kvscope;
using kvscope::ui::BlockMapWidget;

namespace {

QImage render(BlockMapWidget& w) {
  QImage image(w.size(), QImage::Format_ARGB32);
  w.render(&image);
  return image;
}

// A pixel inside the cell, away from the shared-block corner mark, the
// outline and the centred number.
QColor bodyColour(const QImage& image, const BlockMapWidget& w, int block) {
  const QRect r = w.cellRect(block);
  return image.pixelColor(r.right() - 3, r.bottom() - 3);
}

// Pixels of the cell's middle that differ from its body colour (a number).
int markedPixels(const QImage& image, const BlockMapWidget& w, int block) {
  const QRect r = w.cellRect(block).adjusted(3, 3, -3, -3);
  const QColor body = bodyColour(image, w, block);
  int n = 0;
  for (int y = r.top(); y <= r.bottom(); ++y) {
    for (int x = r.left(); x <= r.right(); ++x) n += image.pixelColor(x, y) != body;
  }
  return n;
}

}  // namespace

class BlockMapWidgetTest : public QObject {
  Q_OBJECT
 private slots:
  void focusedSequenceStandsOutInLogicalOrder() {
    // Sequences 100, 101, 102 share block 0; 101 owns blocks 3 and 4.
    auto s = test::makeSnapshot(3, 3, 1);
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    QVERIFY(w.cellSize() >= BlockMapWidget::kNumberedCell);
    const QImage plain = render(w);

    w.setFocusedSequence(101, 0);
    QCOMPARE(w.focusedPosition(0), 0);
    QCOMPARE(w.focusedPosition(3), 1);
    QCOMPARE(w.focusedPosition(4), 2);
    QCOMPARE(w.focusedPosition(1), -1);  // sequence 100's own block
    const QImage focused = render(w);
    // The focused sequence's own block keeps its colour; another sequence's
    // block is washed out (paler, less saturated).
    QCOMPARE(bodyColour(focused, w, 3), bodyColour(plain, w, 3));
    const QColor washed = bodyColour(focused, w, 1);
    QVERIFY(washed != bodyColour(plain, w, 1));
    QVERIFY(washed.hsvSaturation() < bodyColour(plain, w, 1).hsvSaturation());
    QVERIFY(washed != bodyColour(focused, w, 3));
    // Numbers in the focused cells only.
    QVERIFY(markedPixels(focused, w, 3) > 0);
    QVERIFY(markedPixels(focused, w, 4) > 0);
    QCOMPARE(markedPixels(focused, w, 1), 0);
    QCOMPARE(markedPixels(plain, w, 3), 0);

    // Clearing the focus gives back the plain picture.
    w.clearFocusedSequence();
    QCOMPARE(render(w), plain);
    // An unknown sequence shows no focus at all (nothing washed out).
    w.setFocusedSequence(555, 0);
    QCOMPARE(render(w), plain);
  }

  void focusFollowsSnapshotsAndSkipsSwapped() {
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    BlockMapWidget w;
    w.resize(400, 300);
    w.setFocusedSequence(102, 0);  // before any snapshot
    w.setSnapshot(s);
    QCOMPARE(w.focusedPosition(5), 1);
    s->sequences[2].state = SequenceState::Swapped;  // its table now means swap ids
    w.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    QCOMPARE(w.focusedPosition(5), -1);
    QCOMPARE(w.focusedPosition(0), -1);
  }

  // A click selects the block's requests; once they have finished the
  // selection lets go, so the other cells are no longer washed out.
  void aClickSelectionEndsWithItsRequests() {
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    QSignalSpy selected(&w, &BlockMapWidget::requestsSelected);
    QTest::mouseClick(&w, Qt::LeftButton, {}, w.cellRect(5).center());
    QCOMPARE(selected.count(), 1);
    QVERIFY(!w.selectedRequests().empty());
    w.setSnapshot(std::make_shared<EngineSnapshot>(*s));  // still running: kept
    QCOMPARE(selected.count(), 1);
    auto finished = std::make_shared<EngineSnapshot>(*s);
    finished->sequences.clear();
    w.setSnapshot(finished);
    QVERIFY(w.selectedRequests().empty());
    QCOMPARE(selected.count(), 2);
    QVERIFY(selected.last().at(0).value<QList<quint64>>().isEmpty());
  }

  void tooltipNamesTheBlock() {
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(test::makeSnapshot(3, 3, 1));
    w.setFocusedSequence(101, 0);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QPoint at = w.cellRect(3).center();
    QHelpEvent help(QEvent::ToolTip, at, w.mapToGlobal(at));
    QApplication::sendEvent(&w, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(QStringLiteral("Block 3")), qPrintable(QToolTip::text()));
    QVERIFY(QToolTip::text().contains(QStringLiteral("logical block 1 of request 101")));
    // Named as the tables name it, not in the retired "101.0" form (sequence_label.h).
    QVERIFY2(!QToolTip::text().contains(QStringLiteral("101.0")), qPrintable(QToolTip::text()));
    QVERIFY(QToolTip::text().contains(QStringLiteral("owners: 101")));
    QToolTip::hideText();
  }

  // A block held but not yet written (contiguous mode reserves a request's
  // whole length) says so: its tooltip read as any used block's.
  void tooltipSaysAHeldEmptyBlockIsReserved() {
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    BlockMapWidget w;
    w.setSnapshot(s);
    QVERIFY2(!w.tooltipFor(3).contains(QStringLiteral("reserved")), qPrintable(w.tooltipFor(3)));
    s->blocks[3].fill = 0;
    w.setSnapshot(s);
    QVERIFY2(w.tooltipFor(3).contains(QStringLiteral("reserved, nothing written yet")), qPrintable(w.tooltipFor(3)));
  }

  // One block table serves every tensor-parallel rank: the tooltip says a
  // block holds each rank's KV heads, and which are copies; not at tp = 1.
  void tooltipSaysTheBlockHoldsEveryRanksHeads() {
    BlockMapWidget w;
    w.setSnapshot(test::makeSnapshot(3, 3, 1));
    QVERIFY2(!w.tooltipFor(3).contains(QStringLiteral("rank")), qPrintable(w.tooltipFor(3)));
    w.setSnapshot(test::withRanks(test::makeSnapshot(3, 3, 1), test::smolRanks(2, 1 << 20)));
    const QString two = w.tooltipFor(3);
    QVERIFY2(two.contains(QStringLiteral("one block table for all 2 ranks: each block holds the K/V of every "
                                         "rank's heads (rank 0: KV head 0, rank 1: KV heads 1–2)")),
             qPrintable(two));
    QVERIFY(two.contains(QStringLiteral("Block 3")));  // the rest is still there
    w.setSnapshot(test::withRanks(test::makeSnapshot(3, 3, 1), test::smolRanks(4, 1 << 20)));
    const QString four = w.tooltipFor(0);
    QVERIFY2(four.contains(QStringLiteral("rank 1: KV head 1, rank 2: KV head 2 (a copy), rank 3: KV head 2 (a copy)")),
             qPrintable(four));
  }

  // Blocks a context shift freed in the last kDroppedMarkSeconds carry a
  // crimson cross and say so on hover; older shifts and blocks in use again
  // (reallocated) do not.
  void blocksFreedByAContextShiftAreMarkedForAWhile() {
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));  // blocks 0..6 used, 16 slots
    s->time_s = 10.0;
    auto shift = [](RequestId id, double time_s, std::vector<int32_t> blocks, std::vector<int32_t> from) {
      ContextShiftSnapshot c;
      c.request_id = id;
      c.time_s = time_s;
      c.dropped_from = from.front();
      c.num_dropped_tokens = 16 * static_cast<int32_t>(blocks.size());
      c.freed_blocks = std::move(blocks);
      c.freed_from = std::move(from);
      return c;
    };
    s->recent_shifts = {shift(102, 10.0 - 5.0, {22}, {64}),           // too old
                        shift(101, 10.0 - 0.5, {20, 21, 3}, {32, 48, 64})};  // block 3 is in use again
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    QVERIFY(w.droppedMarked(20));
    QVERIFY(w.droppedMarked(21));
    QVERIFY(!w.droppedMarked(22));
    QVERIFY(!w.droppedMarked(3));
    QVERIFY(!w.droppedMarked(25));
    QVERIFY2(w.tooltipFor(20).contains(QStringLiteral("dropped by a context shift of request 101: positions 32–47")),
             qPrintable(w.tooltipFor(20)));
    QVERIFY(w.tooltipFor(21).contains(QStringLiteral("positions 48–63")));
    QVERIFY(w.tooltipFor(20).contains(QStringLiteral("Block 20")));  // the rest is still there
    QVERIFY(!w.tooltipFor(22).contains(QStringLiteral("context shift")));
    QVERIFY(!w.tooltipFor(3).contains(QStringLiteral("context shift")));

    // The cross: crimson pixels in the marked cells, none in the others.
    const QImage marked = render(w);
    auto crimson = [&](const QImage& image, int block) {
      const QRect r = w.cellRect(block);
      int n = 0;
      for (int y = r.top(); y <= r.bottom(); ++y) {
        for (int x = r.left(); x <= r.right(); ++x) {
          const QColor c = image.pixelColor(x, y);
          n += c.red() > 150 && c.green() < 90 && c.blue() < 110;
        }
      }
      return n;
    };
    QVERIFY(crimson(marked, 20) > w.cellRect(20).width());
    QVERIFY(crimson(marked, 21) > 0);
    QCOMPARE(crimson(marked, 22), 0);
    QCOMPARE(crimson(marked, 25), 0);

    // Two seconds later the shift is no longer news.
    auto later = std::make_shared<EngineSnapshot>(*s);
    later->time_s = 10.0 - 0.5 + kvscope::ui::kDroppedMarkSeconds + 0.01;
    w.setSnapshot(later);
    QVERIFY(!w.droppedMarked(20));
    QVERIFY(!w.tooltipFor(20).contains(QStringLiteral("context shift")));
    QCOMPARE(crimson(render(w), 20), 0);
  }

  // Every block is drawn while the smallest cells fit (a 512 MB pool of 728
  // blocks drew about half of them in a short panel, with no word of the
  // rest); a pool too large for the panel says how much of it is shown.
  void aSmallPanelShowsEveryBlockOrSaysHowManyItShows() {
    BlockMapWidget w;
    w.resize(120, 80);  // the widget's minimum
    w.show();           // so that resizes reach it
    w.setSnapshot(test::makeSnapshot(3, 3, 1, 728));
    QCOMPARE(w.shownBlocks(), 728);
    QVERIFY(w.cellRect(727).bottom() < w.height());
    w.setSnapshot(test::makeSnapshot(3, 3, 1, 4000));
    QVERIFY2(w.shownBlocks() > 0 && w.shownBlocks() < 4000, qPrintable(QString::number(w.shownBlocks())));
    const int last = w.shownBlocks() - 1;
    QVERIFY(w.cellRect(last).bottom() < w.height() - w.fontMetrics().height());  // above the note
    QCOMPARE(w.blockAt(QPoint(w.width() / 2, w.height() - 3)), -1);              // the note is no block
    // The note is drawn: text-coloured pixels in the bottom strip, none there without it.
    const QImage image = render(w);
    const QColor ink = w.palette().color(QPalette::WindowText);
    int inked = 0;
    for (int y = w.height() - w.fontMetrics().height(); y < w.height(); ++y) {
      for (int x = 0; x < w.width(); ++x) inked += image.pixelColor(x, y) == ink;
    }
    QVERIFY(inked > 10);
    w.resize(1200, 900);
    QCOMPARE(w.shownBlocks(), 4000);
  }

  // An engine gone idle sends no snapshot, yet the marks still end on time:
  // the widget carries the last snapshot's clock on (they stayed for good).
  void theMarksEndWhenNoSnapshotComes() {
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    s->time_s = 10.0;
    ContextShiftSnapshot c;
    c.request_id = 101;
    c.time_s = 10.0 - kvscope::ui::kDroppedMarkSeconds + 0.2;  // 0.2 s left
    c.dropped_from = 32;
    c.num_dropped_tokens = 16;
    c.freed_blocks = {20};
    c.freed_from = {32};
    s->recent_shifts = {c};
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    QVERIFY(w.droppedMarked(20));
    QTRY_VERIFY_WITH_TIMEOUT(!w.droppedMarked(20), 3000);
    QVERIFY(!w.tooltipFor(20).contains(QStringLiteral("context shift")));
  }

  void tooltipShowsTheBlocksText() {
    // Sequence 101 (blocks 0, 3, 4 of 16 slots; the last holds 8) spells a
    // chat prompt one byte per token; the table maps ids to bytes as a byte
    // vocabulary does, 256 being <|im_start|>.
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 1));
    std::vector<int32_t>& tokens = s->sequences[1].tokens;
    tokens.clear();
    const auto append = [&tokens](const std::string& bytes) {
      for (char c : bytes) tokens.push_back(static_cast<unsigned char>(c));
    };
    append("0123456789abcdef");
    tokens.push_back(256);
    append("user\n\t 日日本 a<b>&c");
    QCOMPARE(tokens.size(), size_t{40});
    auto table = std::make_shared<std::vector<std::string>>();
    for (int b = 0; b < 256; ++b) table->emplace_back(1, static_cast<char>(b));
    table->emplace_back("<|im_start|>");

    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    // Without a token table the tooltip names the slots, not the text.
    QVERIFY2(w.tooltipFor(3).contains(QStringLiteral("tokens 16–31 of request 101")), qPrintable(w.tooltipFor(3)));
    QVERIFY(!w.tooltipFor(3).contains(QStringLiteral("user")));

    w.setTokenBytes(table);
    // Block 3 holds tokens 16..31: <|im_start|>, "user\n\t ", "日日", and
    // the first two of the three bytes of "本" (a character cut by the
    // block's edge: U+FFFD).
    const QString tip3 = w.tooltipFor(3);
    QVERIFY2(tip3.contains(QStringLiteral("“<span style=\"white-space:pre-wrap\">"
                                          "&lt;|im_start|&gt;user\u21B5\u2192 日日\uFFFD</span>”")),
             qPrintable(tip3));
    // Block 4 (8 of 16 slots): the last byte of "本", then " a<b>&c"
    // escaped, its leading space kept.
    const QString tip4 = w.tooltipFor(4);
    QVERIFY2(tip4.contains(QStringLiteral("tokens 32–39 of request 101")), qPrintable(tip4));
    QVERIFY2(tip4.contains(QStringLiteral(">\uFFFD a&lt;b&gt;&amp;c</span>”")), qPrintable(tip4));
    // A shared block names its first owner's slots; a free or cached-free
    // block holds no sequence's tokens.
    QVERIFY(w.tooltipFor(0).contains(QStringLiteral("tokens 0–15 of request 100")));
    QVERIFY(!w.tooltipFor(0).contains(QStringLiteral("100.0")));  // an id, not a decimal number
    QVERIFY(!w.tooltipFor(20).contains(QStringLiteral("tokens")));
    QVERIFY(!w.tooltipFor(63).contains(QStringLiteral("tokens")));
    QVERIFY(w.tooltipFor(-1).isEmpty());

    // The same text reaches the tooltip a hover shows.
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QPoint at = w.cellRect(3).center();
    QHelpEvent help(QEvent::ToolTip, at, w.mapToGlobal(at));
    QApplication::sendEvent(&w, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(QStringLiteral("user\u21B5")), qPrintable(QToolTip::text()));
    QToolTip::hideText();
  }

  void cascadeMarkOnExactlyTheBlocksTheSharedPassRead() {
    // Sequences 100..102 share blocks 0 and 1 (32 tokens), read once by a
    // cascade pass; each owns two more blocks.
    auto s = std::make_shared<EngineSnapshot>(*test::makeCascadeSnapshot(3, 4, 2));
    BlockMapWidget w;
    w.resize(400, 300);
    w.setSnapshot(s);
    const int n = static_cast<int>(s->blocks.size());
    for (int b = 0; b < n; ++b) QCOMPARE(w.cascadeMarked(b), b < 2);
    QCOMPARE(w.cascadeGroupOf(1), 0);
    QCOMPARE(w.cascadeGroupOf(-1), -1);
    QCOMPARE(w.cascadeGroupOf(n), -1);

    // Painted: the amber triangle in the bottom-right corner of those cells
    // and no other; the shared mark (top-left) stays on the shared ones.
    const ui::CellPalette colours = ui::CellPalette::fromPalette(w.palette());
    const QImage image = render(w);
    const auto cornerColour = [&](int block) { return image.pixelColor(w.cellRect(block).bottomRight() - QPoint(2, 2)); };
    for (int b = 0; b < n; ++b) {
      QVERIFY2((cornerColour(b) == colours.cascade_fill) == (b < 2), qPrintable(QString::number(b)));
    }
    QCOMPARE(image.pixelColor(w.cellRect(0).topLeft() + QPoint(2, 2)), colours.mark_fill);

    // Hover text says who the pass served.
    QVERIFY2(w.tooltipFor(0).contains(QStringLiteral("read once by the cascade pass for 3 sequences (32 shared tokens)")),
             qPrintable(w.tooltipFor(0)));
    QVERIFY(!w.tooltipFor(2).contains(QStringLiteral("cascade")));

    // A block that is no longer in use (its requests ended with the step)
    // loses the mark.
    s->blocks[1].state = BlockState::CachedFree;
    w.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    QVERIFY(w.cascadeMarked(0) && !w.cascadeMarked(1));
    s->blocks[1].state = BlockState::Used;
    // Block ids outside the pool are ignored; the next step without a
    // cascade pass takes every mark away.
    s->cascade_groups[0].blocks.push_back(9999);
    s->cascade_groups[0].blocks.push_back(-3);
    w.setSnapshot(std::make_shared<EngineSnapshot>(*s));
    QVERIFY(w.cascadeMarked(0) && w.cascadeMarked(1) && !w.cascadeMarked(2));
    w.setSnapshot(test::makeSnapshot(3, 4, 2));
    for (int b = 0; b < n; ++b) QVERIFY(!w.cascadeMarked(b));
    QVERIFY(render(w).pixelColor(w.cellRect(0).bottomRight() - QPoint(2, 2)) != colours.cascade_fill);
  }

  // Free cells come from a cached picture of the all-free pool (paintEvent):
  // it follows a resize, the palette and the pool's size, and the gaps
  // between cells stay the base colour.
  void freeCellsFollowSizePaletteAndPool() {
    BlockMapWidget w;
    w.setPalette(test::lightPalette());
    w.resize(160, 100);
    w.setSnapshot(test::makeSnapshot(2, 2, 0, 64));  // blocks 0-3 used, 63 cached-free, the rest free
    const auto freeColour = [&] { return kvscope::ui::CellPalette::fromPalette(w.palette()).free; };
    QCOMPARE(bodyColour(render(w), w, 40), freeColour());
    const QRect light_cell = w.cellRect(40);  // after the render, which sent the resize
    const QColor light_free = freeColour();

    w.setPalette(test::darkPalette());
    QImage dark = render(w);
    QVERIFY(freeColour() != light_free);
    QCOMPARE(bodyColour(dark, w, 40), freeColour());
    QCOMPARE(dark.pixelColor(w.cellRect(40).right() + 1, w.cellRect(40).top()), w.palette().color(QPalette::Base));

    w.resize(500, 400);  // bigger cells (laid out as the render sends the resize)
    const QImage resized = render(w);
    QVERIFY(w.cellRect(40) != light_cell);
    QCOMPARE(bodyColour(resized, w, 40), freeColour());

    w.setSnapshot(test::makeSnapshot(2, 2, 0, 128));  // a bigger pool: cells the old picture did not have
    const QImage bigger = render(w);
    QCOMPARE(bodyColour(bigger, w, 120), freeColour());
    QVERIFY(bodyColour(bigger, w, 0) != freeColour());  // used cells are drawn over it
  }

  void paints4096BlocksQuickly() {
    // 64 sequences x 20 blocks (4 shared), in a pool of 4096.
    auto s = test::makeSnapshot(64, 20, 4, 4096);
    BlockMapWidget w;
    w.resize(1200, 900);  // 16-pixel cells: numbers are drawn
    w.setSnapshot(s);
    w.setFocusedSequence(130, 0);
    QVERIFY(w.cellSize() >= BlockMapWidget::kNumberedCell);
    QImage image(w.size(), QImage::Format_ARGB32);
    std::vector<double> ms;
    for (int i = 0; i < 15; ++i) {
      QElapsedTimer timer;
      timer.start();
      w.render(&image);
      ms.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(ms.begin(), ms.end());
    qInfo("paint of 4096 blocks (%d px cells, focus on): median %.2f ms, min %.2f ms", w.cellSize(), ms[ms.size() / 2],
          ms.front());
    w.clearFocusedSequence();
    w.resize(640, 480);  // small cells, no numbers
    w.render(&image);
    QVERIFY(ms[ms.size() / 2] < 250.0);
  }
};

QTEST_MAIN(BlockMapWidgetTest)
#include "block_map_widget_test.moc"
