// engine_settings: every user knob of EngineConfig survives save -> load; a
// hand-edited file with garbage falls back per field with a message; every
// EngineConfig::validate() message maps to its field; `--settings FILE`
// errors; the recent-models list rules.
//   ctest --test-dir build -R engine_settings_test
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "engine_settings.h"

using kvscope::EngineConfig;
using kvscope::ui::EngineField;

namespace {

// Every user knob away from its default (budgets in whole MiB, as stored).
EngineConfig unusual() {
  EngineConfig c;
  c.model_path = "/models/some model (v2).gguf";
  c.num_threads = 3;
  c.block_size = 32;
  c.kv_budget_bytes = int64_t{3000} << 20;
  c.num_blocks = 777;
  c.max_seqs = 9;
  c.max_batched_tokens = 333;
  c.max_model_len = 2048;
  c.paged = false;
  c.prefix_caching = false;
  c.policy = kvscope::SchedulingPolicy::Static;
  c.preemption = kvscope::PreemptionMode::Swap;
  c.swap_space_bytes = int64_t{100} << 20;
  return c;
}

void writeFile(const QString& path, const QByteArray& text) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(text);
}

}  // namespace

class EngineSettingsTest : public QObject {
  Q_OBJECT
 private slots:
  void everyKnobRoundTrips() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("kvscope.ini"));
    const EngineConfig c = unusual();
    QVERIFY(!kvscope::ui::sameEngineKnobs(c, EngineConfig()));
    {
      QSettings settings(path, QSettings::IniFormat);
      kvscope::ui::saveEngineConfig(settings, c);
    }
    QSettings settings(path, QSettings::IniFormat);
    QStringList problems;
    const EngineConfig back = kvscope::ui::loadEngineConfig(settings, &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QVERIFY(kvscope::ui::sameEngineKnobs(back, c));
    // Enums are stored as words a person can edit.
    QCOMPARE(settings.value(QStringLiteral("engine/policy")).toString(), QStringLiteral("static"));
    QCOMPARE(settings.value(QStringLiteral("engine/preemption")).toString(), QStringLiteral("swap"));
  }

  void sameEngineKnobsSeesEveryKnob() {
    const EngineConfig base = unusual();
    const EngineConfig d;
    std::vector<EngineConfig> changed(13, base);
    changed[0].model_path = d.model_path;
    changed[1].num_threads = d.num_threads;
    changed[2].block_size = d.block_size;
    changed[3].kv_budget_bytes = d.kv_budget_bytes;
    changed[4].num_blocks = d.num_blocks;
    changed[5].max_seqs = d.max_seqs;
    changed[6].max_batched_tokens = d.max_batched_tokens;
    changed[7].max_model_len = d.max_model_len;
    changed[8].paged = d.paged;
    changed[9].prefix_caching = d.prefix_caching;
    changed[10].policy = d.policy;
    changed[11].preemption = d.preemption;
    changed[12].swap_space_bytes = d.swap_space_bytes;
    for (size_t i = 0; i < changed.size(); ++i) QVERIFY2(!kvscope::ui::sameEngineKnobs(changed[i], base), qPrintable(QString::number(i)));
    EngineConfig snapshots = base;
    snapshots.record_snapshots = !base.record_snapshots;  // internal, not a knob
    QVERIFY(kvscope::ui::sameEngineKnobs(snapshots, base));
  }

  void garbageFallsBackToDefaults() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("kvscope.ini"));
    writeFile(path,
              "[engine]\n"
              "model_path=/m.gguf\n"
              "threads=lots\n"              // not a number
              "block_size=99999\n"          // out of validate()'s range
              "kv_budget_mib=-5\n"          // must be >= 1
              "num_blocks=99999999999\n"    // beyond int32
              "max_seqs=0\n"                // out of range
              "max_batched_tokens=128\n"    // fine: kept
              "max_model_len=-1\n"          // out of range
              "paged=maybe\n"
              "prefix_caching=off\n"        // fine: kept
              "policy=fifo\n"
              "preemption=Swap\n"           // fine: case does not matter
              "swap_space_mib=-1\n");
    QSettings settings(path, QSettings::IniFormat);
    QStringList problems;
    const EngineConfig c = kvscope::ui::loadEngineConfig(settings, &problems);
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
    QVERIFY(c.validate().ok());
    const QString all = problems.join(QLatin1Char('\n'));
    for (const char* key : {"threads", "block size", "kv_budget_mib", "num_blocks", "max sequences",
                            "max model length", "paged", "policy", "swap_space_mib"})
      QVERIFY2(all.contains(QLatin1String(key)), qPrintable(all));
  }

  // The dialog shows each message next to the field it names; a reworded
  // engine message fails here instead of landing nowhere.
  void everyValidateMessageNamesItsField() {
    auto check = [](EngineField field, auto&& spoil) {
      EngineConfig c;
      c.model_path = QDir::currentPath().toStdString();  // exists
      spoil(c);
      const auto problem = kvscope::ui::engineConfigProblem(c, true);
      QVERIFY(problem.has_value());
      QVERIFY2(problem->field == field, qPrintable(problem->message));
      QVERIFY(!problem->message.isEmpty());
    };
    check(EngineField::Threads, [](EngineConfig& c) { c.num_threads = -1; });
    check(EngineField::BlockSize, [](EngineConfig& c) { c.block_size = 0; });
    check(EngineField::NumBlocks, [](EngineConfig& c) { c.num_blocks = -1; });
    check(EngineField::MaxSeqs, [](EngineConfig& c) { c.max_seqs = 0; });
    check(EngineField::MaxBatchedTokens, [](EngineConfig& c) { c.max_batched_tokens = 0; });
    check(EngineField::MaxModelLen, [](EngineConfig& c) { c.max_model_len = -1; });
    check(EngineField::KvBudget, [](EngineConfig& c) { c.kv_budget_bytes = 0; });
    check(EngineField::SwapSpace, [](EngineConfig& c) { c.swap_space_bytes = -1; });
    check(EngineField::ModelPath, [](EngineConfig& c) { c.model_path.clear(); });
    check(EngineField::ModelPath, [](EngineConfig& c) { c.model_path = "/no/such/model.gguf"; });
    EngineConfig missing_model;
    QVERIFY(!kvscope::ui::engineConfigProblem(missing_model, /*check_model_file=*/false).has_value());
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
