// SettingsDialog, SamplingEditor and ConversationSettingsDialog offscreen:
// config in -> config() out unchanged; an invalid value disables OK and shows
// a message right under its control; fixing it enables OK again; swap space
// only for swap; every control has an accessible name.
//   ctest --test-dir build -R settings_dialog_test
#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "conversation_settings_dialog.h"
#include "sampling_editor.h"
#include "settings_dialog.h"

using kvscope::EngineConfig;
using kvscope::ui::ConversationSettings;
using kvscope::ui::ConversationSettingsDialog;
using kvscope::ui::SamplingEditor;
using kvscope::ui::SettingsDialog;

namespace {

QPushButton* okButton(QWidget* dialog) {
  return dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
}

template <typename T>
T* child(QWidget* parent, const char* name) {
  T* w = parent->findChild<T*>(QLatin1String(name));
  if (!w) qFatal("no child %s", name);
  return w;
}

// The message label is shown (on the current tab), says something, and sits
// right under the control.
void expectMessageAt(QWidget* root, QWidget* control, const char* message_name, const QString& contains) {
  auto* message = child<QLabel>(root, message_name);
  QVERIFY2(message->isVisible(), message_name);
  QVERIFY2(message->text().contains(contains), qPrintable(message->text()));
  const QPoint control_at = control->mapTo(root, QPoint(0, control->height()));
  const QPoint message_at = message->mapTo(root, QPoint(0, 0));
  QVERIFY2(message_at.y() >= control_at.y() && message_at.y() - control_at.y() < 40,
           qPrintable(QStringLiteral("message at y=%1, control ends at y=%2").arg(message_at.y()).arg(control_at.y())));
}

void expectAccessibleNames(QWidget* root) {
  for (QWidget* w : root->findChildren<QWidget*>()) {
    const bool input = qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QLineEdit*>(w) ||
                       qobject_cast<QPlainTextEdit*>(w) || qobject_cast<QComboBox*>(w) ||
                       qobject_cast<QAbstractButton*>(w);
    if (!input) continue;
    // Parts of a compound control (a spin box's or combo's line edit, tab
    // scroll buttons) are named through their owner.
    if (qobject_cast<QAbstractSpinBox*>(w->parentWidget()) || qobject_cast<QComboBox*>(w->parentWidget()) ||
        qobject_cast<QTabBar*>(w->parentWidget()))
      continue;
    auto* button = qobject_cast<QAbstractButton*>(w);
    const bool named = !w->accessibleName().isEmpty() || (button && !button->text().isEmpty());
    QVERIFY2(named, qPrintable(QStringLiteral("%1 %2 has no accessible name")
                                   .arg(QLatin1String(w->metaObject()->className()), w->objectName())));
  }
}

}  // namespace

class SettingsDialogTest : public QObject {
  Q_OBJECT
 private slots:
  void init() {
    QVERIFY(dir_.isValid());
    model_ = dir_.filePath(QStringLiteral("model.gguf"));
    QFile file(model_);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("GGUF");
  }

  void configRoundTrips() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    c.num_threads = 5;
    c.block_size = 64;
    c.kv_budget_bytes = (int64_t{700} << 20) + 12345;  // not whole MiB: must still come back exactly
    c.max_seqs = 17;
    c.max_batched_tokens = 1000;
    c.max_model_len = 4096;
    c.paged = false;
    c.prefix_caching = false;
    c.policy = kvscope::SchedulingPolicy::Static;
    c.preemption = kvscope::PreemptionMode::Swap;
    c.swap_space_bytes = int64_t{33} << 20;
    c.record_snapshots = true;
    for (int32_t num_blocks : {0, 4321}) {
      c.num_blocks = num_blocks;
      SettingsDialog dialog(c, ConversationSettings(), {model_}, nullptr);
      QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
      QVERIFY(okButton(&dialog)->isEnabled());
      QVERIFY(kvscope::ui::sameEngineKnobs(dialog.config(), c));
      QCOMPARE(dialog.config().record_snapshots, true);
      QVERIFY(!dialog.engineChanged());
      QVERIFY(!dialog.chatDefaultsChanged());
      child<QSpinBox>(&dialog, "max_seqs")->setValue(18);
      QVERIFY(dialog.engineChanged());
      QCOMPARE(dialog.config().max_seqs, 18);
    }
  }

  void chatDefaultsRoundTrip() {
    ConversationSettings chat;
    chat.system_prompt = QStringLiteral("Be brief.\nReally.");
    chat.n = 4;
    chat.sampling.temperature = 0.123456f;  // more decimals than the box shows
    chat.sampling.top_p = 0.9f;
    chat.sampling.repeat_last_n = -1;
    chat.sampling.seed = 18446744073709551615ull;
    chat.sampling.stop = {"\n\n", "back\\slash", "tab\there"};
    chat.sampling.ignore_eos = true;  // not shown; must pass through
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, chat, {}, nullptr);
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
    QVERIFY(dialog.chatDefaults() == chat);
    QVERIFY(!dialog.chatDefaultsChanged());
    QVERIFY(!dialog.engineChanged());
    child<QDoubleSpinBox>(&dialog, "temperature")->setValue(1.5);
    QVERIFY(dialog.chatDefaultsChanged());
    QCOMPARE(dialog.chatDefaults().sampling.temperature, 1.5f);
    QVERIFY(!dialog.engineChanged());
  }

  void missingModelDisablesOk() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    auto* path = child<QLineEdit>(&dialog, "model_path");
    auto* message = child<QLabel>(&dialog, "model_path_message");
    QVERIFY(!message->isVisible());

    path->setText(dir_.filePath(QStringLiteral("gone.gguf")));
    QVERIFY(!okButton(&dialog)->isEnabled());
    QVERIFY(!dialog.isValid());
    expectMessageAt(&dialog, path, "model_path_message", QStringLiteral("gone.gguf"));
    QVERIFY(child<QLabel>(&dialog, "problem_summary")->isVisible());

    path->setText(model_);
    QVERIFY(okButton(&dialog)->isEnabled());
    QVERIFY(!message->isVisible());
    QVERIFY(!child<QLabel>(&dialog, "problem_summary")->isVisible());
  }

  void invalidEngineValueShowsNextToIt() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    auto* tabs = dialog.findChild<QTabWidget*>();
    tabs->setCurrentIndex(1);  // Engine
    auto* budget = child<QSpinBox>(&dialog, "kv_budget");
    budget->setValue(0);
    QVERIFY(!okButton(&dialog)->isEnabled());
    expectMessageAt(&dialog, budget, "kv_budget_message", QStringLiteral("KV budget"));
    QVERIFY(dialog.problem().startsWith(QStringLiteral("Engine")));

    // With an exact block count the budget is ignored, so it is no longer a problem.
    child<QAbstractButton>(&dialog, "kv_by_blocks")->click();
    QVERIFY(okButton(&dialog)->isEnabled());
    QVERIFY(!child<QLabel>(&dialog, "kv_budget_message")->isVisible());
    QCOMPARE(dialog.config().num_blocks, child<QSpinBox>(&dialog, "num_blocks")->value());
    child<QAbstractButton>(&dialog, "kv_by_budget")->click();
    QVERIFY(!okButton(&dialog)->isEnabled());
    budget->setValue(256);
    QVERIFY(okButton(&dialog)->isEnabled());
    QCOMPARE(dialog.config().kv_budget_bytes, int64_t{256} << 20);
    QCOMPARE(dialog.config().num_blocks, 0);
  }

  void swapSpaceOnlyForSwap() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, nullptr);
    auto* swap = child<QSpinBox>(&dialog, "swap_space");
    auto* preemption = child<QComboBox>(&dialog, "preemption");
    QVERIFY(!swap->isEnabled());
    preemption->setCurrentIndex(preemption->findData(static_cast<int>(kvscope::PreemptionMode::Swap)));
    QVERIFY(swap->isEnabled());
    QCOMPARE(dialog.config().preemption, kvscope::PreemptionMode::Swap);
    QVERIFY(dialog.engineChanged());
  }

  void legacyConstructorHasNoChatTab() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, nullptr);
    QCOMPARE(dialog.findChild<QTabWidget*>()->count(), 2);
    QVERIFY(dialog.findChild<SamplingEditor*>() == nullptr);
    QVERIFY(dialog.chatDefaults() == ConversationSettings());
    QVERIFY(!dialog.chatDefaultsChanged());
    QVERIFY(dialog.isValid());
  }

  void chatDefaultsProblemDisablesOk() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    child<QDoubleSpinBox>(&dialog, "top_p")->setValue(0.0);
    QVERIFY(!okButton(&dialog)->isEnabled());
    QVERIFY(dialog.problem().startsWith(QStringLiteral("Chat defaults")));
    child<QDoubleSpinBox>(&dialog, "top_p")->setValue(0.5);
    QVERIFY(okButton(&dialog)->isEnabled());
  }

  void recentModelFillsThePath() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    const QString other = dir_.filePath(QStringLiteral("other.gguf"));
    QFile file(other);
    QVERIFY(file.open(QIODevice::WriteOnly));
    SettingsDialog dialog(c, ConversationSettings(), {other, model_}, nullptr);
    auto* recent = child<QComboBox>(&dialog, "recent_models");
    QCOMPARE(recent->count(), 3);  // the prompt, then the two models
    recent->setCurrentIndex(1);
    emit recent->activated(1);
    QCOMPARE(QString::fromStdString(dialog.config().model_path), other);
    QVERIFY(dialog.engineChanged());
  }

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
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {model_}, nullptr);
    expectAccessibleNames(&dialog);
    ConversationSettingsDialog conversation(QStringLiteral("t"), ConversationSettings(), ConversationSettings(),
                                            nullptr);
    expectAccessibleNames(&conversation);
  }

 private:
  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(SettingsDialogTest)
#include "settings_dialog_test.moc"
