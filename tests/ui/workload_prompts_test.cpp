// The synthetic workload's prompts and presets (models/workload_prompts.h)
// and the workload dialog's preset list: "N requests sharing a 2,000-token
// system prompt" builds N prompts whose first 2,000 tokens are the same and
// whose suffixes all differ; picking it in the dialog fills the form, N stays
// editable, and editing another field turns the preset back to Custom.
//   ctest --test-dir build -R workload_prompts_test --output-on-failure
#include <set>

#include <QComboBox>
#include <QSpinBox>
#include <QtTest>

#include "models/workload_prompts.h"
#include "workload_dialog.h"

using namespace kvscope;
using namespace kvscope::ui;

class WorkloadPromptsTest : public QObject {
  Q_OBJECT
 private slots:
  void systemPromptPresetSharesTwoThousandTokens() {
    const WorkloadSpec spec = systemPromptWorkload();
    QCOMPARE(spec.num_requests, 32);
    QCOMPARE(spec.shared_prefix_len, 2000);
    QVERIFY(spec.prompt_len > spec.shared_prefix_len);
    QCOMPARE(spec.arrival_rate_per_s, 0.0);

    const auto prompts = workloadPrompts(spec, 49152, 7);
    QCOMPARE(prompts.size(), size_t{32});
    const std::vector<int32_t> prefix(prompts[0].begin(), prompts[0].begin() + 2000);
    std::set<std::vector<int32_t>> suffixes;
    for (const std::vector<int32_t>& p : prompts) {
      QCOMPARE(static_cast<int>(p.size()), spec.prompt_len);
      QVERIFY(std::equal(prefix.begin(), prefix.end(), p.begin()));
      suffixes.emplace(p.begin() + 2000, p.end());
      for (int32_t id : p) QVERIFY(id >= 0 && id < 49152);
    }
    QCOMPARE(suffixes.size(), size_t{32});  // every request's own prompt differs
    // The first token after the prefix is not part of it by accident: the
    // prefix is exactly 2,000 tokens for most pairs of requests.
    int differ_at_2000 = 0;
    for (size_t i = 1; i < prompts.size(); ++i) differ_at_2000 += prompts[i][2000] != prompts[0][2000];
    QVERIFY(differ_at_2000 >= 30);

    // The same seed gives the same prompts; another seed others.
    QVERIFY(workloadPrompts(spec, 49152, 7) == prompts);
    QVERIFY(workloadPrompts(spec, 49152, 8) != prompts);
  }

  void numberOfRequestsIsTheCallers() {
    WorkloadSpec spec;
    QVERIFY(findWorkloadPreset(QStringLiteral("system-prompt"), 8, &spec));
    QCOMPARE(spec.num_requests, 8);
    QCOMPARE(spec.shared_prefix_len, kSystemPromptTokens);
    QVERIFY(findWorkloadPreset(QStringLiteral("system-prompt"), 0, &spec));
    QCOMPARE(spec.num_requests, 32);
    QVERIFY(!findWorkloadPreset(QStringLiteral("no-such-preset"), 8, &spec));
    QCOMPARE(workloadPrompts(systemPromptWorkload(5), 49152, 1).size(), size_t{5});
  }

  void oddSpecsStillGivePrompts() {
    // More requests than a tiny vocabulary has one-token suffixes: no hang,
    // every request still gets a prompt of the asked length.
    WorkloadSpec spec{300, 9, 4, 8};
    const auto prompts = workloadPrompts(spec, 64, 3);
    QCOMPARE(prompts.size(), size_t{300});
    for (const auto& p : prompts) QCOMPARE(p.size(), size_t{9});
    // A shared prefix longer than the prompt is clamped (one token of its own).
    const auto clamped = workloadPrompts(WorkloadSpec{2, 4, 4, 10}, 49152, 3);
    QCOMPARE(clamped[0].size(), size_t{5});
    QVERIFY(workloadPrompts(WorkloadSpec{0, 4, 4, 2}, 49152, 3).empty());
  }

  void dialogPresetFillsTheForm() {
    WorkloadDialog dialog(WorkloadSpec{});
    auto* preset = dialog.findChild<QComboBox*>(QStringLiteral("workloadPreset"));
    QVERIFY(preset);
    QCOMPARE(preset->currentIndex(), 0);  // the default spec is no preset
    QCOMPARE(preset->itemText(1), QStringLiteral("N requests sharing a 2,000-token system prompt"));
    preset->setCurrentIndex(1);
    emit preset->activated(1);  // as a click does
    const WorkloadSpec picked = dialog.spec();
    const WorkloadSpec expected = systemPromptWorkload();
    QCOMPARE(picked.num_requests, expected.num_requests);
    QCOMPARE(picked.prompt_len, expected.prompt_len);
    QCOMPARE(picked.shared_prefix_len, expected.shared_prefix_len);
    QCOMPARE(picked.output_len, expected.output_len);
    QCOMPARE(picked.arrival_rate_per_s, expected.arrival_rate_per_s);

    // N is the user's to choose: the preset stays.
    QSpinBox* requests = nullptr;
    QSpinBox* output = nullptr;
    for (QSpinBox* box : dialog.findChildren<QSpinBox*>()) {
      if (box->accessibleName() == QStringLiteral("Requests")) requests = box;
      if (box->accessibleName() == QStringLiteral("Output length")) output = box;
    }
    QVERIFY(requests && output);
    requests->setValue(8);
    QCOMPARE(dialog.spec().num_requests, 8);
    QCOMPARE(preset->currentIndex(), 1);
    // Another field edited: Custom.
    output->setValue(output->value() + 1);
    QCOMPARE(preset->currentIndex(), 0);
    // A dialog opened on the preset's values shows it.
    WorkloadDialog again(systemPromptWorkload(12));
    QCOMPARE(again.findChild<QComboBox*>(QStringLiteral("workloadPreset"))->currentIndex(), 1);
  }

  // Tab walks the fields top to bottom, as the rows are shown.
  void tabGoesDownTheRows() {
    WorkloadDialog dialog(WorkloadSpec{});
    QStringList order;
    QWidget* w = dialog.findChild<QComboBox*>(QStringLiteral("workloadPreset"));
    for (int i = 0; i < 6 && w; ++i, w = w->nextInFocusChain()) {
      while (w && w->accessibleName().isEmpty()) w = w->nextInFocusChain();  // the spin boxes' line edits
      if (w) order << w->accessibleName();
    }
    QCOMPARE(order, (QStringList{QStringLiteral("Preset"), QStringLiteral("Requests"), QStringLiteral("Prompt length"),
                                 QStringLiteral("Shared prefix length"), QStringLiteral("Output length"),
                                 QStringLiteral("Arrival rate")}));
  }
};

QTEST_MAIN(WorkloadPromptsTest)
#include "workload_prompts_test.moc"
