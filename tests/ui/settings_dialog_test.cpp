// SettingsDialog offscreen (SamplingEditor and ConversationSettingsDialog: sampling_editor_test.cpp):
// config in -> config() out unchanged; every row of the engine's setting
// table has a control named after its key, with the row's range, a message
// label under it, and a value that reaches config(); an invalid value
// disables OK and shows a message right under its control; fixing it enables
// OK again; a setting that does not apply (swap space without swap, the KV
// budget with a block count) is disabled; every control has an accessible name.
// One file past 600 lines on purpose: every test drives the one dialog the
// setting table builds, through the same helpers (child, setControl,
// makeApply), and a split would copy them.
//   ctest --test-dir build -R settings_dialog_test
#include <limits>

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFormLayout>
#include <QGroupBox>
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

#include "dialog_test_util.h"
#include "sampling_editor.h"
#include "settings_dialog.h"
#include "setting_values.h"
#include "window_fit.h"
#include "support/smollm2_shape.h"

using kvscope::EngineConfig;
using kvscope::SettingSpec;
using kvscope::SettingType;
using kvscope::SettingValue;
using kvscope::test::changedText;
using kvscope::test::child;
using kvscope::test::expectAccessibleNames;
using kvscope::test::expectMessageAt;
using kvscope::test::kMiB;
using kvscope::test::okButton;
using kvscope::ui::ConversationSettings;
using kvscope::ui::SamplingEditor;
using kvscope::ui::SettingsDialog;

namespace {

QString qs(const std::string& text) { return QString::fromStdString(text); }

// A Bytes row's bounds as its MiB box can show them.
int minMiB(const SettingSpec& spec) { return static_cast<int>((spec.min + kMiB - 1) / kMiB); }
int maxMiB(const SettingSpec& spec) { return static_cast<int>(spec.max / kMiB); }

// `message` is the form row right under `control`'s row (the row may hold
// `control` inside a wider widget, as the model path with its Browse button).
void expectMessageRowUnder(QWidget* control, QLabel* message) {
  auto* form = qobject_cast<QFormLayout*>(message->parentWidget()->layout());
  QVERIFY2(form, qPrintable(message->objectName()));
  int row = -1;
  QFormLayout::ItemRole role;
  form->getWidgetPosition(message, &row, &role);
  QVERIFY2(row > 0 && role == QFormLayout::SpanningRole, qPrintable(message->objectName()));
  bool above = false;
  for (QFormLayout::ItemRole r : {QFormLayout::FieldRole, QFormLayout::SpanningRole}) {
    QLayoutItem* item = form->itemAt(row - 1, r);
    QWidget* w = item ? item->widget() : nullptr;
    above = above || (w && (w == control || w->isAncestorOf(control)));
  }
  QVERIFY2(above, qPrintable(message->objectName() + QStringLiteral(" is not under its control")));
}

// Puts `value` in the row's control as a person would pick it.
void setControl(QWidget* dialog, const SettingSpec& spec, const SettingValue& value);

// Sets the first choice (of any Choice or Bool row) under which `spec`
// applies, when it does not apply to the dialog's config now: its control is
// enabled only then. The change is made in *also too, when given.
void makeApply(SettingsDialog* dialog, const SettingSpec& spec, EngineConfig* also = nullptr) {
  if (!spec.applies || spec.applies(dialog->config())) return;
  for (const SettingSpec& row : kvscope::engine_settings()) {
    std::vector<SettingValue> values;
    if (row.type == SettingType::Choice) {
      for (const std::string& choice : row.choices) values.emplace_back(choice);
    } else if (row.type == SettingType::Bool) {
      values = {SettingValue(true), SettingValue(false)};
    }
    for (const SettingValue& value : values) {
      EngineConfig c = dialog->config();
      row.set(c, value);
      if (spec.applies(c)) {
        setControl(dialog, row, value);
        if (also) row.set(*also, value);
        return;
      }
    }
  }
}

void setControl(QWidget* dialog, const SettingSpec& spec, const SettingValue& value) {
  QWidget* control = dialog->findChild<QWidget*>(qs(spec.key));
  QVERIFY2(control, spec.key.c_str());
  switch (spec.type) {
    case SettingType::Int: static_cast<QSpinBox*>(control)->setValue(static_cast<int>(std::get<int64_t>(value))); break;
    case SettingType::Bytes:
      QVERIFY2(std::get<int64_t>(value) % kMiB == 0, spec.key.c_str());  // the box edits whole MiB
      static_cast<QSpinBox*>(control)->setValue(static_cast<int>(std::get<int64_t>(value) / kMiB));
      break;
    case SettingType::Bool: {
      auto* box = static_cast<QCheckBox*>(control);
      if (box->isChecked() != std::get<bool>(value)) box->click();
      break;
    }
    case SettingType::Choice: {
      auto* box = static_cast<QComboBox*>(control);
      const int index = box->findData(qs(std::get<std::string>(value)));
      QVERIFY2(index >= 0, spec.key.c_str());
      box->setCurrentIndex(index);
      break;
    }
    case SettingType::Path: static_cast<QLineEdit*>(control)->setText(qs(std::get<std::string>(value))); break;
  }
}

// Every control whose row has `applies` is enabled exactly when it applies
// to the dialog's config.
void expectEnabledWhereApplies(SettingsDialog* dialog, const QString& after) {
  const EngineConfig c = dialog->config();
  for (const SettingSpec& spec : kvscope::engine_settings()) {
    if (!spec.applies) continue;
    QWidget* control = dialog->findChild<QWidget*>(qs(spec.key));
    QVERIFY2(control->isEnabled() == spec.applies(c),
             qPrintable(qs(spec.key) + QStringLiteral(" enabled=%1 after %2").arg(control->isEnabled()).arg(after)));
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

  // It opens with room for the engine tab's rows where the screen has it
  // (the layout's own size was 588 x 418), never beyond the screen.
  void opensWithRoomWithinTheScreen() {
    SettingsDialog dialog(EngineConfig{}, kvscope::ui::ConversationSettings(), {}, nullptr);
    const QRect room = dialog.screen()->availableGeometry();
    QCOMPARE(dialog.size(), kvscope::ui::fittedWindowSize(SettingsDialog::kOpeningSize, room));
    QVERIFY(dialog.width() <= room.width() && dialog.height() <= room.height());
    QVERIFY2(dialog.height() > dialog.layout()->sizeHint().height(),
             qPrintable(QStringLiteral("%1 vs %2").arg(dialog.height()).arg(dialog.layout()->sizeHint().height())));
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
      QVERIFY2(kvscope::same_settings(dialog.config(), c), qPrintable(changedText(dialog.config(), c)));
      QCOMPARE(dialog.config().record_snapshots, true);
      QVERIFY(!dialog.engineChanged());
      QVERIFY(!dialog.chatDefaultsChanged());
      child<QSpinBox>(&dialog, "max_seqs")->setValue(18);
      QVERIFY(dialog.engineChanged());
      QCOMPARE(dialog.config().max_seqs, 18);
    }
  }

  // With the loaded model's shape, the engine's memory plan checks every
  // edit: a budget that holds no block shows under KV budget and disables
  // OK; a block count that fits clears it; another model path is not judged
  // by this model's shape.
  void memoryPlanProblemsShowNextToTheirSetting() {
    const kvscope::ModelShape smol = kvscope::test::smollm2_shape();  // 46,080 bytes of K/V per token
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.setModelShape(model_, smol);
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
    child<QSpinBox>(&dialog, "block_size")->setValue(2048);  // 90 MiB per block
    child<QSpinBox>(&dialog, "kv_budget")->setValue(64);
    QVERIFY(!dialog.isValid());
    QVERIFY(!okButton(&dialog)->isEnabled());
    auto* message = child<QLabel>(&dialog, "kv_budget_message");
    QVERIFY2(message->text().contains(QStringLiteral("holds no block of 2048 tokens")), qPrintable(message->text()));
    QVERIFY(!message->isHidden());
    child<QSpinBox>(&dialog, "num_blocks")->setValue(2);  // an exact count: the budget no longer applies
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
    QVERIFY(message->isHidden());
    child<QSpinBox>(&dialog, "num_blocks")->setValue(0);
    QVERIFY(!dialog.isValid());
    dialog.setModelShape(QStringLiteral("/elsewhere/other.gguf"), smol);
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
  }

  // Speculation's model-dependent values are checked in the dialog, beside
  // their fields, not after OK (which closed the dialog, lost the edits and
  // named the internal key): an early-exit layer past the loaded model's
  // layers, a draft model that does not exist. The draft model has a
  // Browse… button, enabled with its field.
  void speculationProblemsShowBeforeOk() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.setModelShape(model_, kvscope::test::smollm2_shape());  // 30 layers
    auto* spec = child<QComboBox>(&dialog, "spec");
    spec->setCurrentIndex(spec->findData(QStringLiteral("early_exit")));
    child<QSpinBox>(&dialog, "spec_early_exit_layer")->setValue(31);
    QVERIFY(!okButton(&dialog)->isEnabled());
    auto* layer_message = child<QLabel>(&dialog, "spec_early_exit_layer_message");
    QVERIFY2(layer_message->text().contains(QStringLiteral("the early-exit layer 31 is more than the model's 30 "
                                                           "layers")),
             qPrintable(layer_message->text()));
    child<QSpinBox>(&dialog, "spec_early_exit_layer")->setValue(30);
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));

    auto* browse = child<QPushButton>(&dialog, "browse_spec_draft_model");
    QVERIFY(!browse->isEnabled());  // early exit needs no draft model
    spec->setCurrentIndex(spec->findData(QStringLiteral("draft")));
    QVERIFY(browse->isEnabled());
    child<QLineEdit>(&dialog, "spec_draft_model")->setText(dir_.filePath(QStringLiteral("no-draft.gguf")));
    QVERIFY(!okButton(&dialog)->isEnabled());
    QVERIFY2(child<QLabel>(&dialog, "spec_draft_model_message")->text().contains(QStringLiteral("no such draft model")),
             qPrintable(dialog.problem()));
    child<QLineEdit>(&dialog, "spec_draft_model")->setText(model_);
    QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
  }

  // Every row away from its default, and Bytes values that are not whole
  // MiB (or below the box's 1 MiB) come back exactly while untouched.
  void unusualConfigRoundTrips() {
    const std::vector<EngineConfig> configs = {kvscope::test::unusualConfig(model_.toStdString(), false),
                                               kvscope::test::unusualConfig(model_.toStdString(), true)};
    for (const EngineConfig& c : configs) {
      SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
      QVERIFY2(dialog.isValid(), qPrintable(dialog.problem()));
      QVERIFY2(kvscope::same_settings(dialog.config(), c), qPrintable(changedText(dialog.config(), c)));
      QVERIFY(!dialog.engineChanged());
    }
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      if (spec.type != SettingType::Bytes) continue;
      for (int64_t v : {spec.min, spec.min + 12345, spec.min + kMiB / 2, spec.max - 12345, spec.max}) {
        EngineConfig c;
        c.model_path = model_.toStdString();
        spec.set(c, v);
        SettingsDialog dialog(c, nullptr);
        QVERIFY2(std::get<int64_t>(spec.get(dialog.config())) == v,
                 qPrintable(qs(spec.key) + QStringLiteral("=%1 came back as %2")
                                              .arg(v)
                                              .arg(std::get<int64_t>(spec.get(dialog.config())))));
        QVERIFY2(!dialog.engineChanged(), qPrintable(qs(spec.key) + QString::number(v)));
      }
    }
  }

  // The table walked row by row: a control named after the key, of the
  // row's type, with its range (Bytes in MiB), choices in table order, its
  // help as tooltip, and a message label in the form row under it.
  void everyRowHasItsControl() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      const QString key = qs(spec.key);
      QWidget* control = dialog.findChild<QWidget*>(key);
      QVERIFY2(control, qPrintable(key));
      QCOMPARE(dialog.findChildren<QWidget*>(key).size(), 1);
      auto* message = dialog.findChild<QLabel*>(key + QStringLiteral("_message"));
      QVERIFY2(message, qPrintable(key));
      QVERIFY2(message->isHidden(), qPrintable(key));  // nothing wrong yet
      expectMessageRowUnder(control, message);
      QVERIFY2(!control->accessibleName().isEmpty(), qPrintable(key));
      QVERIFY2(control->toolTip().contains(qs(spec.help)), qPrintable(key));
      switch (spec.type) {
        case SettingType::Int: {
          auto* box = qobject_cast<QSpinBox*>(control);
          QVERIFY2(box, qPrintable(key));
          QCOMPARE(int64_t{box->minimum()}, spec.min);
          QCOMPARE(int64_t{box->maximum()}, spec.max);
          if (!spec.zero_means.empty()) QCOMPARE(box->specialValueText(), qs(spec.zero_means));
          // The box clamps what is typed without a word: the tooltip gives the range.
          QVERIFY2(control->toolTip().contains(QStringLiteral("Range: %1 to ").arg(QLocale().toString(box->minimum()))),
                   qPrintable(key + QStringLiteral(": ") + control->toolTip()));
          // The unit follows the value: "1 rank", "2 ranks".
          if (spec.unit == "ranks" || spec.unit == "tokens" || spec.unit == "sequences") {
            const int before = box->value();
            box->setValue(1);
            QCOMPARE(box->suffix(), QStringLiteral(" ") + qs(spec.unit).chopped(1));
            box->setValue(2);
            QCOMPARE(box->suffix(), QStringLiteral(" ") + qs(spec.unit));
            box->setValue(before);
          }
          break;
        }
        case SettingType::Bytes: {
          auto* box = qobject_cast<QSpinBox*>(control);
          QVERIFY2(box, qPrintable(key));
          QCOMPARE(box->minimum(), minMiB(spec));
          QCOMPARE(box->maximum(), maxMiB(spec));
          QCOMPARE(box->suffix().trimmed(), QStringLiteral("MiB"));
          break;
        }
        case SettingType::Bool: QVERIFY2(qobject_cast<QCheckBox*>(control), qPrintable(key)); break;
        case SettingType::Choice: {
          auto* box = qobject_cast<QComboBox*>(control);
          QVERIFY2(box, qPrintable(key));
          QCOMPARE(box->count(), static_cast<int>(spec.choices.size()));
          for (int i = 0; i < box->count(); ++i) {
            QCOMPARE(box->itemData(i).toString(), qs(spec.choices[static_cast<size_t>(i)]));
            if (static_cast<size_t>(i) < spec.choice_labels.size())
              QCOMPARE(box->itemText(i), qs(spec.choice_labels[static_cast<size_t>(i)]));
          }
          break;
        }
        case SettingType::Path: QVERIFY2(qobject_cast<QLineEdit*>(control), qPrintable(key)); break;
      }
    }
  }

  // The cascade attention row (issue 11) appears, from the table alone, as a
  // choice in the Engine tab's "Attention" group, and reaches the config.
  void cascadeShowsUnderAttention() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    auto* box = dialog.findChild<QComboBox*>(QStringLiteral("cascade"));
    QVERIFY(box);
    auto* group = qobject_cast<QGroupBox*>(box->parentWidget());
    QVERIFY(group);
    QCOMPARE(group->objectName(), QStringLiteral("group_Attention"));
    QCOMPARE(group->title(), QStringLiteral("Attention"));
    box->setCurrentIndex(box->findData(QStringLiteral("on")));
    QCOMPARE(dialog.config().cascade, kvscope::CascadeMode::On);
    box->setCurrentIndex(box->findData(QStringLiteral("off")));
    QCOMPARE(dialog.config().cascade, kvscope::CascadeMode::Off);
  }

  // No number box takes a value out of its row's range, typed or set: it
  // stays in range, no message appears and OK stays enabled. The model path
  // is the control that does take a bad value: it gets its message.
  void outOfRangeIsRefusedOrShown() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    auto* tabs = dialog.findChild<QTabWidget*>();
    // Swap space applies only with preemption by swap; a disabled box takes no typing.
    setControl(&dialog, *kvscope::find_setting("preemption"), SettingValue(std::string("swap")));
    setControl(&dialog, *kvscope::find_setting("spec"), SettingValue(std::string("ngram")));  // its k and lengths
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      if (spec.type != SettingType::Int && spec.type != SettingType::Bytes) continue;
      const QString key = qs(spec.key);
      auto* box = child<QSpinBox>(&dialog, spec.key.c_str());
      makeApply(&dialog, spec);
      QVERIFY2(box->isEnabled(), qPrintable(key));
      const int64_t unit = spec.type == SettingType::Bytes ? kMiB : 1;
      const int64_t lo = spec.type == SettingType::Bytes ? minMiB(spec) : spec.min;
      const int64_t hi = spec.type == SettingType::Bytes ? maxMiB(spec) : spec.max;
      tabs->setCurrentWidget(tabs->widget(1));  // Engine
      box->setFocus();
      for (int64_t bad : {lo - 1, hi + 1, hi * 10 + 7}) {
        box->selectAll();
        QTest::keyClicks(box, QString::number(bad));
        QTest::keyClick(box, Qt::Key_Tab);  // leave the box: it settles on a value
        box->setFocus();
        const int64_t v = std::get<int64_t>(spec.get(dialog.config()));
        QVERIFY2(v >= spec.min && v <= spec.max, qPrintable(key + QStringLiteral(" typed %1 -> %2").arg(bad).arg(v)));
        QVERIFY2(v / unit >= lo && v / unit <= hi, qPrintable(key));
        QVERIFY2(dialog.isValid(), qPrintable(key + QStringLiteral(": ") + dialog.problem()));
        QVERIFY2(child<QLabel>(&dialog, qPrintable(key + QStringLiteral("_message")))->isHidden(), qPrintable(key));
      }
      // Typing does reach the box: a value in range is taken.
      const int64_t good = kvscope::test::middleValue(spec, /*whole_mib=*/true);
      box->selectAll();
      QTest::keyClicks(box, QString::number(good / unit));
      QTest::keyClick(box, Qt::Key_Tab);
      QVERIFY2(spec.get(dialog.config()) == SettingValue(good), qPrintable(key));
      box->setValue(static_cast<int>(lo - 1));
      QCOMPARE(int64_t{box->value()}, lo);
      box->setValue(static_cast<int>(std::min<int64_t>(hi + 1, std::numeric_limits<int>::max())));
      QCOMPARE(int64_t{box->value()}, hi);
      QVERIFY(dialog.isValid());
      QVERIFY(okButton(&dialog)->isEnabled());
      setControl(&dialog, spec, spec.default_value());  // a block count would disable the budget
    }
    tabs->setCurrentIndex(0);  // Model
    auto* path = child<QLineEdit>(&dialog, "model_path");
    for (const QString& bad : {QString(), QStringLiteral("   "), dir_.filePath(QStringLiteral("gone.gguf"))}) {
      path->setText(bad);
      QVERIFY(!dialog.isValid());
      QVERIFY(!okButton(&dialog)->isEnabled());
      QVERIFY2(dialog.problem().startsWith(QStringLiteral("Model")), qPrintable(dialog.problem()));
      expectMessageAt(&dialog, path, "model_path_message", bad.trimmed().isEmpty() ? QStringLiteral("model")
                                                                                   : QStringLiteral("gone.gguf"));
    }
    path->setText(model_);
    QVERIFY(dialog.isValid());
    QVERIFY(child<QLabel>(&dialog, "model_path_message")->isHidden());
  }

  // Every row's other values, set through its control one after another,
  // reach config() and move only that row; controls are enabled exactly
  // where their row applies; a dialog opened on the result shows it all.
  void everyRowReachesConfig() {
    const QString other = dir_.filePath(QStringLiteral("other model.gguf"));
    QFile file(other);
    QVERIFY(file.open(QIODevice::WriteOnly));
    EngineConfig expected;
    expected.model_path = model_.toStdString();
    kvscope::test::fillOtherPaths(expected, model_.toStdString());
    expected.record_snapshots = true;
    SettingsDialog dialog(expected, ConversationSettings(), {}, nullptr);
    expectEnabledWhereApplies(&dialog, QStringLiteral("opening"));
    int num_set = 0;
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      for (const SettingValue& value : kvscope::test::otherValues(spec, other.toStdString(), /*whole_mib=*/true)) {
        makeApply(&dialog, spec, &expected);  // prefix caching once paged was set off
        setControl(&dialog, spec, value);
        spec.set(expected, value);
        const QString what = qs(spec.key) + QLatin1Char('=') + qs(spec.format(value));
        QVERIFY2(spec.get(dialog.config()) == value, qPrintable(what));
        QVERIFY2(kvscope::same_settings(dialog.config(), expected),
                 qPrintable(what + QStringLiteral(": ") + changedText(dialog.config(), expected)));
        QVERIFY2(dialog.isValid(), qPrintable(what + QStringLiteral(": ") + dialog.problem()));
        QVERIFY(dialog.engineChanged());
        expectEnabledWhereApplies(&dialog, what);
        ++num_set;
      }
    }
    QVERIFY(num_set >= static_cast<int>(kvscope::engine_settings().size()));
    QCOMPARE(dialog.config().record_snapshots, true);  // passes through
    SettingsDialog again(dialog.config(), nullptr);
    QVERIFY2(kvscope::same_settings(again.config(), expected), qPrintable(changedText(again.config(), expected)));
    QVERIFY(!again.engineChanged());
    expectEnabledWhereApplies(&again, QStringLiteral("reopening"));
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

  // The KV budget applies only while KV blocks is 0 ("from the KV budget");
  // a block count disables the budget's box and sizes the pool instead. A
  // budget under the row's range cannot be typed.
  void kvBudgetOrBlockCount() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {}, nullptr);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    dialog.findChild<QTabWidget*>()->setCurrentIndex(1);  // Engine
    auto* budget = child<QSpinBox>(&dialog, "kv_budget");
    auto* blocks = child<QSpinBox>(&dialog, "num_blocks");
    QVERIFY(budget->isEnabled());
    QCOMPARE(blocks->value(), 0);
    QCOMPARE(blocks->text(), QStringLiteral("from the KV budget"));

    budget->setFocus();
    budget->selectAll();
    QTest::keyClicks(budget, QStringLiteral("0"));
    QTest::keyClick(budget, Qt::Key_Tab);
    QVERIFY(dialog.config().kv_budget_bytes >= kMiB);
    QVERIFY(okButton(&dialog)->isEnabled());
    QVERIFY(!child<QLabel>(&dialog, "kv_budget_message")->isVisible());

    blocks->setValue(4321);
    QVERIFY(!budget->isEnabled());
    QVERIFY(okButton(&dialog)->isEnabled());
    QCOMPARE(dialog.config().num_blocks, 4321);
    QCOMPARE(dialog.config().kv_budget_bytes, c.kv_budget_bytes);  // kept, for when the count goes back to 0
    blocks->setValue(0);
    QVERIFY(budget->isEnabled());
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
    preemption->setCurrentIndex(preemption->findData(QStringLiteral("swap")));
    QVERIFY(swap->isEnabled());
    QCOMPARE(dialog.config().preemption, kvscope::PreemptionMode::Swap);
    QVERIFY(dialog.engineChanged());
    preemption->setCurrentIndex(preemption->findData(QStringLiteral("recompute")));
    QVERIFY(!swap->isEnabled());
    QVERIFY(!dialog.engineChanged());
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

  void everyControlHasAnAccessibleName() {
    EngineConfig c;
    c.model_path = model_.toStdString();
    SettingsDialog dialog(c, ConversationSettings(), {model_}, nullptr);
    expectAccessibleNames(&dialog);
  }

 private:
  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(SettingsDialogTest)
#include "settings_dialog_test.moc"
