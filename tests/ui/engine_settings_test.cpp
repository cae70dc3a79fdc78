// engine_settings: every row of the engine's setting table survives save ->
// load at its bounds and in between; a hand-edited file with garbage or an
// out-of-range value falls back per setting with a message naming it; files
// written before the table (budgets in whole MiB) are still read; every
// EngineConfig::validate() problem names a setting of the table; `--settings
// FILE` errors; the recent-models list rules.
//   ctest --test-dir build -R engine_settings_test
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "engine_settings.h"
#include "models/conversation_settings.h"
#include "setting_values.h"

using kvscope::EngineConfig;
using kvscope::SettingSpec;
using kvscope::SettingType;
using kvscope::SettingValue;
using kvscope::test::changedText;
using kvscope::test::kMiB;

namespace {

// Spaces, a comma (a list separator to QSettings) and non-ASCII must survive.
const std::string kOddPath = "/models/some model, v2 (\u00e9t\u00e9).gguf";

void writeFile(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}

QString qs(const std::string& text) { return QString::fromStdString(text); }

QString show(const SettingSpec& spec, const SettingValue& value) {
  return QStringLiteral("%1=%2").arg(qs(spec.key), qs(spec.format(value)));
}

// Saves `c` to a new file and loads it from a copy, so that the values are
// read back from the file's text (QSettings caches a file it wrote).
// *copy: the copy's path.
EngineConfig savedAndReadBack(const QTemporaryDir& dir, const EngineConfig& c, QStringList* problems,
                              QString* copy = nullptr) {
  static int num_files = 0;
  const QString path = dir.filePath(QStringLiteral("saved-%1.ini").arg(++num_files));
  const QString read_path = dir.filePath(QStringLiteral("read-%1.ini").arg(num_files));
  {
    QSettings settings(path, QSettings::IniFormat);
    kvscope::ui::saveEngineConfig(settings, c);
  }
  if (!QFile::copy(path, read_path)) qFatal("cannot copy %s", qPrintable(path));
  if (copy) *copy = read_path;
  QSettings settings(read_path, QSettings::IniFormat);
  return kvscope::ui::loadEngineConfig(settings, problems);
}

// Loads `ini` (the [engine] group's lines) from a new file: QSettings caches
// a file's contents by its name, size and time, so rewriting one file could
// read the previous text.
EngineConfig loadText(const QTemporaryDir& dir, const QByteArray& ini, QStringList* problems) {
  static int num_files = 0;
  const QString path = dir.filePath(QStringLiteral("hand-edited-%1.ini").arg(++num_files));
  writeFile(path, "[engine]\n" + ini);
  QSettings settings(path, QSettings::IniFormat);
  return kvscope::ui::loadEngineConfig(settings, problems);
}

}  // namespace

class EngineSettingsTest : public QObject {
  Q_OBJECT
 private slots:
  void everyKnobRoundTrips() {
    QTemporaryDir dir;
    const EngineConfig c = kvscope::test::unusualConfig(kOddPath, /*whole_mib=*/false);
    // Every row differs from its default, so each one is carried below.
    QCOMPARE(kvscope::changed_settings(c, EngineConfig()).size(), kvscope::engine_settings().size());
    QStringList problems;
    QString copy;
    const EngineConfig back = savedAndReadBack(dir, c, &problems, &copy);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QVERIFY2(kvscope::same_settings(back, c), qPrintable(changedText(back, c)));
    QCOMPARE(back.record_snapshots, false);  // the app's to set, not stored
    // Every row is stored under its key in its text form, which a person can edit.
    QSettings settings(copy, QSettings::IniFormat);
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      QCOMPARE(settings.value(QStringLiteral("engine/") + qs(spec.key)).toString(), qs(spec.format(spec.get(c))));
    }
    QCOMPARE(settings.value(QStringLiteral("engine/policy")).toString(), QStringLiteral("static"));
    QCOMPARE(settings.value(QStringLiteral("engine/preemption")).toString(), QStringLiteral("swap"));
  }

  // Each row alone, at its min, its max and in between (bytes not whole MiB).
  void everyRowRoundTripsAlone() {
    QTemporaryDir dir;
    EngineConfig base;
    base.model_path = "/m.gguf";
    kvscope::test::fillOtherPaths(base, "/draft.gguf");
    int num_checked = 0;
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      const std::vector<SettingValue> values = kvscope::test::otherValues(spec, kOddPath, /*whole_mib=*/false);
      QVERIFY2(!values.empty(), spec.key.c_str());
      for (const SettingValue& value : values) {
        EngineConfig c = base;
        spec.set(c, value);
        QVERIFY(kvscope::changed_settings(c, base) == std::vector<std::string>{spec.key});
        QStringList problems;
        const EngineConfig back = savedAndReadBack(dir, c, &problems);
        QVERIFY2(problems.isEmpty(),
                 qPrintable(show(spec, value) + QStringLiteral(": ") + problems.join(QLatin1Char('\n'))));
        QVERIFY2(spec.get(back) == value,
                 qPrintable(show(spec, value) + QStringLiteral(" came back as ") + qs(spec.format(spec.get(back)))));
        QVERIFY2(kvscope::same_settings(back, c),
                 qPrintable(show(spec, value) + QStringLiteral(" ") + changedText(back, c)));
        ++num_checked;
      }
    }
    QVERIFY(num_checked >= static_cast<int>(kvscope::engine_settings().size()));
  }

  // A value that is not of the row's type: that row falls back to its
  // default, one problem names the key, the other rows are kept.
  void garbageForEachRowFallsBack() {
    QTemporaryDir dir;
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      if (spec.type == SettingType::Path) continue;  // any text is a path; a missing file is the loader's to report
      std::vector<QByteArray> garbage = {"", "lots of", "1 2"};
      if (spec.type == SettingType::Int) garbage.insert(garbage.end(), {"12abc", "1.5", "0x10"});
      if (spec.type == SettingType::Bytes) garbage.insert(garbage.end(), {"12X", "-5M", "1..5M", "M"});
      if (spec.type == SettingType::Bool) garbage.insert(garbage.end(), {"maybe", "2"});
      if (spec.type == SettingType::Choice) garbage.insert(garbage.end(), {"fifo", "0"});
      // Another setting in the same file, which must be kept.
      const SettingSpec& other = *kvscope::find_setting(spec.key == "max_seqs" ? "threads" : "max_seqs");
      for (const QByteArray& text : garbage) {
        QStringList problems;
        const QByteArray ini = "model_path=/m.gguf\n" + QByteArray::fromStdString(other.key) + "=3\n" +
                               QByteArray::fromStdString(spec.key) + "=" + text + "\n";
        const EngineConfig c = loadText(dir, ini, &problems);
        const QString what = qs(spec.key) + QStringLiteral("=\"") + QString::fromUtf8(text) + QLatin1Char('"');
        QVERIFY2(spec.get(c) == spec.default_value(), qPrintable(what));
        QVERIFY2(problems.size() == 1, qPrintable(what + QStringLiteral(": ") + problems.join(QLatin1Char('\n'))));
        QVERIFY2(problems[0].contains(QStringLiteral("engine/") + qs(spec.key)), qPrintable(problems[0]));
        QVERIFY2(problems[0].contains(QStringLiteral("default")), qPrintable(problems[0]));
        // The rest of the file is kept.
        QCOMPARE(c.model_path, std::string("/m.gguf"));
        QVERIFY2(other.get(c) == SettingValue(int64_t{3}), qPrintable(what));
      }
    }
  }

  // A number that parses but is out of the row's range falls back too, with
  // the range in the message; one beyond 32 bits must not wrap into range.
  void outOfRangeForEachRowFallsBack() {
    QTemporaryDir dir;
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      if (spec.type != SettingType::Int && spec.type != SettingType::Bytes) continue;
      std::vector<int64_t> bad = {spec.max + 1};
      // Below the range; a size below 0 ("-1") is not a size at all: garbage, above.
      if (spec.type == SettingType::Int || spec.min > 0) bad.push_back(spec.min - 1);
      if (spec.type == SettingType::Int) bad.push_back((int64_t{1} << 32) + kvscope::test::middleValue(spec, false));
      for (int64_t v : bad) {
        QStringList problems;
        const EngineConfig c = loadText(dir, "model_path=/m.gguf\n" + QByteArray::fromStdString(spec.key) + "=" +
                                                 QByteArray::number(static_cast<qlonglong>(v)) + "\n",
                                        &problems);
        const QString what = qs(spec.key) + QLatin1Char('=') + QString::number(v);
        QVERIFY2(spec.get(c) == spec.default_value(),
                 qPrintable(what + QStringLiteral(" came back as ") + qs(spec.format(spec.get(c)))));
        QVERIFY2(problems.size() == 1, qPrintable(what + QStringLiteral(": ") + problems.join(QLatin1Char('\n'))));
        // The setting is named (by its key or its label) with its range.
        const QString range = spec.type == SettingType::Bytes
                                  ? QStringLiteral("[%1, %2]").arg(qs(kvscope::format_byte_size(spec.min)),
                                                                    qs(kvscope::format_byte_size(spec.max)))
                                  : QStringLiteral("[%1, %2]").arg(spec.min).arg(spec.max);
        const bool named = problems[0].contains(qs(spec.key)) || problems[0].contains(qs(spec.label).toLower());
        QVERIFY2(named && problems[0].contains(range),
                 qPrintable(what + QStringLiteral(": ") + problems[0]));
      }
    }
  }

  // A file of many mistakes at once, as an old hand-edited file may be.
  void garbageFallsBackToDefaults() {
    QTemporaryDir dir;
    QStringList problems;
    const EngineConfig c = loadText(dir,
                                    "model_path=/m.gguf\n"
                                    "threads=lots\n"              // not a number
                                    "block_size=99999\n"          // out of the row's range
                                    "kv_budget_mib=-5\n"          // legacy key: must be >= 0 MiB
                                    "num_blocks=99999999999\n"    // beyond int32
                                    "max_seqs=0\n"                // out of range
                                    "max_batched_tokens=128\n"    // fine: kept
                                    "max_model_len=-1\n"          // out of range
                                    "paged=maybe\n"
                                    "prefix_caching=off\n"        // fine: kept
                                    "policy=fifo\n"
                                    "preemption=Swap\n"           // fine: case does not matter
                                    "swap_space_mib=-1\n",        // legacy key
                                    &problems);
    const EngineConfig d;
    QCOMPARE(c.model_path, std::string("/m.gguf"));
    QCOMPARE(c.num_threads, d.num_threads);
    QCOMPARE(c.block_size, d.block_size);
    QCOMPARE(c.kv_budget_bytes, d.kv_budget_bytes);
    QCOMPARE(c.num_blocks, d.num_blocks);
    QCOMPARE(c.max_seqs, d.max_seqs);
    QCOMPARE(c.max_batched_tokens, 128);
    QCOMPARE(c.max_model_len, d.max_model_len);
    QCOMPARE(c.paged, d.paged);
    QCOMPARE(c.prefix_caching, false);
    QCOMPARE(c.policy, d.policy);
    QCOMPARE(c.preemption, kvscope::PreemptionMode::Swap);
    QCOMPARE(c.swap_space_bytes, d.swap_space_bytes);
    QVERIFY(c.validate().empty());
    QCOMPARE(problems.size(), 9);
    const QString all = problems.join(QLatin1Char('\n'));
    for (const char* key : {"threads", "block size", "kv_budget_mib", "kv blocks", "max sequences",
                            "max model length", "paged", "policy", "swap_space_mib"})
      QVERIFY2(all.contains(QLatin1String(key)), qPrintable(all));
  }

  // Files written before the setting table keep budgets in whole MiB.
  void legacyMiBKeysAreRead() {
    QTemporaryDir dir;
    QStringList problems;
    EngineConfig c = loadText(dir, "model_path=/m.gguf\nkv_budget_mib=300\nswap_space_mib=0\n", &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QCOMPARE(c.kv_budget_bytes, 300 * kMiB);
    QCOMPARE(c.swap_space_bytes, int64_t{0});

    // The new key wins over the old one.
    problems.clear();
    c = loadText(dir, "kv_budget_mib=300\nkv_budget=1G\nswap_space_mib=7\nswap_space=1536K\n", &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QCOMPARE(c.kv_budget_bytes, int64_t{1} << 30);
    QCOMPARE(c.swap_space_bytes, int64_t{1536} << 10);

    // Garbage, or a budget the range refuses, falls back with a message.
    for (const QByteArray& text : {QByteArray("lots"), QByteArray("1.5"), QByteArray("0")}) {
      problems.clear();
      c = loadText(dir, "kv_budget_mib=" + text + "\n", &problems);
      QCOMPARE(c.kv_budget_bytes, EngineConfig().kv_budget_bytes);
      QVERIFY2(problems.size() == 1, qPrintable(problems.join(QLatin1Char('\n'))));
      QVERIFY2(problems[0].contains(QStringLiteral("kv_budget")) || problems[0].contains(QStringLiteral("kv budget")),
               qPrintable(problems[0]));
    }

    // Saving writes the new keys only, so the two cannot disagree later.
    const QString path = dir.filePath(QStringLiteral("old.ini"));
    writeFile(path, "[engine]\nkv_budget_mib=300\nswap_space_mib=100\n");
    {
      QSettings settings(path, QSettings::IniFormat);
      c = kvscope::ui::loadEngineConfig(settings);
      QCOMPARE(c.swap_space_bytes, 100 * kMiB);
      kvscope::ui::saveEngineConfig(settings, c);
    }
    QSettings settings(path, QSettings::IniFormat);
    QVERIFY(!settings.contains(QStringLiteral("engine/kv_budget_mib")));
    QVERIFY(!settings.contains(QStringLiteral("engine/swap_space_mib")));
    QCOMPARE(settings.value(QStringLiteral("engine/kv_budget")).toString(), QStringLiteral("300M"));
    QCOMPARE(kvscope::ui::loadEngineConfig(settings).kv_budget_bytes, 300 * kMiB);
  }

  // gpu_fused_norms (on / off, saved as "false" by every earlier version)
  // became the choice gpu_norm_fusion: the old key is read as nothing, with
  // no message, and the next save drops it, so the new default (auto) holds.
  void retiredFusedNormsKeyIsDroppedQuietly() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("before_norm_fusion.ini"));
    writeFile(path, "[engine]\nmodel_path=/m.gguf\ngpu_fused_norms=false\n");
    {
      QSettings settings(path, QSettings::IniFormat);
      QStringList problems;
      const EngineConfig c = kvscope::ui::loadEngineConfig(settings, &problems);
      QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
      QCOMPARE(c.gpu_norm_fusion, kvscope::GpuNormFusion::Auto);
      kvscope::ui::saveEngineConfig(settings, c);
    }
    QSettings settings(path, QSettings::IniFormat);
    QVERIFY(!settings.contains(QStringLiteral("engine/gpu_fused_norms")));
    QCOMPARE(settings.value(QStringLiteral("engine/gpu_norm_fusion")).toString(), QStringLiteral("auto"));
  }

  // The dialog shows each problem next to the control of the setting it
  // names: every problem must name a row of the table (or the model path).
  void everyValidateProblemNamesItsSetting() {
    EngineConfig good;
    good.model_path = QDir::currentPath().toStdString();  // exists
    QVERIFY(kvscope::ui::engineConfigProblems(good, true).isEmpty());
    for (const SettingSpec& spec : kvscope::engine_settings()) {
      if (spec.type != SettingType::Int && spec.type != SettingType::Bytes) continue;
      for (int64_t v : {spec.min - 1, spec.max + 1}) {
        EngineConfig c = good;
        spec.set(c, v);
        const QList<kvscope::ui::EngineProblem> problems = kvscope::ui::engineConfigProblems(c, true);
        const QString what = qs(spec.key) + QLatin1Char('=') + QString::number(v);
        QVERIFY2(problems.size() == 1, qPrintable(what));
        QVERIFY2(problems[0].field == qs(spec.key), qPrintable(what + QStringLiteral(": ") + problems[0].field));
        QVERIFY2(!problems[0].message.isEmpty(), qPrintable(what));
      }
    }
    auto modelProblem = [&](const std::string& path) {
      EngineConfig c = good;
      c.model_path = path;
      return kvscope::ui::engineConfigProblems(c, true);
    };
    for (const std::string& path : {std::string(), std::string("/no/such/model.gguf")}) {
      const QList<kvscope::ui::EngineProblem> problems = modelProblem(path);
      QCOMPARE(problems.size(), 1);
      QCOMPARE(problems[0].field, QStringLiteral("model_path"));
      QVERIFY(!problems[0].message.isEmpty());
    }
    QVERIFY(modelProblem("/no/such/model.gguf")[0].message.contains(QStringLiteral("/no/such/model.gguf")));
    // Without the file check, no model path is not a problem yet.
    EngineConfig missing_model;
    QVERIFY(kvscope::ui::engineConfigProblems(missing_model, /*check_model_file=*/false).isEmpty());
    missing_model.block_size = 0;
    QCOMPARE(kvscope::ui::engineConfigProblems(missing_model, false).size(), 1);
  }

  void settingsFileErrors() {
    QTemporaryDir dir;
    QString error;
    QVERIFY(!kvscope::ui::loadEngineConfigFromFile(dir.filePath(QStringLiteral("nope.ini")), &error));
    QVERIFY2(error.contains(QStringLiteral("does not exist")), qPrintable(error));
    QVERIFY(!kvscope::ui::loadEngineConfigFromFile(dir.path(), &error));
    QVERIFY2(error.contains(QStringLiteral("not a file")), qPrintable(error));

    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("models")));
    const QString path = dir.filePath(QStringLiteral("run.ini"));
    writeFile(path, "[engine]\nmodel_path=models/m.gguf\nblock_size=8\n[chat]\ntemperature=0\n");
    error.clear();
    const auto config = kvscope::ui::loadEngineConfigFromFile(path, &error);
    QVERIFY2(config.has_value(), qPrintable(error));
    QCOMPARE(config->block_size, 8);
    // Relative to the file, not to wherever kvscope was started.
    QCOMPARE(QString::fromStdString(config->model_path), dir.filePath(QStringLiteral("models/m.gguf")));
  }

  // A misspelt key is named, not silently left at its default; a file with
  // neither group (random bytes, the wrong file) says so; saving drops keys
  // that are no setting, so the app's own file does not repeat the message.
  void unknownKeysAreNamed() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("typo.ini"));
    writeFile(path, "[engine]\nkv_budgett=1G\nblock_size=8\n[chat]\ntemprature=0\ntemperature=0.5\n");
    QString error;
    QStringList problems;
    const auto config = kvscope::ui::loadEngineConfigFromFile(path, &error, &problems);
    QVERIFY2(config.has_value(), qPrintable(error));
    QCOMPARE(config->block_size, 8);
    QSettings ini(path, QSettings::IniFormat);
    const kvscope::ui::ConversationSettings chat = kvscope::ui::loadChatDefaults(ini, &problems);
    QCOMPARE(chat.sampling.temperature, 0.5f);
    QCOMPARE(problems.size(), 2);
    QVERIFY2(problems[0].contains(QStringLiteral("engine/kv_budgett is not a setting")), qPrintable(problems[0]));
    QVERIFY2(problems[1].contains(QStringLiteral("chat/temprature is not a setting")), qPrintable(problems[1]));

    const QString other = dir.filePath(QStringLiteral("other.ini"));
    writeFile(other, "colour=blue\n[window]\ngeometry=1\n");
    problems.clear();
    QVERIFY(kvscope::ui::loadEngineConfigFromFile(other, &error, &problems).has_value());
    QCOMPARE(problems.size(), 1);
    QVERIFY2(problems[0].contains(QStringLiteral("no [engine] or [chat]")), qPrintable(problems[0]));

    {
      QSettings settings(path, QSettings::IniFormat);
      kvscope::ui::saveEngineConfig(settings, *config);
      kvscope::ui::saveChatDefaults(settings, chat);
    }
    QSettings saved(path, QSettings::IniFormat);
    QVERIFY(!saved.contains(QStringLiteral("engine/kv_budgett")));
    QVERIFY(!saved.contains(QStringLiteral("chat/temprature")));
    problems.clear();
    kvscope::ui::loadEngineConfig(saved, &problems);
    kvscope::ui::loadChatDefaults(saved, &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
  }

  void recentModelsRules() {
    QTemporaryDir dir;
    QSettings settings(dir.filePath(QStringLiteral("kvscope.ini")), QSettings::IniFormat);
    QVERIFY(kvscope::ui::recentModels(settings).isEmpty());
    QStringList files;
    for (int i = 0; i < 10; ++i) {
      files.append(dir.filePath(QStringLiteral("m%1.gguf").arg(i)));
      writeFile(files.last(), "GGUF");
    }
    for (const QString& f : files) kvscope::ui::addRecentModel(settings, f);
    QStringList recent = kvscope::ui::recentModels(settings);
    QCOMPARE(recent.size(), kvscope::ui::kMaxRecentModels);
    QCOMPARE(recent.first(), files[9]);  // most recent first
    QCOMPARE(recent.last(), files[2]);   // the two oldest fell off

    // Opening one again moves it to the front, once.
    kvscope::ui::addRecentModel(settings, files[5]);
    recent = kvscope::ui::recentModels(settings);
    QCOMPARE(recent.size(), kvscope::ui::kMaxRecentModels);
    QCOMPARE(recent.first(), files[5]);
    QCOMPARE(recent.count(files[5]), 1);
    // The same file spelled another way is the same entry.
    kvscope::ui::addRecentModel(settings, dir.filePath(QStringLiteral("models/../m7.gguf")));
    recent = kvscope::ui::recentModels(settings);
    QCOMPARE(recent.first(), files[7]);
    QCOMPARE(recent.count(files[7]), 1);
    kvscope::ui::addRecentModel(settings, QString());  // ignored
    QCOMPARE(kvscope::ui::recentModels(settings), recent);

    // A file that is gone is left out when read.
    QVERIFY(QFile::remove(files[5]));
    recent = kvscope::ui::recentModels(settings);
    QVERIFY(!recent.contains(files[5]));
    QCOMPARE(recent.size(), kvscope::ui::kMaxRecentModels - 1);
  }
};

QTEST_GUILESS_MAIN(EngineSettingsTest)
#include "engine_settings_test.moc"
