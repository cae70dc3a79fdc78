// The Invariance panel without an engine: B is validated as typed with the
// checker's own message; Run builds the job (current settings vs B, the
// conversation's last prompt or a prompt file) and hands it out with a new
// job id; progress and results of an older job are dropped; the verdict
// table (QAbstractItemModelTester) and the two continuations with the
// divergent token marked. The text helpers (prompt files, marking) too.
//   ctest --test-dir build -R invariance_panel_test --output-on-failure
//   KVSCOPE_UI_SNAPSHOT_DIR=/tmp/shots ./build/tests/ui/invariance_panel_test  # keeps a PNG of the panel
#include <QAbstractItemModelTester>
#include <QDir>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QLabel>
#include <QtTest>

#include "invariance_panel.h"
#include "models/invariance_text.h"
#include "models/invariance_verdict_model.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// Token ids of a byte vocabulary: id = byte.
std::vector<std::string> prompt_texts(const std::vector<InvariancePrompt>& prompts) {
  std::vector<std::string> texts;
  for (const InvariancePrompt& p : prompts) texts.push_back(p.text);
  return texts;
}

std::vector<int32_t> bytesOf(const std::string& text) {
  std::vector<int32_t> ids;
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::shared_ptr<std::vector<std::string>> byteTable() {
  auto table = std::make_shared<std::vector<std::string>>();
  for (int b = 0; b < 256; ++b) table->emplace_back(1, static_cast<char>(b));
  return table;
}

PromptVerdict identicalVerdict() {
  PromptVerdict v;
  v.prompt = "Same every time";
  v.identical = v.logits_identical = true;
  v.tokens_a = v.tokens_b = bytesOf("ok!");
  v.text_a = v.text_b = "ok!";
  return v;
}

// "Hello world" against "Help me": the same until token 3 ('l' / 'p').
PromptVerdict divergentVerdict() {
  PromptVerdict v;
  v.prompt = "Say hello";
  v.tokens_a = bytesOf("Hello world");
  v.tokens_b = bytesOf("Help me");
  v.text_a = "Hello world";
  v.text_b = "Help me";
  v.first_divergence = 3;
  v.divergence_position = 12;
  v.token_a = 'l';
  v.token_b = 'p';
  v.token_text_a = "l";
  v.token_text_b = "p";
  v.max_logit_diff = 0.25f;
  return v;
}

EngineConfig baseConfig() {
  EngineConfig c;
  c.model_path = "/models/some.gguf";  // parsing checks settings, not the file
  return c;
}

InvarianceOutcome outcomeOf(std::vector<PromptVerdict> verdicts) {
  InvarianceOutcome o;
  o.report.prompts = std::move(verdicts);
  return o;
}

}  // namespace

class InvariancePanelTest : public QObject {
  Q_OBJECT
 private slots:
  void promptFilesSplitAtBlankLines() {
    QCOMPARE(split_prompt_blocks("one\n\ntwo\r\nlines\n \t\n\n three\n"),
             (std::vector<std::string>{"one", "two\nlines", " three"}));
    QVERIFY(split_prompt_blocks("\n  \n").empty());
  }

  void continuationMarksTheDivergentToken() {
    const PromptVerdict v = divergentVerdict();
    const auto table = byteTable();
    const QColor mark(10, 20, 30);
    const QColor ink(250, 250, 250);
    const QString span = QStringLiteral("<span style=\"background-color:#0a141e; color:#fafafa; font-weight:bold\">");
    // With the token table: cut exactly at token 3.
    QCOMPARE(continuationHtml(v, false, table.get(), mark, ink),
             QStringLiteral("<div style=\"white-space:pre-wrap\">Hel") + span + QStringLiteral("l</span>o world</div>"));
    QCOMPARE(continuationHtml(v, true, table.get(), mark, ink),
             QStringLiteral("<div style=\"white-space:pre-wrap\">Hel") + span + QStringLiteral("p</span> me</div>"));
    // Without: where the texts part, moved back to where the token's text
    // starts (" the" / " then" agree on " the").
    PromptVerdict words;
    words.text_a = " the cat";
    words.text_b = " then a dog";
    words.first_divergence = 0;
    words.token_a = 1;
    words.token_b = 2;
    words.tokens_a = {1, 3};
    words.tokens_b = {2, 4, 5};
    words.token_text_a = " the";
    words.token_text_b = " then";
    QVERIFY2(continuationHtml(words, false, nullptr, mark, ink).contains(span + QStringLiteral(" the</span> cat")),
             qPrintable(continuationHtml(words, false, nullptr, mark, ink)));
    QVERIFY(continuationHtml(words, true, nullptr, mark, ink).contains(span + QStringLiteral(" then</span> a dog")));
    // A side that had already stopped says so; text is escaped.
    PromptVerdict ended = divergentVerdict();
    ended.tokens_b = bytesOf("Hel");
    ended.text_b = "Hel";
    ended.token_b = -1;
    ended.token_text_b.clear();
    ended.finish_b = "stop";
    QVERIFY(continuationHtml(ended, true, table.get(), mark, ink).contains(span + QStringLiteral("[ended: stop]</span>")));
    PromptVerdict same = identicalVerdict();
    same.text_a = "a<b";
    QCOMPARE(continuationHtml(same, false, table.get(), mark, ink),
             QStringLiteral("<div style=\"white-space:pre-wrap\">a&lt;b</div>"));
  }

  // A side's run statistics name what its run exercised; the GPU graph
  // replays only when there were some (a CPU run never has any).
  void runStatsNameGraphReplaysOnlyWhenThereWereSome() {
    InvarianceRunStats stats;
    stats.num_steps = 40;
    stats.max_batch_seqs = 4;
    stats.num_cascade_steps = 2;
    const QString cpu = runStatsText(stats);
    QVERIFY2(cpu.startsWith(QStringLiteral("40 steps, up to 4 sequences a step")), qPrintable(cpu));
    QVERIFY2(cpu.contains(QStringLiteral("2 with a cascade pass")), qPrintable(cpu));
    QVERIFY2(!cpu.contains(QStringLiteral("GPU graph")), qPrintable(cpu));
    stats.num_graph_steps = 31;
    const QString gpu = runStatsText(stats);
    QVERIFY2(gpu.endsWith(QStringLiteral(", 31 replayed as a GPU graph")), qPrintable(gpu));
    QVERIFY2(!gpu.contains(QStringLiteral("preempt")) && !gpu.contains(QStringLiteral("draft")), qPrintable(gpu));
    // Preemptions and speculation, as the CLI reports them (they were left out).
    stats.num_context_shifts = 2;
    stats.num_preemptions = 8;
    stats.num_swapped_out_blocks = 1;
    stats.num_draft_tokens = 30;
    stats.num_accepted_draft_tokens = 12;
    stats.num_spec_steps = 9;
    stats.num_decode_steps = 20;
    const QString busy = runStatsText(stats);
    QVERIFY2(busy.contains(QStringLiteral(", 12 of 30 draft tokens accepted in 9 of 20 decoding steps")), qPrintable(busy));
    QVERIFY2(busy.endsWith(QStringLiteral(", 2 context shifts, 8 preemptions (1 block swapped out)")), qPrintable(busy));
    // One of each reads as one ("1 steps, up to 1 sequences" before).
    InvarianceRunStats one;
    one.num_steps = 1;
    one.max_batch_seqs = 1;
    one.num_prefix_hit_tokens = 1;
    const QString single = runStatsText(one);
    QVERIFY2(single.startsWith(QStringLiteral("1 step, up to 1 sequence a step")), qPrintable(single));
    QVERIFY2(single.contains(QStringLiteral("1 prompt token from the prefix cache")), qPrintable(single));
  }

  void verdictModelShowsEachPrompt() {
    InvarianceVerdictModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setVerdicts({identicalVerdict(), divergentVerdict()});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(InvarianceVerdictModel::NumColumns));
    const auto cell = [&](int row, int column) { return model.index(row, column).data().toString(); };
    QCOMPARE(cell(0, InvarianceVerdictModel::Verdict), QStringLiteral("identical"));
    QCOMPARE(cell(1, InvarianceVerdictModel::Verdict), QStringLiteral("diverges at token 3 (position 12)"));
    QCOMPARE(cell(1, InvarianceVerdictModel::Prompt), QStringLiteral("Say hello"));
    QCOMPARE(cell(1, InvarianceVerdictModel::MaxLogitDiff), QStringLiteral("0.25"));
    QCOMPARE(cell(1, InvarianceVerdictModel::TokenA), QStringLiteral("“l” (108)"));
    QCOMPARE(cell(1, InvarianceVerdictModel::TokenB), QStringLiteral("“p” (112)"));
    QCOMPARE(cell(0, InvarianceVerdictModel::TokenA), QString());
    // How much each side generated and why it stopped: one figure when they agree.
    QCOMPARE(cell(0, InvarianceVerdictModel::Generated), QStringLiteral("3"));
    QCOMPARE(cell(1, InvarianceVerdictModel::Generated), QStringLiteral("A 11, B 7"));
    PromptVerdict ended = identicalVerdict();
    ended.finish_a = ended.finish_b = "stop";
    PromptVerdict cut = divergentVerdict();
    cut.finish_a = "length";
    cut.finish_b = "stop";
    model.setVerdicts({ended, cut});
    QCOMPARE(cell(0, InvarianceVerdictModel::Generated), QStringLiteral("3 (stop)"));
    QCOMPARE(cell(1, InvarianceVerdictModel::Generated), QStringLiteral("A 11 (length), B 7 (stop)"));
    model.setVerdicts({identicalVerdict(), divergentVerdict()});
    QVERIFY(model.index(0, 0).data(InvarianceVerdictModel::IdenticalRole).toBool());
    QVERIFY(!model.index(1, 0).data(InvarianceVerdictModel::IdenticalRole).toBool());
    // Identical tokens with drifting logits are told apart from bitwise equal.
    PromptVerdict drift = identicalVerdict();
    drift.logits_identical = false;
    drift.max_logit_diff = 3e-6f;
    model.setVerdicts({drift});
    QCOMPARE(cell(0, InvarianceVerdictModel::Verdict), QStringLiteral("identical tokens (logits differ by 3e-06)"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(model.verdictAt(0) == nullptr);
  }

  void specBIsValidatedAsTyped() {
    InvariancePanel panel;
    QVERIFY(!panel.canRun());  // no model: nothing to compare
    auto* side_a = panel.findChild<QLabel*>(QStringLiteral("invarianceSideA"));
    QVERIFY(side_a);
    EngineConfig shown = baseConfig();
    shown.block_size = 32;
    shown.cascade = CascadeMode::Off;
    panel.setBaseConfig(shown);  // A says what it is, in keys B takes
    QVERIFY2(side_a->text().contains(QStringLiteral("block_size=32")), qPrintable(side_a->text()));
    QVERIFY2(side_a->text().contains(QStringLiteral("cascade=off")), qPrintable(side_a->text()));
    panel.setBaseConfig(EngineConfig{});
    QVERIFY(panel.validationText().contains(QStringLiteral("Load a model")));
    panel.setBaseConfig(baseConfig());
    panel.setSpecB(QStringLiteral("cascade=on,concurrency=16"));
    QVERIFY(panel.canRun());
    QCOMPARE(panel.validationText(), QStringLiteral("B: A with cascade=on,concurrency=16"));
    panel.setSpecB(QStringLiteral(" cascade=on, concurrency=16,"));  // extra commas and spaces are not echoed
    QCOMPARE(panel.validationText(), QStringLiteral("B: A with cascade=on,concurrency=16"));
    // The checker's own message, word for word.
    for (const char* bad : {"kv_type=q8", "concurrency=0", "cascade", "cascade=sometimes", "block_size=1,block_size=2"}) {
      panel.setSpecB(QString::fromLatin1(bad));
      QVERIFY2(!panel.canRun(), bad);
      const auto parsed = parse_invariance_side(bad, baseConfig());
      QVERIFY(!parsed.ok());
      QCOMPARE(panel.validationText(), QString::fromStdString(parsed.error()));
    }
    // Every example offered parses.
    for (const QString& spec : InvariancePanel::exampleSpecs()) {
      panel.setSpecB(spec);
      QVERIFY2(panel.canRun(), qPrintable(spec + QStringLiteral(": ") + panel.validationText()));
    }
  }

  void runHandsOutAJobAndDropsStaleResults() {
    InvariancePanel panel;
    panel.setBaseConfig(baseConfig());
    panel.setSpecB(QStringLiteral("cascade=on,concurrency=16"));
    QSignalSpy runs(&panel, &InvariancePanel::runRequested);
    QSignalSpy cancels(&panel, &InvariancePanel::cancelRequested);

    panel.run();  // no conversation yet
    QCOMPARE(runs.count(), 0);
    QVERIFY(panel.statusText().contains(QStringLiteral("no prompt yet")));

    // The conversation as the chat sent its last message: run as a chat.
    ChatHistory conversation = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Hello"}};
    panel.setPromptSource([&] { return conversation; });
    panel.run();
    QCOMPARE(runs.count(), 1);
    const quint64 first = runs.last().at(0).value<quint64>();
    const auto job = runs.last().at(1).value<InvarianceJob>();
    QCOMPARE(job.prompts.size(), size_t{1});
    QVERIFY(job.prompts[0].is_chat());
    QCOMPARE(job.prompts[0].text, std::string("Hello"));
    QCOMPARE(job.prompts[0].messages.size(), conversation.size());
    QCOMPARE(job.prompts[0].messages[0].content, std::string("Be brief."));
    QCOMPARE(job.a.config.cascade, baseConfig().cascade);  // A: the settings in force
    QCOMPARE(job.a.concurrency, 1);
    QCOMPARE(job.b.config.cascade, CascadeMode::On);
    QCOMPARE(job.b.concurrency, 16);
    QCOMPARE(job.b.config.model_path, baseConfig().model_path);
    QVERIFY(panel.running());
    QVERIFY(!panel.canRun());
    QVERIFY(panel.findChild<QPushButton*>(QStringLiteral("invarianceCancel"))->isEnabled());

    auto* bar = panel.findChild<QProgressBar*>();
    panel.onProgress(first, 1, 2);
    QCOMPARE(bar->value(), 1);
    panel.onProgress(first + 100, 2, 2);  // not ours
    QCOMPARE(bar->value(), 1);

    // A second run retires the first: it is cancelled, its result dropped.
    conversation.back().content = "Say hello";
    panel.run();
    QCOMPARE(cancels.count(), 1);
    QCOMPARE(cancels.last().at(0).value<quint64>(), first);
    const quint64 second = runs.last().at(0).value<quint64>();
    QVERIFY(second != first);
    panel.onFinished(first, outcomeOf({identicalVerdict()}));
    QCOMPARE(panel.model()->rowCount(), 0);
    QVERIFY(panel.running());
    panel.onFinished(second, outcomeOf({identicalVerdict(), divergentVerdict()}));
    QVERIFY(!panel.running());
    QCOMPARE(panel.model()->rowCount(), 2);
    QVERIFY2(panel.statusText().contains(QStringLiteral("1 of 2")), qPrintable(panel.statusText()));
    QVERIFY2(panel.statusText().contains(QStringLiteral("B: 0 steps")), qPrintable(panel.statusText()));
    // The settings the results belong to, kept with them.
    QVERIFY2(panel.statusText().contains(QStringLiteral("A ran with block_size=")), qPrintable(panel.statusText()));
    QVERIFY2(!panel.statusText().contains(QStringLiteral("Note:")), qPrintable(panel.statusText()));
    // The divergent prompt is shown, its token marked on both sides.
    QVERIFY2(panel.continuationShown(false).contains(QStringLiteral("l</span>o world")),
             qPrintable(panel.continuationShown(false)));
    QVERIFY(panel.continuationShown(true).contains(QStringLiteral("p</span> me")));
    // A Run refused now must not leave those results under its refusal,
    // and the refusal goes once what it was about changes.
    {
      ChatHistory kept = conversation;
      conversation.clear();
      panel.run();
      QCOMPARE(panel.model()->rowCount(), 0);
      QVERIFY(panel.statusText().contains(QStringLiteral("no prompt yet")));
      conversation = kept;
      panel.promptSourceChanged();  // a message was sent
      QVERIFY2(!panel.statusText().contains(QStringLiteral("no prompt yet")), qPrintable(panel.statusText()));
      panel.run();
      panel.onFinished(runs.last().at(0).value<quint64>(), outcomeOf({identicalVerdict(), divergentVerdict()}));
    }
    if (const QString dir = qEnvironmentVariable("KVSCOPE_UI_SNAPSHOT_DIR"); !dir.isEmpty()) {
      panel.setTokenBytes(byteTable());
      panel.resize(720, 640);
      QDir().mkpath(dir);
      panel.grab().save(dir + QStringLiteral("/invariance_panel.png"));
    }

    // Cancel: the runner is told, and whatever still arrives is dropped.
    panel.run();
    const quint64 third = runs.last().at(0).value<quint64>();
    panel.cancel();
    QCOMPARE(cancels.last().at(0).value<quint64>(), third);
    QVERIFY(!panel.running());
    QCOMPARE(panel.statusText(), QStringLiteral("Cancelled."));
    panel.onFinished(third, outcomeOf({divergentVerdict()}));
    QCOMPARE(panel.model()->rowCount(), 0);
    QCOMPARE(panel.statusText(), QStringLiteral("Cancelled."));

    // Run refused while a run is going: the running one's verdict, when it
    // comes, stays when the inputs change next (it was wiped as a refusal).
    {
      panel.run();
      const quint64 going = runs.last().at(0).value<quint64>();
      ChatHistory kept = conversation;
      conversation.clear();
      panel.run();  // refused: no prompt
      QVERIFY(panel.running());
      conversation = kept;
      panel.onFinished(going, outcomeOf({identicalVerdict()}));
      panel.promptSourceChanged();
      QVERIFY2(panel.statusText().contains(QStringLiteral("identical under A and B")), qPrintable(panel.statusText()));
    }

    // B asked for cascade attention and its runs never ran a cascade pass: said.
    panel.run();
    InvarianceOutcome untested = outcomeOf({identicalVerdict()});
    untested.report.a.config.cascade = CascadeMode::Off;
    untested.report.b.config.cascade = CascadeMode::On;
    panel.onFinished(runs.last().at(0).value<quint64>(), untested);
    QVERIFY2(panel.statusText().contains(QStringLiteral("Note: b: cascade = on, but no step ran a cascade pass")),
             qPrintable(panel.statusText()));

    // The sides differ in a setting that changes the numbers by design: said,
    // so a divergence does not read as a broken invariance.
    panel.run();
    InvarianceOutcome by_design = outcomeOf({divergentVerdict()});
    by_design.report.b.config.kv_cache_type = KvCacheType::Q8_0;
    panel.onFinished(runs.last().at(0).value<quint64>(), by_design);
    QVERIFY2(panel.statusText().contains(QStringLiteral("Note: kv_cache_type differs (a: f32, b: q8_0)")),
             qPrintable(panel.statusText()));

    // A failed check says why.
    panel.run();
    InvarianceOutcome failed;
    failed.error = "b: cannot open /models/some.gguf";
    panel.onFinished(runs.last().at(0).value<quint64>(), failed);
    QVERIFY2(panel.statusText().contains(QStringLiteral("The check failed: b: cannot open")), qPrintable(panel.statusText()));
    QVERIFY(panel.canRun());

    // Identical, but a reply that ended at once compared one position only:
    // the verdict says so instead of a plain "identical".
    panel.run();
    PromptVerdict empty = identicalVerdict();
    empty.tokens_a.clear();
    empty.tokens_b.clear();
    empty.text_a.clear();
    empty.text_b.clear();
    panel.onFinished(runs.last().at(0).value<quint64>(), outcomeOf({identicalVerdict(), empty}));
    QVERIFY2(panel.statusText().contains(QStringLiteral("All 2 prompts identical")), qPrintable(panel.statusText()));
    QVERIFY2(panel.statusText().contains(QStringLiteral("1 of them generated nothing")), qPrintable(panel.statusText()));
    panel.run();
    panel.onFinished(runs.last().at(0).value<quint64>(), outcomeOf({identicalVerdict()}));
    QVERIFY2(!panel.statusText().contains(QStringLiteral("generated nothing")), qPrintable(panel.statusText()));

    // Prompts that ran as different tokens: by the settings' cuts, or, with
    // another model on B, by its own tokenizer.
    panel.run();
    PromptVerdict cut = identicalVerdict();
    cut.same_prompt = false;
    InvarianceOutcome cut_outcome = outcomeOf({cut});
    panel.onFinished(runs.last().at(0).value<quint64>(), cut_outcome);
    QVERIFY2(panel.statusText().contains(QStringLiteral("their settings cut the prompt differently")),
             qPrintable(panel.statusText()));
    panel.run();
    InvarianceOutcome other_model = outcomeOf({cut});
    other_model.report.b.config.model_path = "/models/other.gguf";
    panel.onFinished(runs.last().at(0).value<quint64>(), other_model);
    QVERIFY2(panel.statusText().contains(QStringLiteral("the two models tokenize the prompt differently")),
             qPrintable(panel.statusText()));
    QVERIFY2(!panel.statusText().contains(QStringLiteral("cut the prompt")), qPrintable(panel.statusText()));
  }

  void promptsFromAFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("prompts.txt"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("The capital of France is\n\nOnce upon\na time\n");
    file.close();
    InvariancePanel panel;
    panel.setBaseConfig(baseConfig());
    panel.setPromptFile(path);
    auto job = panel.buildJob();
    QVERIFY2(job.ok(), job.ok() ? "" : job.error().c_str());
    QCOMPARE(prompt_texts(job->prompts), (std::vector<std::string>{"The capital of France is", "Once upon\na time"}));
    QVERIFY(!job->prompts[0].is_chat());  // a file's prompts are raw text
    panel.setPromptFile(dir.filePath(QStringLiteral("missing.txt")));
    QVERIFY(!panel.buildJob().ok());
    QVERIFY(QString::fromStdString(panel.buildJob().error()).contains(QStringLiteral("Cannot read")));
    panel.setPromptFile(QString());  // back to the conversation
    panel.setPromptSource([] { return ChatHistory{{"user", "from the chat"}}; });
    QCOMPARE(prompt_texts(panel.buildJob()->prompts), (std::vector<std::string>{"from the chat"}));
    // A conversation whose last message is blank has nothing to check.
    panel.setPromptSource([] { return ChatHistory{{"user", "  "}}; });
    QVERIFY(!panel.buildJob().ok());
  }
};

QTEST_MAIN(InvariancePanelTest)
#include "invariance_panel_test.moc"
