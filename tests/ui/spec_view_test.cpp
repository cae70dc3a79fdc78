// Speculative decoding in the app, without an engine (offscreen): the Plots
// dock's SpecPlots fed hand-made snapshots (acceptance series per proposer,
// the exact accepted-length histogram, acceptance by draft position), the
// chat's draft tint (exactly the draft tokens' characters, plain and Markdown,
// none when switched off, text unchanged), the per-reply stats line, the
// status line's pause notes and the tint's contrast in light and dark themes.
//   ctest --test-dir build -R spec_view_test --output-on-failure
#include <QTextBrowser>
#include <QtTest>

#include "chat_widget.h"
#include "models/draft_spans.h"
#include "models/message_stats.h"
#include "models/spec_pause_notices.h"
#include "palette_colors.h"
#include "plots_widget.h"
#include "spec_plots.h"
#include "test_palettes.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

StepStats verifyStep(uint64_t step, int drafted, int accepted) {
  StepStats st;
  st.step = step;
  st.num_decode_tokens = 1;
  st.num_spec_seqs = drafted > 0 ? 1 : 0;
  st.num_draft_tokens = drafted;
  st.num_accepted_tokens = accepted;
  st.num_verify_rows = drafted > 0 ? 1 + drafted : 0;
  st.step_time_s = 0.01;
  return st;
}

// A snapshot after `steps` (the last one is last_step) with the engine's
// counters `spec`: num_drafts, then per position judged / accepted.
SnapshotPtr snapshot(std::vector<StepStats> steps, int64_t num_drafts, std::vector<int64_t> judged,
                     std::vector<int64_t> accepted) {
  auto s = std::make_shared<EngineSnapshot>();
  s->step = steps.back().step + 1;
  s->last_step = steps.back();
  s->recent_steps = std::move(steps);
  s->spec.num_drafts = num_drafts;
  for (int64_t a : accepted) s->spec.num_accepted_tokens += a;
  for (int64_t j : judged) s->spec.num_draft_tokens += j;
  s->spec.num_judged_at = std::move(judged);
  s->spec.num_accepted_at = std::move(accepted);
  return s;
}

void compareValues(const QVector<double>& got, const QVector<double>& want) {
  QCOMPARE(got.size(), want.size());
  for (int i = 0; i < got.size(); ++i) {
    QVERIFY2(std::abs(got[i] - want[i]) < 1e-9,
             qPrintable(QStringLiteral("[%1]: %2, want %3").arg(i).arg(got[i]).arg(want[i])));
  }
}

QVector<QPointF> points(std::initializer_list<std::pair<double, double>> xy) {
  QVector<QPointF> out;
  for (const auto& [x, y] : xy) out << QPointF(x, y);
  return out;
}

void comparePoints(const QVector<QPointF>& got, const QVector<QPointF>& want) {
  QCOMPARE(got.size(), want.size());
  for (int i = 0; i < got.size(); ++i) {
    QCOMPARE(got[i].x(), want[i].x());
    QVERIFY2(std::abs(got[i].y() - want[i].y()) < 1e-9,
             qPrintable(QStringLiteral("point %1: %2, want %3").arg(i).arg(got[i].y()).arg(want[i].y())));
  }
}

ModelInfo tinyInfo() {
  ModelInfo info;
  info.name = "tiny";
  info.context_length = 512;
  info.block_size = 16;
  info.num_kv_blocks = 8;
  return info;
}

}  // namespace

class SpecViewTest : public QObject {
  Q_OBJECT
 private slots:
  void acceptanceSeriesFollowTheProposer() {
    SpecPlots plots;
    QVERIFY(plots.isHidden());  // speculation off: nothing to show
    plots.setSpecMethod(SpecMethod::Ngram);  // before any snapshot: at once
    QVERIFY(!plots.isHidden());
    // Steps 0..2: 2 of 4 accepted, no draft, 4 of 4. Points at x = step + 1
    // over the verifying steps so far (the window is 8 of them).
    plots.addSnapshot(snapshot({verifyStep(0, 4, 2), verifyStep(1, 0, 0), verifyStep(2, 4, 4)}, 2, {8}, {6}));
    QCOMPARE(plots.acceptanceSeries(), QStringList{QStringLiteral("ngram")});
    comparePoints(plots.acceptancePoints(QStringLiteral("ngram")), points({{1, 50}, {3, 75}}));

    // Switched to early exit: the snapshot published right after the switch
    // holds steps that still ran with the n-gram proposer.
    plots.setSpecMethod(SpecMethod::EarlyExit);
    plots.addSnapshot(snapshot({verifyStep(3, 4, 0), verifyStep(4, 2, 2)}, 4, {14}, {8}));
    QCOMPARE(plots.acceptanceSeries(), QStringList{QStringLiteral("ngram")});
    comparePoints(plots.acceptancePoints(QStringLiteral("ngram")),
                  points({{1, 50}, {3, 75}, {4, 50}, {5, 100.0 * 8 / 14}}));
    // From then on: a second series with its own window.
    plots.addSnapshot(snapshot({verifyStep(5, 4, 3), verifyStep(6, 4, 1)}, 6, {22}, {12}));
    QCOMPARE(plots.acceptanceSeries(), (QStringList{QStringLiteral("ngram"), QStringLiteral("early_exit")}));
    comparePoints(plots.acceptancePoints(QStringLiteral("early_exit")), points({{6, 75}, {7, 50}}));
    QCOMPARE(plots.acceptancePoints(QStringLiteral("ngram")).size(), 4);

    // A new engine (its steps count from zero again) starts the plot again.
    plots.addSnapshot(snapshot({verifyStep(0, 2, 1)}, 1, {2}, {1}));
    QVERIFY(plots.acceptancePoints(QStringLiteral("ngram")).isEmpty());
    comparePoints(plots.acceptancePoints(QStringLiteral("early_exit")), points({{1, 50}}));
  }

  void histogramAndPositionsAreExact() {
    SpecPlots plots;
    plots.setSpecMethod(SpecMethod::Ngram);
    // 10 verifications; accepted at positions 0..3: 6, 3, 1, 0 (so at least
    // 1, 2, 3, 4 accepted). Exactly j accepted: 10-6, 6-3, 3-1, 1-0, 0.
    plots.addSnapshot(snapshot({verifyStep(0, 4, 1)}, 10, {10, 6, 3, 1}, {6, 3, 1, 0}));
    compareValues(plots.acceptedLengthCounts(), {4, 3, 2, 1, 0});
    compareValues(plots.positionAcceptance(), {60, 50, 100.0 / 3, 0});
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("ngram")), qPrintable(plots.histogramTitle()));
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("10 verifications")), qPrintable(plots.histogramTitle()));
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("mean 1.00")), qPrintable(plots.histogramTitle()));

    // Another proposer: its bars count from the switch (the engine's
    // counters minus their value then), positions it reached first included.
    plots.setSpecMethod(SpecMethod::EarlyExit);
    plots.addSnapshot(snapshot({verifyStep(1, 4, 2)}, 12, {12, 7, 3, 1}, {7, 3, 1, 0}));
    // That snapshot's steps were ngram's; from then on the bars count early exit's.
    QVERIFY(plots.acceptedLengthCounts().isEmpty());
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("early_exit / accepted draft tokens (none yet)")),
             qPrintable(plots.histogramTitle()));
    plots.addSnapshot(snapshot({verifyStep(2, 5, 2)}, 15, {15, 9, 4, 1, 0}, {9, 4, 1, 0, 0}));
    compareValues(plots.acceptedLengthCounts(), {1, 1, 1, 0, 0, 0});
    compareValues(plots.positionAcceptance(), {100.0 * 2 / 3, 50, 0, 0, 0});
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("early_exit")), qPrintable(plots.histogramTitle()));
    QVERIFY2(plots.histogramTitle().contains(QStringLiteral("3 verifications")), qPrintable(plots.histogramTitle()));

    // Speculation switched off: the last proposer's bars stay.
    plots.setSpecMethod(SpecMethod::Off);
    plots.addSnapshot(snapshot({verifyStep(3, 0, 0)}, 15, {15, 9, 4, 1, 0}, {9, 4, 1, 0, 0}));
    plots.addSnapshot(snapshot({verifyStep(4, 0, 0)}, 15, {15, 9, 4, 1, 0}, {9, 4, 1, 0, 0}));
    compareValues(plots.acceptedLengthCounts(), {1, 1, 1, 0, 0, 0});
    QVERIFY(plots.histogramTitle().contains(QStringLiteral("early_exit")));
  }

  void plotsWidgetFeedsTheSpecPlots() {
    PlotsWidget widget;
    widget.specPlots()->setSpecMethod(SpecMethod::Ngram);
    widget.addSnapshot(snapshot({verifyStep(0, 4, 3)}, 1, {4, 3, 2, 1}, {1, 1, 1, 0}));
    comparePoints(widget.specPlots()->acceptancePoints(QStringLiteral("ngram")), points({{1, 75}}));
    widget.clear();
    QVERIFY(widget.specPlots()->acceptancePoints(QStringLiteral("ngram")).isEmpty());
    QVERIFY(widget.specPlots()->acceptedLengthCounts().isEmpty());
  }

  void draftSpansMapThroughMarkdown() {
    // Plain text: the same positions.
    QCOMPARE(spansInRendering(QStringLiteral("Hello world"), {{5, 6}}, QStringLiteral("Hello world")),
             (TextSpans{{5, 6}}));
    // Emphasis markers and a paragraph break are dropped by the rendering.
    const QString source = QStringLiteral("Some **bold** words\n\nnext line");
    //                                     0123456789012345678 9 0123456789
    const TextSpans in_source{{7, 4}, {13, 6}, {21, 4}};  // "bold", " words", "next"
    QCOMPARE(spansInRendering(source, in_source, QStringLiteral("Some bold words\u2029next line")),
             (TextSpans{{5, 10}, {16, 4}}));
    QVERIFY(spansInRendering(source, {}, QStringLiteral("Some bold words\u2029next line")).empty());
  }

  void chatTintsExactlyTheDraftTokens() {
    ChatWidget chat;
    chat.resize(600, 400);
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("Repeat: Hello world, hello world"));
    chat.onRequestStarted(7, true);
    // Tokens "Hello", " world" (draft), ", hello", " world" (draft), in two
    // chunks as the worker coalesces them.
    chat.onTokens(7, 0, QStringLiteral("Hello world"), {{5, 6}});
    chat.onTokens(7, 0, QStringLiteral(", hello world"), {{7, 6}});
    QTRY_COMPARE(chat.streamText(), QStringLiteral("Hello world, hello world"));
    QCOMPARE(chat.tintedSpans(), (TextSpans{{5, 6}, {18, 6}}));
    // The text is untouched: the document's plain text and the Markdown
    // carry the reply as written.
    auto* view = chat.findChild<QTextBrowser*>();
    QVERIFY(view);
    QVERIFY(view->document()->toPlainText().endsWith(QStringLiteral("Hello world, hello world")));
    QVERIFY(chat.renderedMarkdown().endsWith(QStringLiteral("Hello world, hello world")));

    chat.setDraftTint(false);
    QCOMPARE(chat.streamText(), QStringLiteral("Hello world, hello world"));
    QVERIFY(chat.tintedSpans().empty());
    chat.setDraftTint(true);
    QCOMPARE(chat.tintedSpans(), (TextSpans{{5, 6}, {18, 6}}));

    // Markdown: the tint lands on the rendered characters of the draft tokens.
    chat.onTokens(7, 0, QStringLiteral("\n\n**bold** move"), {{4, 4}, {10, 5}});
    QTRY_COMPARE(chat.streamText(), QStringLiteral("Hello world, hello world\u2029bold move"));
    QCOMPARE(chat.tintedSpans(), (TextSpans{{5, 6}, {18, 6}, {25, 9}}));
    // The first paragraph is now rendered once and kept (chat_stream_test):
    // switching the tint off and on still reaches it.
    chat.setDraftTint(false);
    QVERIFY(chat.tintedSpans().empty());
    chat.setDraftTint(true);
    QCOMPARE(chat.tintedSpans(), (TextSpans{{5, 6}, {18, 6}, {25, 9}}));
  }

  void replyStatsSayAcceptedDraftedAndEstimate() {
    ChatWidget chat;
    chat.onModelLoaded(tinyInfo());
    chat.sendPrompt(QStringLiteral("Repeat after me"));
    chat.onRequestStarted(9, true);
    chat.onTokens(9, 0, QStringLiteral("Repeat after me"), {{6, 9}});
    FinishInfo info;
    info.reason = FinishReason::Stop;
    info.stats.num_generated_tokens = 71;
    info.stats.num_draft_tokens = 46;
    info.stats.num_accepted_tokens = 41;
    info.stats.spec_speedup_estimate = 1.864;
    chat.onFinished(9, info);
    QVERIFY(!chat.busy());
    const QString markdown = chat.renderedMarkdown();
    QVERIFY2(markdown.contains(QStringLiteral("drafts accepted 41 / 46")), qPrintable(markdown));
    QVERIFY2(markdown.contains(QStringLiteral("est. 1.86× faster")), qPrintable(markdown));
    QVERIFY(chat.statusText().contains(QStringLiteral("drafts accepted 41 / 46")));
    // Saved with the message and read back.
    const std::vector<MessageStats> stats = messageStatsFromJson(chat.turns().back().stats_json);
    QCOMPARE(stats.size(), size_t(1));
    QCOMPARE(stats[0].draft_tokens, 46);
    QCOMPARE(stats[0].accepted_draft_tokens, 41);
    QCOMPARE(stats[0].spec_speedup_estimate, 1.864);

    // Without speculation: no such words; drafts but no estimate: no "est.".
    MessageStats plain;
    plain.generated_tokens = 10;
    QVERIFY(!messageStatsLine(plain).contains(QStringLiteral("draft")));
    plain.draft_tokens = 4;
    plain.accepted_draft_tokens = 1;
    QVERIFY(messageStatsLine(plain).contains(QStringLiteral("drafts accepted 1 / 4")));
    QVERIFY(!messageStatsLine(plain).contains(QStringLiteral("est.")));
  }

  void pauseNotesNameEachRequestOnce() {
    SpecPauseNotices notices;
    auto s = std::make_shared<EngineSnapshot>();
    s->step = 10;
    s->sequences.resize(2);
    s->sequences[0].id = 5;
    s->sequences[1].id = 6;
    QVERIFY(notices.update(*s, 0).isEmpty());  // nobody paused
    s->sequences[0].spec_paused = true;
    const QString first = notices.update(*s, 100);
    QVERIFY2(first.contains(QStringLiteral("request 5")) && first.contains(QStringLiteral("not paying")),
             qPrintable(first));
    s->step = 11;
    QVERIFY(notices.update(*s, 200).isEmpty());  // still paused: said already
    // Request 6 pauses 1 s later: held back until 5 s after the last note.
    s->sequences[1].spec_paused = true;
    QVERIFY(notices.update(*s, 1100).isEmpty());
    s->sequences[1].spec_paused = false;  // and retried in between
    QVERIFY(notices.update(*s, 3000).isEmpty());
    const QString second = notices.update(*s, 5200);
    QVERIFY2(second.contains(QStringLiteral("request 6")) && !second.contains(QStringLiteral("5")),
             qPrintable(second));
    // Request 5 resumes and pauses again: not news.
    s->sequences[0].spec_paused = false;
    QVERIFY(notices.update(*s, 20000).isEmpty());
    s->sequences[0].spec_paused = true;
    QVERIFY(notices.update(*s, 30000).isEmpty());
  }

  void tintFollowsThePalette() {
    for (const QPalette& palette : {test::lightPalette(), test::darkPalette()}) {
      const QColor tint = draftTokenBackground(palette);
      QVERIFY(tint != palette.color(QPalette::Base));
      QVERIFY2(contrastRatio(tint, palette.color(QPalette::Text)) >= 4.5,
               qPrintable(QStringLiteral("contrast %1").arg(contrastRatio(tint, palette.color(QPalette::Text)))));
    }
    QVERIFY(draftTokenBackground(test::darkPalette()).lightness() <
            draftTokenBackground(test::lightPalette()).lightness());
  }
};

QTEST_MAIN(SpecViewTest)
#include "spec_view_test.moc"
