// SamplingEditor and ConversationSettingsDialog offscreen: a message per
// field right under its control, the seed as a whole number (empty: random),
// stop strings with escapes, reset to the defaults, accessible names.
//   ctest --test-dir build -R sampling_editor_test
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QSignalSpy>
#include <QtTest>

#include "conversation_settings_dialog.h"
#include "dialog_test_util.h"
#include "sampling_editor.h"

using kvscope::test::child;
using kvscope::test::expectAccessibleNames;
using kvscope::test::expectMessageAt;
using kvscope::test::okButton;
using kvscope::ui::ConversationSettings;
using kvscope::ui::ConversationSettingsDialog;
using kvscope::ui::SamplingEditor;

class SamplingEditorTest : public QObject {
  Q_OBJECT
 private slots:
  void samplingEditorMessagesPerField_data() {
    QTest::addColumn<QString>("field");
    QTest::newRow("top_p") << "top_p";
    QTest::newRow("repetition_penalty") << "repetition_penalty";
  }
  void samplingEditorMessagesPerField() {
    QFETCH(QString, field);
    SamplingEditor editor;
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    QSignalSpy validity(&editor, &SamplingEditor::validityChanged);
    auto* box = editor.findChild<QDoubleSpinBox*>(field);
    QVERIFY(box);
    const double good = box->value();
    box->setValue(0.0);  // both must be > 0
    QVERIFY(!editor.isValid());
    QCOMPARE(validity.count(), 1);
    QCOMPARE(validity.last().at(0).toBool(), false);
    expectMessageAt(&editor, box, qPrintable(field + QStringLiteral("_message")), field);
    box->setValue(good);
    QVERIFY(editor.isValid());
    QCOMPARE(validity.count(), 2);
    QCOMPARE(validity.last().at(0).toBool(), true);
    QVERIFY(!editor.findChild<QLabel*>(field + QStringLiteral("_message"))->isVisible());
  }

  // The unit follows the value however the form was filled: setSettings()
  // fills the boxes with their signals blocked (it once left "512 token").
  void theUnitFollowsAValueSetWithSignalsBlocked() {
    SamplingEditor editor;
    auto* max_tokens = editor.findChild<QSpinBox*>(QStringLiteral("max_tokens"));
    QVERIFY(max_tokens);
    ConversationSettings settings;
    settings.sampling.max_tokens = 512;
    editor.setSettings(settings);
    QCOMPARE(max_tokens->value(), 512);
    QCOMPARE(max_tokens->suffix(), QStringLiteral(" tokens"));
    settings.sampling.max_tokens = 1;
    editor.setSettings(settings);
    QCOMPARE(max_tokens->suffix(), QStringLiteral(" token"));
    max_tokens->setValue(4000);
    QCOMPARE(max_tokens->suffix(), QStringLiteral(" tokens"));
  }

  // A spin box clamps what is typed without a word: each says its range.
  void numberFieldsNameTheirRange() {
    SamplingEditor editor;
    const auto ints = editor.findChildren<QSpinBox*>();
    const auto reals = editor.findChildren<QDoubleSpinBox*>();
    QVERIFY(!ints.isEmpty() && !reals.isEmpty());
    for (QAbstractSpinBox* box : ints) QVERIFY2(box->toolTip().contains(QStringLiteral("Range: ")), qPrintable(box->objectName()));
    for (QAbstractSpinBox* box : reals) QVERIFY2(box->toolTip().contains(QStringLiteral("Range: ")), qPrintable(box->objectName()));
    QVERIFY2(child<QDoubleSpinBox>(&editor, "top_p")->toolTip().contains(QStringLiteral("Range: 0.000 to 1.000.")),
             qPrintable(child<QDoubleSpinBox>(&editor, "top_p")->toolTip()));
  }

  void seedMustBeAWholeNumber() {
    SamplingEditor editor;
    editor.show();
    QVERIFY(QTest::qWaitForWindowExposed(&editor));
    auto* seed = child<QLineEdit>(&editor, "seed");
    seed->setText(QStringLiteral("12x"));
    QVERIFY(!editor.isValid());
    expectMessageAt(&editor, seed, "seed_message", QStringLiteral("seed"));
    seed->setText(QStringLiteral("123"));
    QVERIFY(editor.isValid());
    QCOMPARE(editor.settings().sampling.seed, uint64_t{123});
    seed->clear();
    QCOMPARE(editor.settings().sampling.seed, uint64_t{0});  // random
  }

  void stopStringsEscapes() {
    const std::vector<std::string> stop = {"\n\nUser:", "a\\b", "\t", "plain"};
    const QString text = SamplingEditor::stopStringsToText(stop);
    QCOMPARE(text, QStringLiteral("\\n\\nUser:\na\\\\b\n\\t\nplain"));
    QVERIFY(SamplingEditor::stopStringsFromText(text) == stop);
    QVERIFY(SamplingEditor::stopStringsFromText(QStringLiteral("x\n\n\ny\n")) ==
            (std::vector<std::string>{"x", "y"}));  // blank lines are skipped
  }

  void conversationDialog() {
    ConversationSettings mine;
    mine.system_prompt = QStringLiteral("Pirate voice.");
    mine.sampling.temperature = 1.1f;
    ConversationSettings defaults;
    defaults.sampling.max_tokens = 300;
    ConversationSettingsDialog dialog(QStringLiteral("Trip to Paris"), mine, defaults, nullptr);
    QVERIFY(dialog.windowTitle().contains(QStringLiteral("Trip to Paris")));
    QVERIFY(dialog.settings() == mine);
    QVERIFY(okButton(&dialog)->isEnabled());

    child<QDoubleSpinBox>(&dialog, "top_p")->setValue(0.0);
    QVERIFY(!okButton(&dialog)->isEnabled());
    child<QPushButton>(&dialog, "reset_to_defaults")->click();
    QVERIFY(dialog.settings() == defaults);
    QVERIFY(okButton(&dialog)->isEnabled());
  }

  void everyControlHasAnAccessibleName() {
    ConversationSettingsDialog conversation(QStringLiteral("t"), ConversationSettings(), ConversationSettings(),
                                            nullptr);
    expectAccessibleNames(&conversation);
  }
};

QTEST_MAIN(SamplingEditorTest)
#include "sampling_editor_test.moc"
