// cellStyleFor: the block map's state -> look mapping, on a hand-made snapshot.
//   ctest --test-dir build-gui -R block_cell_style_test
#include <span>

#include <QtTest>

#include "block_cell_style.h"
#include "palette_colors.h"
#include "test_palettes.h"
#include "test_snapshots.h"

using namespace kvscope;
using kvscope::ui::CellKind;
using kvscope::ui::cellStyleFor;

namespace {

std::span<const RequestId> owners(const EngineSnapshot& s, int block) {
  const BlockSnapshot& b = s.blocks[size_t(block)];
  return {s.block_owners.data() + b.owners_begin, size_t(b.owners_end - b.owners_begin)};
}

}  // namespace

class BlockCellStyleTest : public QObject {
  Q_OBJECT
 private slots:
  void statesMapToKinds() {
    auto s = test::makeSnapshot(3, 3, 2);
    const auto shared = cellStyleFor(s->blocks[0], owners(*s, 0), s->block_size);
    QCOMPARE(shared.kind, CellKind::Used);
    QVERIFY(shared.shared);
    QCOMPARE(shared.fill_fraction, 1.0);
    const auto own = cellStyleFor(s->blocks[2], owners(*s, 2), s->block_size);  // seq 100's half block
    QCOMPARE(own.kind, CellKind::Used);
    QVERIFY(!own.shared);
    QCOMPARE(own.fill_fraction, 0.5);
    const auto cached = cellStyleFor(s->blocks.back(), {}, s->block_size);
    QCOMPARE(cached.kind, CellKind::CachedFree);
    const auto free_cell = cellStyleFor(s->blocks[40], {}, s->block_size);
    QCOMPARE(free_cell.kind, CellKind::Free);
    // The three kinds look different.
    QVERIFY(cached.fill != free_cell.fill);
    QVERIFY(own.fill != free_cell.fill && own.fill != cached.fill);
  }

  void hueIsStablePerRequestAndShadeFollowsFill() {
    auto s = test::makeSnapshot(2, 3, 0);
    // Sequence 100: blocks 0 (full), 1 (full), 2 (half); sequence 101: 3, 4, 5.
    const auto full = cellStyleFor(s->blocks[0], owners(*s, 0), s->block_size);
    const auto half = cellStyleFor(s->blocks[2], owners(*s, 2), s->block_size);
    const auto other = cellStyleFor(s->blocks[3], owners(*s, 3), s->block_size);
    QCOMPARE(full.fill.hsvHue(), half.fill.hsvHue());
    QCOMPARE(full.fill.hsvHue(), ui::hueForRequest(100));
    QVERIFY(full.fill.hsvHue() != other.fill.hsvHue());
    QVERIFY(full.fill.value() < half.fill.value());            // fuller is darker
    QVERIFY(full.fill.hsvSaturation() > half.fill.hsvSaturation());
    QCOMPARE(ui::hueForRequest(100), ui::hueForRequest(100));
    // Neighbouring ids are far apart on the colour wheel.
    const int d = std::abs(ui::hueForRequest(7) - ui::hueForRequest(8));
    QVERIFY(std::min(d, 360 - d) > 40);
  }

  void selectionHighlightsOwnersAndDimsTheRest() {
    auto s = test::makeSnapshot(3, 3, 1);
    const RequestId pick[] = {101};
    const auto shared = cellStyleFor(s->blocks[0], owners(*s, 0), s->block_size, pick);
    QVERIFY(shared.highlighted && !shared.dimmed);
    const auto mine = cellStyleFor(s->blocks[1], owners(*s, 1), s->block_size, pick);  // seq 100's own
    QVERIFY(!mine.highlighted && mine.dimmed);
    const auto undimmed = cellStyleFor(s->blocks[1], owners(*s, 1), s->block_size);
    QVERIFY(mine.fill.hsvSaturation() < undimmed.fill.hsvSaturation());
  }

  void darkPaletteKeepsCellsReadable() {
    auto s = test::makeSnapshot(2, 3, 0);
    const auto dark = ui::CellPalette::fromPalette(test::darkPalette());
    const auto light = ui::CellPalette::fromPalette(test::lightPalette());
    QVERIFY(dark.dark && !light.dark);
    const QColor background = dark.background;
    const auto full = cellStyleFor(s->blocks[0], owners(*s, 0), s->block_size, {}, dark);
    const auto half = cellStyleFor(s->blocks[2], owners(*s, 2), s->block_size, {}, dark);
    const auto free_cell = cellStyleFor(s->blocks[40], {}, s->block_size, {}, dark);
    const auto cached = cellStyleFor(s->blocks.back(), {}, s->block_size, {}, dark);
    // Same hue per request as on a light theme; the fuller block stands out
    // more from the dark background (brighter), a free one barely.
    QCOMPARE(full.fill.hsvHue(), ui::hueForRequest(100));
    QVERIFY(full.fill.value() > half.fill.value());
    QVERIFY(ui::contrastRatio(full.fill, background) > ui::contrastRatio(half.fill, background));
    QVERIFY(ui::contrastRatio(half.fill, background) > ui::contrastRatio(free_cell.fill, background));
    QVERIFY(free_cell.fill.lightness() < 100 && free_cell.fill != background);
    QVERIFY(cached.fill != free_cell.fill && cached.fill.lightness() < 140);
    // Washing out moves a block towards the background on either theme.
    const auto washed_dark = ui::washedOut(full, dark);
    QVERIFY(ui::contrastRatio(washed_dark.fill, background) < ui::contrastRatio(full.fill, background));
    const auto light_full = cellStyleFor(s->blocks[0], owners(*s, 0), s->block_size, {}, light);
    const auto washed_light = ui::washedOut(light_full, light);
    QVERIFY(ui::contrastRatio(washed_light.fill, light.background) <
            ui::contrastRatio(light_full.fill, light.background));
    // Free cells keep their look when washed out (nothing to wash).
    QCOMPARE(ui::washedOut(free_cell, dark).fill, free_cell.fill);
  }

  void oddInputsDoNotCrash() {
    BlockSnapshot b;
    b.state = BlockState::Used;
    b.fill = 99;
    const auto st = cellStyleFor(b, {}, 0);
    QCOMPARE(st.fill_fraction, 1.0);
    QVERIFY(st.fill.isValid());
  }
};

QTEST_GUILESS_MAIN(BlockCellStyleTest)
#include "block_cell_style_test.moc"
