// MemoryPanel, SharedPrefixPanel and PlotsWidget as widgets (offscreen): the
// what-if form drives the estimate and the Apply button, bad entries disable
// it with a message, snapshots feed the panels (the shared-prefix panel's
// cascade columns and last-step attention line, the attention strip's cascade
// and flat steps), and the plots keep a bounded window however many steps
// arrive.
//   ctest --test-dir build -R panels_test --output-on-failure
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>
#include <qcustomplot.h>

#include "memory_panel.h"
#include "models/shared_prefix_model.h"
#include "plot_style.h"
#include "plots_widget.h"
#include "shared_prefix_panel.h"
#include "test_snapshots.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// SmolLM2-135M's shape: 30 layers x 3 KV heads x 64 dims x (K + V) x 4
// bytes = 46080 bytes of KV a token; the what-if plans from the shape.
ModelInfo smolInfo() {
  ModelInfo info;
  info.name = "SmolLM2-135M";
  info.num_layers = 30;
  info.hidden_size = 576;
  info.ffn_size = 1536;
  info.num_heads = 9;
  info.num_kv_heads = 3;
  info.head_dim = 64;
  info.vocab_size = 49152;
  info.weight_bytes = 80u << 20;
  info.kv_bytes_per_token = 46080;
  info.block_size = 16;
  info.num_kv_blocks = 91;
  info.kv_pool_bytes = 91u * 737280u;
  info.context_length = 2048;
  return info;
}

// The strip of `plots` titled `title`; null when there is none.
QCustomPlot* stripTitled(const PlotsWidget& plots, const QString& title) {
  for (QCustomPlot* strip : plots.findChildren<QCustomPlot*>(QString(), Qt::FindDirectChildrenOnly)) {
    if (stripPlotTitle(strip)->text() == title) return strip;
  }
  return nullptr;
}

}  // namespace

class PanelsTest : public QObject {
  Q_OBJECT
 private slots:
  void memoryPanelWhatIfAndApply() {
    MemoryPanel panel;
    auto* apply = panel.findChild<QPushButton*>(QStringLiteral("applyToEngine"));
    QVERIFY(apply);
    QVERIFY(!apply->isEnabled());  // no model yet
    EngineConfig config;
    config.block_size = 16;
    config.kv_budget_bytes = 64ll << 20;
    config.max_seqs = 12;
    panel.setModel(smolInfo(), config);  // no model path: EngineConfig::validate() refuses it
    QVERIFY(!apply->isEnabled());
    config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
    panel.setModel(smolInfo(), config);
    QVERIFY(apply->isEnabled());
    QCOMPARE(model_shape(smolInfo()).kv_bytes_per_token(), int64_t{46080});
    QCOMPARE(panel.whatIf().num_blocks, int64_t{91});
    // The config says 0: the model's context of 2048, but the pool holds 91 x 16 = 1456 tokens.
    QCOMPARE(panel.whatIf().max_model_len, 1456);

    auto spin = [&](const char* name) { return panel.findChild<QSpinBox*>(QString::fromLatin1(name)); };
    spin("blockSize")->setValue(32);
    spin("kvBudgetMiB")->setValue(128);
    spin("promptTokens")->setValue(1);
    QCOMPARE(spin("promptTokens")->suffix(), QStringLiteral(" token"));  // ui/unit_suffix.h
    spin("promptTokens")->setValue(100);
    QCOMPARE(spin("promptTokens")->suffix(), QStringLiteral(" tokens"));
    QCOMPARE(spin("kvBudgetMiB")->suffix(), QStringLiteral(" MiB"));
    spin("outputTokens")->setValue(50);
    spin("maxTokens")->setValue(256);
    // 46080 * 32 = 1474560 bytes a block; 128 MiB / that = 91 blocks.
    QCOMPARE(panel.whatIf().num_blocks, int64_t{91});
    QCOMPARE(panel.whatIf().paged_blocks_per_seq, int64_t{5});        // ceil(150 / 32)
    QCOMPARE(panel.whatIf().contiguous_blocks_per_seq, int64_t{12});  // ceil(356 / 32)
    // The same pool as the engine would plan for that config on this machine.
    const KvPlan plan = plan_kv(model_shape(smolInfo()), panel.whatIfConfig(), physical_memory_bytes());
    QVERIFY(plan.ok());
    QCOMPARE(panel.whatIf().num_blocks, plan.num_blocks);
    QCOMPARE(panel.whatIf().bytes_per_block, plan.bytes_per_block);

    QSignalSpy applied(&panel, &MemoryPanel::applyRequested);
    apply->click();
    QCOMPARE(applied.count(), 1);
    const auto sent = applied.first().at(0).value<EngineConfig>();
    QCOMPARE(sent.block_size, 32);
    QCOMPARE(sent.kv_budget_bytes, 128ll << 20);
    QCOMPARE(sent.num_blocks, 0);
    QCOMPARE(sent.max_seqs, 12);  // the rest of the config is kept

    // More output than max tokens: a message, no Apply.
    spin("outputTokens")->setValue(300);
    QVERIFY(!apply->isEnabled());
    QVERIFY(!panel.whatIf().ok());
    spin("outputTokens")->setValue(50);
    QVERIFY(apply->isEnabled());

    // A budget that holds no block: plan_kv's message, no Apply.
    spin("blockSize")->setValue(2048);  // 2048 x 46080 bytes = 90 MiB a block
    spin("kvBudgetMiB")->setValue(64);
    QVERIFY(!apply->isEnabled());
    QVERIFY(!panel.whatIf().ok());
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("whatIfText"))->text().contains(QStringLiteral("block")));
    spin("blockSize")->setValue(32);
    spin("kvBudgetMiB")->setValue(128);
    QVERIFY(apply->isEnabled());

    // A snapshot splits the KV pool; clear() takes everything away.
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    QCOMPARE(panel.breakdown().kv_pool_bytes, int64_t{91} * 737280);
    panel.clear();
    QVERIFY(!apply->isEnabled());
  }

  // On the CUDA backend the header names the GPU with the share of its memory
  // kvscope holds (weights + pool + workspace), and the tooltip the free
  // memory the pool was planned with; on the CPU neither.
  void memoryPanelShowsDeviceMemoryOnAGpu() {
    MemoryPanel panel;
    EngineConfig config;
    config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
    ModelInfo info = smolInfo();
    info.backend = "cuda";
    info.device_name = "NVIDIA H200";
    info.weight_bytes = size_t{98} << 20;
    info.kv_pool_bytes = size_t{512} << 20;
    info.workspace_bytes = size_t{414} << 20;  // 1 GiB in all
    info.device_total_bytes = size_t{140} << 30;
    info.device_free_bytes = size_t{139} << 30;
    panel.setModel(info, config);
    auto* header = panel.findChild<QLabel*>(QStringLiteral("memoryHeader"));
    QVERIFY(header);
    QVERIFY2(header->text().contains(QStringLiteral("NVIDIA H200 (1.00 of 140.0 GiB)")), qPrintable(header->text()));
    QVERIFY2(header->toolTip().contains(QStringLiteral("142336 MiB free")), qPrintable(header->toolTip()));
    panel.setModel(smolInfo(), config);  // the CPU: no device memory
    QVERIFY2(!header->text().contains(QStringLiteral("GiB)")), qPrintable(header->text()));
    QVERIFY(!header->toolTip().contains(QStringLiteral("GPU memory")));
  }

  // The breakdown says what the workspace holds, and speculation's extra
  // logits rows show there (a jump from 60 to 108 MiB went unexplained).
  void memoryPanelSaysWhatTheWorkspaceHolds() {
    MemoryPanel panel;
    EngineConfig config;
    config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
    config.max_seqs = 64;
    ModelInfo info = smolInfo();
    info.workspace_bytes = size_t{60} << 20;
    panel.setModel(info, config);
    QLabel* breakdown = nullptr;
    for (QLabel* label : panel.findChildren<QLabel*>()) {
      if (label->text().contains(QStringLiteral("Workspace:"))) breakdown = label;
    }
    QVERIFY(breakdown);
    QVERIFY2(breakdown->text().contains(QStringLiteral("64 rows to sample from (one per sequence)")),
             qPrintable(breakdown->text()));
    config.spec = SpecMethod::EarlyExit;
    config.spec_k = 4;
    panel.setModel(info, config);
    QVERIFY2(breakdown->text().contains(QStringLiteral("rows to sample from (64 sequences × (1 + 4 draft tokens))")),
             qPrintable(breakdown->text()));
  }

  // tp = 2: one row per rank (query heads, KV heads, weights, KV, workspace), from the
  // snapshot; at tp = 1 no table; at tp = 4 the copied KV head is named.
  void memoryPanelShowsPerRankRowsUnderTensorParallelism() {
    MemoryPanel panel;
    EngineConfig config;
    config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
    panel.setModel(smolInfo(), config);
    auto* table = panel.findChild<QLabel*>(QStringLiteral("rankTable"));
    QVERIFY(table);
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    QVERIFY(table->isHidden());  // one rank: nothing to split
    QVERIFY(table->text().isEmpty());

    const int64_t pool = int64_t{91} * 737280;
    config.tp = 2;
    panel.setModel(smolInfo(), config);
    panel.setSnapshot(test::withRanks(test::makeSnapshot(3, 3, 2), test::smolRanks(2, pool)));
    QVERIFY(!table->isHidden());
    const QString text = table->text();
    QVERIFY2(text.contains(QStringLiteral("Tensor parallelism: 2 ranks")), qPrintable(text));
    // Rank 0: query heads 0-2, KV head 0, a third of the pool (21.33 MiB of
    // 64 MiB); rank 1: query heads 3-8, KV heads 1-2, two thirds.
    QVERIFY2(text.contains(QStringLiteral("<td>0</td><td align=center>0–2</td><td align=center>0</td>")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("<td>1</td><td align=center>3–8</td><td align=center>1–2</td>")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("21.33 MiB")) && text.contains(QStringLiteral("42.66 MiB")),
             qPrintable(text));
    // Workspace: each rank's own activations; rank 0's 4736 floats per row
    // (3 x 576 + 3 x 192 + 2 x 64 + 3 x 768) x 512 rows = 9.25 MiB.
    QVERIFY2(text.contains(QStringLiteral("<th>workspace</th>")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("<td align=right>9.25 MiB</td>")), qPrintable(text));
    QVERIFY(!text.contains(QStringLiteral("copy")));

    panel.setSnapshot(test::withRanks(test::makeSnapshot(3, 3, 2), test::smolRanks(4, pool)));
    QVERIFY2(table->text().contains(QStringLiteral("stores 4 KV heads instead of 3")), qPrintable(table->text()));
    panel.clear();
    QVERIFY(table->isHidden());
  }

  void sharedPrefixPanelTotals() {
    SharedPrefixPanel panel;
    panel.setModelInfo(smolInfo());
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    QCOMPARE(panel.model()->rowCount(), 1);
    // (3 - 1) x 32 tokens x 46080 bytes = 2.81 MiB.
    QVERIFY2(panel.totalText().contains(QStringLiteral("64 tokens (2.81 MiB)")), qPrintable(panel.totalText()));
    panel.clear();
    QCOMPARE(panel.model()->rowCount(), 0);
    // Nothing shared: why, where a setting rules it out.
    QCOMPARE(panel.totalText(), QStringLiteral("No blocks are shared by several sequences now."));
    kvscope::EngineConfig contiguous;
    contiguous.paged = false;
    panel.setEngineConfig(contiguous);
    QVERIFY2(panel.totalText().contains(QStringLiteral("with paged attention off")), qPrintable(panel.totalText()));
    kvscope::EngineConfig uncached;
    uncached.prefix_caching = false;
    panel.setEngineConfig(uncached);
    QVERIFY2(panel.totalText().contains(QStringLiteral("prefix caching is off")), qPrintable(panel.totalText()));
  }

  void sharedPrefixPanelShowsTheLastStepsCascade() {
    SharedPrefixPanel panel;
    panel.setModelInfo(smolInfo());
    QVERIFY2(panel.attentionText().contains(QStringLiteral("no cascade pass")), qPrintable(panel.attentionText()));
    // Three sequences share blocks 0 and 1 (32 tokens), read once: (3 - 1) x
    // 32 tokens x 46080 bytes = 2.81 MiB not read, 4 ms of attention.
    panel.setSnapshot(test::makeCascadeSnapshot(3, 3, 2, 4.0));
    const QString text = panel.attentionText();
    QVERIFY2(text.contains(QStringLiteral("attention 4.00 ms")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("1 pass(es) for 3 sequences, 32 shared tokens, 2.81 MiB of K/V not read")),
             qPrintable(text));
    SharedPrefixModel* model = panel.model();
    QCOMPARE(model->rowCount(), 1);
    QCOMPARE(model->index(0, SharedPrefixModel::Cascade).data().toString(), QStringLiteral("yes: 32 × 3"));
    QCOMPARE(model->index(0, SharedPrefixModel::KvNotRead).data().toString(), QStringLiteral("2.81 MiB"));
    // A flat step that timed no attention (a GPU times one step in 16): the
    // last timed step's figure, named as such; then no engine.
    panel.setSnapshot(test::makeSnapshot(3, 3, 2));
    QVERIFY2(panel.attentionText().contains(QStringLiteral("no cascade pass")), qPrintable(panel.attentionText()));
    QVERIFY2(panel.attentionText().contains(QStringLiteral("attention not timed (step 0, the last timed: 4.00 ms)")),
             qPrintable(panel.attentionText()));
    QCOMPARE(model->index(0, SharedPrefixModel::Cascade).data().toString(), QStringLiteral("no"));
    // A reloaded model's engine counts its steps from 0 again: the old
    // engine's figure is not shown for it.
    auto later = std::make_shared<EngineSnapshot>(*test::makeCascadeSnapshot(3, 3, 2, 6.0));
    later->step = 41;
    later->last_step.step = 40;
    panel.setSnapshot(later);
    auto reloaded = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 2));
    reloaded->step = 5;
    reloaded->last_step.step = 4;
    panel.setSnapshot(reloaded);
    QVERIFY2(panel.attentionText().contains(QStringLiteral("not measured")), qPrintable(panel.attentionText()));
    panel.clear();
    QVERIFY(panel.attentionText().contains(QStringLiteral("not measured")));
  }

  void attentionStripSplitsCascadeAndFlatSteps() {
    // Six steps in one snapshot: two with a cascade pass (2 ms), three flat
    // (5 ms), one that timed no attention (left out).
    PlotsWidget plots;
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 2));
    s->step = 6;
    for (uint64_t st = 0; st < 6; ++st) {
      StepStats stats;
      stats.step = st;
      stats.num_decode_tokens = 3;
      stats.step_time_s = 0.01;
      const bool cascade = st == 1 || st == 4;
      stats.num_cascade_groups = cascade ? 1 : 0;
      stats.attention_time_s = st == 5 ? 0.0 : cascade ? 0.002 : 0.005;
      s->recent_steps.push_back(stats);
    }
    s->last_step = s->recent_steps.back();
    plots.addSnapshot(s);
    QCOMPARE(plots.numAttentionPoints(true), 2);
    QCOMPARE(plots.numAttentionPoints(false), 3);
    QCOMPARE(plots.numPoints(), 7 + 5 * 6 + 5);
    // The strip's value axis holds the slowest step.
    // Its own strips (SpecPlots, a child widget, holds the speculation plots).
    const QList<QCustomPlot*> strips = plots.findChildren<QCustomPlot*>(QString(), Qt::FindDirectChildrenOnly);
    QCOMPARE(strips.size(), 5);
    QVERIFY(strips.back()->yAxis->range().upper >= 5.0);
    QVERIFY(strips.back()->yAxis->range().lower <= 2.0);  // log scale: the fast steps are in view too
    QCOMPARE(strips.back()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(strips.back()->graph(1)->data()->at(0)->key, 2.0);  // step 1 is plotted at x = 2
    QCOMPARE(strips.back()->graph(1)->data()->at(0)->value, 2.0);
    plots.clear();
    QCOMPARE(plots.numAttentionPoints(true) + plots.numAttentionPoints(false), 0);
  }

  // Each strip's legend sits in its title row, beside the title: whole (as
  // tall and wide as its items ask) and clear of the axes, so it covers no
  // data, however short the strip.
  void stripLegendsSitBesideTheTitleNotOnTheData() {
    PlotsWidget plots;
    plots.resize(700, 600);  // five strips of about 110 px: the smallest they get
    plots.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plots));
    plots.addSnapshot(test::makeSnapshot(3, 3, 2));
    const QList<QCustomPlot*> strips = plots.findChildren<QCustomPlot*>(QString(), Qt::FindDirectChildrenOnly);
    QCOMPARE(strips.size(), 5);
    for (QCustomPlot* strip : strips) {
      strip->replot();
      QVERIFY(strip->axisRect()->rect().height() > 0);
      QCPLegend* legend = strip->legend;
      if (!legend->visible() || legend->itemCount() == 0) continue;
      const QRect box = legend->outerRect();
      QVERIFY2(!box.intersects(strip->axisRect()->rect()), qPrintable(stripPlotTitle(strip)->text()));
      QVERIFY2(box.height() >= legend->minimumOuterSizeHint().height(), qPrintable(QStringLiteral("%1: %2 < %3, strip %4, axes %5").arg(stripPlotTitle(strip)->text()).arg(box.height()).arg(legend->minimumOuterSizeHint().height()).arg(strip->height()).arg(strip->axisRect()->rect().height())));
      QVERIFY2(box.right() <= strip->width(), qPrintable(stripPlotTitle(strip)->text()));
      QVERIFY(box.top() < strip->axisRect()->rect().top());
    }
    // A strip made taller gives the height to its axes: the legend's box
    // stays its own size (at equal stretch the title row took half).
    QCustomPlot* strip = strips.front();
    strip->setMinimumHeight(420);
    plots.resize(plots.width(), 1400);
    QTRY_VERIFY(strip->height() >= 420);
    strip->replot();
    const int legend_height = strip->legend->outerRect().height();
    QVERIFY2(legend_height <= 2 * strip->legend->minimumOuterSizeHint().height(),
             qPrintable(QStringLiteral("legend %1 px in a %2 px strip").arg(legend_height).arg(strip->height())));
  }

  void plotsShowEveryStepOfASnapshot() {
    // One snapshot covering four steps: the 7 per-snapshot graphs (queues 3,
    // KV 3, waste) get one point each, the 5 per-step graphs (all rows,
    // draft + decode, decode, tokens/s, ms/step) one point per step.
    PlotsWidget plots;
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(3, 3, 2));
    s->step = 4;
    for (uint64_t st = 0; st < 4; ++st) {
      StepStats stats;
      stats.step = st;
      stats.num_decode_tokens = 3;
      stats.step_time_s = 0.01;
      s->recent_steps.push_back(stats);
    }
    s->last_step = s->recent_steps.back();
    plots.addSnapshot(s);
    QCOMPARE(plots.numPoints(), 7 + 5 * 4);
    // Without the list (an older engine), only the last step is known.
    PlotsWidget last_only;
    s->recent_steps.clear();
    last_only.addSnapshot(s);
    QCOMPARE(last_only.numPoints(), 7 + 5);
  }

  // The tokens strip scales to what its window holds (a 500-token prefill
  // long gone once kept 10-token decode steps on the floor), and the
  // attention strip labels at least two values when its range spans less
  // than a decade (its log ticker labelled one, or none).
  void stripsScaleToTheirWindowAndLabelNarrowRanges() {
    PlotsWidget plots;
    plots.resize(500, 900);
    const auto base = test::makeSnapshot(3, 3, 2);
    const int last = static_cast<int>(PlotsWidget::kWindowSteps) + 100;
    for (int step = 1; step <= last; ++step) {
      auto s = std::make_shared<EngineSnapshot>(*base);
      s->step = static_cast<uint64_t>(step);
      s->last_step.step = static_cast<uint64_t>(step - 1);
      s->last_step.num_prefill_tokens = step == 1 ? 500 : 0;
      s->last_step.num_decode_tokens = step == 1 ? 0 : 10;
      s->last_step.step_time_s = 0.02;
      s->last_step.attention_time_s = (0.15 + 0.01 * (step % 10)) / 1000.0;  // 0.15 to 0.24 ms
      plots.addSnapshot(s);
    }
    QCustomPlot* tokens = stripTitled(plots, QStringLiteral("Tokens / step"));
    QCustomPlot* attention = stripTitled(plots, QStringLiteral("Attention / step (log scale)"));
    QVERIFY(tokens && attention);
    QVERIFY2(tokens->yAxis->range().upper < 20, qPrintable(QString::number(tokens->yAxis->range().upper)));
    attention->replot();
    QVERIFY2(attention->yAxis->tickVector().size() >= 2, qPrintable(QString::number(attention->yAxis->tickVector().size())));
  }

  // A step's rows are prefill + decode + draft: the draft rows are a layer
  // of Tokens / step (they were left out, understating a speculative batch
  // up to 1 + k times), and tokens/s counts the accepted drafts as the
  // tokens they are, not the rejected ones.
  void draftRowsAreCounted() {
    PlotsWidget plots;
    auto s = std::make_shared<EngineSnapshot>(*test::makeSnapshot(2, 3, 1));
    s->step = 1;
    s->last_step.step = 0;
    s->last_step.num_prefill_tokens = 3;
    s->last_step.num_decode_tokens = 4;
    s->last_step.num_draft_tokens = 12;
    s->last_step.num_accepted_tokens = 6;
    s->last_step.step_time_s = 0.1;
    plots.addSnapshot(s);
    QCustomPlot* tokens = stripTitled(plots, QStringLiteral("Tokens / step"));
    QCustomPlot* throughput = stripTitled(plots, QStringLiteral("Throughput"));
    QVERIFY(tokens && throughput);
    QCOMPARE(tokens->graphCount(), 3);
    QCOMPARE(tokens->graph(0)->name(), QStringLiteral("prefill"));
    QCOMPARE(tokens->graph(0)->data()->at(0)->value, 19.0);  // all rows
    QCOMPARE(tokens->graph(1)->name(), QStringLiteral("draft"));
    QCOMPARE(tokens->graph(1)->data()->at(0)->value, 16.0);  // decode + draft
    QCOMPARE(tokens->graph(2)->data()->at(0)->value, 4.0);   // decode
    QCOMPARE(throughput->graph(0)->data()->at(0)->value, (3.0 + 4.0 + 6.0) / 0.1);
  }

  void plotsStayBounded() {
    PlotsWidget plots;
    plots.resize(500, 600);
    const auto base = test::makeSnapshot(3, 3, 2);
    for (int step = 1; step <= 2000; ++step) {
      auto s = std::make_shared<EngineSnapshot>(*base);
      s->step = static_cast<uint64_t>(step);
      s->last_step.step = static_cast<uint64_t>(step - 1);  // as the engine numbers them
      s->last_step.num_prefill_tokens = step % 50 == 0 ? 512 : 0;
      s->last_step.step_time_s = step % 7 == 0 ? 0.0 : 0.02;  // some steps report no time
      s->kv.num_reserved_slots = 100;
      s->kv.num_written_slots = 75;
      plots.addSnapshot(s);
    }
    // 12 graphs, each at most the window plus the point kept left of it.
    QVERIFY2(plots.numPoints() <= 12 * (static_cast<int>(PlotsWidget::kWindowSteps) + 2),
             qPrintable(QString::number(plots.numPoints())));
    QVERIFY(plots.numPoints() > 9 * 250);
    plots.addSnapshot(base);  // an engine restart: counts from a lower step
    QVERIFY(plots.numPoints() < 20);
    plots.clear();
    QCOMPARE(plots.numPoints(), 0);
    QImage image(plots.size(), QImage::Format_ARGB32);
    plots.render(&image);
  }
};

QTEST_MAIN(PanelsTest)
#include "panels_test.moc"
