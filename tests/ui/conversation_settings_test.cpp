// ConversationSettings: JSON round trip of every field, defaults for missing
// keys, refusal of bad JSON / wrong types / out-of-range values with the field
// named, the validate() message -> field mapping the editors rely on, and the
// QSettings "chat" group round trip with per-field fallback on garbage; the
// sampling defaults in force (the model file's recommendation over kvscope's,
// the user's choices over both) and the header line naming their sources.
//   ctest --test-dir build -R conversation_settings_test
#include <QFile>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "models/conversation_settings.h"
#include "models/sampling_sources.h"

using kvscope::ui::ConversationSettings;
using kvscope::ui::SamplingSource;

namespace {

// Every field away from its default, with values that are hard to round-trip:
// floats with no short decimal, a seed above 2^53, stop strings with a
// newline, a comma, a quote and non-ASCII text.
ConversationSettings unusual() {
  ConversationSettings c;
  c.system_prompt = QStringLiteral("You are terse.\nAnswer in \"French\", s'il vous plaît.");
  c.n = 3;
  kvscope::SamplingParams& s = c.sampling;
  s.temperature = 1.2345678f;
  s.top_k = 7;
  s.top_p = 0.3333333f;
  s.min_p = 0.01f;
  s.repetition_penalty = 1.15f;
  s.repeat_last_n = -1;
  s.presence_penalty = -0.5f;
  s.frequency_penalty = 0.25f;
  s.seed = 18446744073709551557ull;
  s.max_tokens = 77;
  s.stop = {"\n\nUser:", "a, b", "\"end\"", "終"};
  s.ignore_eos = true;
  return c;
}

}  // namespace

class ConversationSettingsTest : public QObject {
  Q_OBJECT
 private slots:
  void chatDefaults() {
    const ConversationSettings c;
    // llama.cpp's defaults plus a repetition penalty (the default model loops without one).
    QCOMPARE(c.sampling.temperature, 0.8f);
    QCOMPARE(c.sampling.top_k, 40);
    QCOMPARE(c.sampling.top_p, 0.95f);
    QCOMPARE(c.sampling.min_p, 0.05f);
    QCOMPARE(c.sampling.repetition_penalty, 1.1f);
    QCOMPARE(c.sampling.repeat_last_n, 64);
    QCOMPARE(c.sampling.max_tokens, 512);
    QVERIFY(c.chosenFields().isEmpty());
    QCOMPARE(c.n, 1);
    QVERIFY(c.system_prompt.isEmpty());
    QVERIFY(c.sampling.stop.empty());
    QVERIFY(c.validate().ok());
  }

  void jsonRoundTrip() {
    const ConversationSettings c = unusual();
    QVERIFY(!(c == ConversationSettings()));
    const QString json = c.toJson();
    QString error;
    const auto back = ConversationSettings::fromJson(json, &error);
    QVERIFY2(back.has_value(), qPrintable(error));
    QVERIFY2(*back == c, qPrintable(json));
    // Short decimals for people who read the file.
    QVERIFY2(json.contains(QStringLiteral("\"min_p\":0.01")), qPrintable(json));
    // A seed a double cannot hold travels as digits.
    QVERIFY2(json.contains(QStringLiteral("\"18446744073709551557\"")), qPrintable(json));
  }

  void missingKeysTakeDefaults() {
    QString error;
    auto c = ConversationSettings::fromJson(QStringLiteral("{}"), &error);
    QVERIFY2(c.has_value(), qPrintable(error));
    QVERIFY(*c == ConversationSettings());
    c = ConversationSettings::fromJson(QStringLiteral(R"({"top_k": 5, "stop": ["###"], "seed": 42})"), &error);
    QVERIFY2(c.has_value(), qPrintable(error));
    ConversationSettings expected;
    expected.sampling.top_k = 5;
    expected.sampling.stop = {"###"};
    expected.sampling.seed = 42;
    QVERIFY(*c == expected);
  }

  void badJsonIsRefusedNamingTheField_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("named");
    QTest::newRow("not json") << "{\"top_k\": " << "JSON";
    QTest::newRow("array") << "[1, 2]" << "object";
    QTest::newRow("prompt type") << R"({"system_prompt": 5})" << "system_prompt";
    QTest::newRow("temperature type") << R"({"temperature": "hot"})" << "temperature";
    QTest::newRow("temperature range") << R"({"temperature": -1})" << "temperature";
    QTest::newRow("temperature overflow") << R"({"temperature": 1e300})" << "temperature";
    QTest::newRow("top_k fraction") << R"({"top_k": 1.5})" << "top_k";
    QTest::newRow("top_k range") << R"({"top_k": -3})" << "top_k";
    QTest::newRow("top_k too big") << R"({"top_k": 1e12})" << "top_k";
    QTest::newRow("top_p range") << R"({"top_p": 1.5})" << "top_p";
    QTest::newRow("min_p range") << R"({"min_p": -0.1})" << "min_p";
    QTest::newRow("penalty range") << R"({"repetition_penalty": 0})" << "repetition_penalty";
    QTest::newRow("window range") << R"({"repeat_last_n": -2})" << "repeat_last_n";
    QTest::newRow("presence type") << R"({"presence_penalty": null})" << "presence_penalty";
    QTest::newRow("frequency type") << R"({"frequency_penalty": [1]})" << "frequency_penalty";
    QTest::newRow("seed negative") << R"({"seed": -1})" << "seed";
    QTest::newRow("seed text") << R"({"seed": "abc"})" << "seed";
    QTest::newRow("max_tokens range") << R"({"max_tokens": 0})" << "max_tokens";
    QTest::newRow("stop type") << R"({"stop": "###"})" << "stop";
    QTest::newRow("stop item type") << R"({"stop": ["a", 3]})" << "stop";
    QTest::newRow("stop empty") << R"({"stop": [""]})" << "stop";
    QTest::newRow("ignore_eos type") << R"({"ignore_eos": 1})" << "ignore_eos";
    QTest::newRow("n range") << R"({"n": 9})" << "n must";
    QTest::newRow("n zero") << R"({"n": 0})" << "n must";
  }
  void badJsonIsRefusedNamingTheField() {
    QFETCH(QString, json);
    QFETCH(QString, named);
    QString error;
    QVERIFY(!ConversationSettings::fromJson(json, &error).has_value());
    QVERIFY2(error.contains(named), qPrintable(error));
    QVERIFY(!ConversationSettings::fromJson(json, nullptr).has_value());  // a null error is fine
  }

  // The editors put each validate() message next to the field it names; if
  // the engine rewords a message this fails instead of a message landing in
  // the wrong place.
  void everyValidateMessageNamesItsField() {
    auto check = [](const char* field, auto&& spoil) {
      ConversationSettings c;
      spoil(c);
      const kvscope::Status status = c.validate();
      QVERIFY2(!status.ok(), field);
      QCOMPARE(kvscope::ui::conversationFieldOf(status.error()), QString::fromLatin1(field));
    };
    check("n", [](ConversationSettings& c) { c.n = 0; });
    check("temperature", [](ConversationSettings& c) { c.sampling.temperature = -1; });
    check("top_k", [](ConversationSettings& c) { c.sampling.top_k = -1; });
    check("top_p", [](ConversationSettings& c) { c.sampling.top_p = 0; });
    check("min_p", [](ConversationSettings& c) { c.sampling.min_p = 2; });
    check("repetition_penalty", [](ConversationSettings& c) { c.sampling.repetition_penalty = 0; });
    check("repeat_last_n", [](ConversationSettings& c) { c.sampling.repeat_last_n = -5; });
    check("presence_penalty", [](ConversationSettings& c) { c.sampling.presence_penalty = INFINITY; });
    check("frequency_penalty", [](ConversationSettings& c) { c.sampling.frequency_penalty = NAN; });
    check("max_tokens", [](ConversationSettings& c) { c.sampling.max_tokens = 0; });
    check("stop", [](ConversationSettings& c) { c.sampling.stop = {"x", ""}; });
    QCOMPARE(kvscope::ui::conversationFieldOf("something else entirely"), QString());
  }

  void settingsRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("kvscope.ini"));
    const ConversationSettings c = unusual();
    {
      QSettings settings(path, QSettings::IniFormat);
      kvscope::ui::saveChatDefaults(settings, c);
    }
    QSettings settings(path, QSettings::IniFormat);
    QStringList problems;
    const ConversationSettings back = kvscope::ui::loadChatDefaults(settings, &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
    QVERIFY(back == c);
    // An empty file gives the chat defaults, quietly.
    QSettings empty(dir.filePath(QStringLiteral("empty.ini")), QSettings::IniFormat);
    QVERIFY(kvscope::ui::loadChatDefaults(empty, &problems) == ConversationSettings());
    QVERIFY(problems.isEmpty());
  }

  void garbageInSettingsFallsBackPerField() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("kvscope.ini"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("[chat]\n"
               "temperature=warm\n"   // not a number
               "top_k=12\n"           // fine: kept
               "top_p=7\n"            // out of range
               "n=99\n"               // out of range
               "seed=-4\n"            // negative
               "ignore_eos=perhaps\n"
               "max_tokens=100\n");   // fine: kept
    file.close();
    QSettings settings(path, QSettings::IniFormat);
    QStringList problems;
    const ConversationSettings c = kvscope::ui::loadChatDefaults(settings, &problems);
    const ConversationSettings d;
    QCOMPARE(c.sampling.temperature, d.sampling.temperature);
    QCOMPARE(c.sampling.top_k, 12);
    QCOMPARE(c.sampling.top_p, d.sampling.top_p);
    QCOMPARE(c.n, d.n);
    QCOMPARE(c.sampling.seed, d.sampling.seed);
    QCOMPARE(c.sampling.ignore_eos, d.sampling.ignore_eos);
    QCOMPARE(c.sampling.max_tokens, 100);
    QVERIFY(c.validate().ok());
    const QString all = problems.join(QLatin1Char('\n'));
    for (const char* key : {"temperature", "top_p", "n must", "seed", "ignore_eos"})
      QVERIFY2(all.contains(QLatin1String(key)), qPrintable(all));
  }

  // The model file's recommendation wins over kvscope's defaults; what the
  // user set wins over both, and keeps winning on another model.
  void modelRecommendationWinsOverBuiltInDefaults() {
    kvscope::RecommendedSampling r;
    r.temperature = 0.6f;
    r.top_k = 20;
    r.source = "GGUF general.sampling.*";
    const kvscope::SamplingDefaults model = kvscope::resolve_sampling_defaults(r);

    const ConversationSettings fresh = ConversationSettings().withDefaults(model.params);
    QCOMPARE(fresh.sampling.temperature, 0.6f);
    QCOMPARE(fresh.sampling.top_k, 20);
    QCOMPARE(fresh.sampling.top_p, 0.95f);              // kvscope's
    QCOMPARE(fresh.sampling.repetition_penalty, 1.1f);  // kvscope's
    QVERIFY(fresh.chosenFields().isEmpty());
    QCOMPARE(kvscope::ui::samplingSourceOf(fresh, QStringLiteral("temperature"), model), SamplingSource::ModelFile);
    QCOMPARE(kvscope::ui::samplingSourceOf(fresh, QStringLiteral("top_p"), model), SamplingSource::Kvscope);
    QCOMPARE(kvscope::ui::samplingSummary(fresh, model),
             (QStringList{QStringLiteral("model file: temperature 0.6, top-k 20"),
                          QStringLiteral("kvscope defaults: top-p 0.95, min-p 0.05, repeat penalty 1.1, "
                                         "over the last 64 tokens")}));

    // The user sets temperature 1.2 (as a dialog or a test would: by value).
    ConversationSettings mine = fresh;
    mine.sampling.temperature = 1.2f;
    QCOMPARE(mine.chosenFields(), QStringList{QStringLiteral("temperature")});
    // Saved and reopened on a model with no recommendation: 1.2 stays, top-k
    // goes back to kvscope's.
    QString error;
    const auto stored = ConversationSettings::fromJson(mine.toJson(), &error);
    QVERIFY2(stored.has_value(), qPrintable(error));
    const kvscope::SamplingDefaults plain = kvscope::resolve_sampling_defaults({});
    const ConversationSettings other = stored->withDefaults(plain.params);
    QCOMPARE(other.sampling.temperature, 1.2f);
    QCOMPARE(other.sampling.top_k, 40);
    QCOMPARE(kvscope::ui::samplingSourceOf(other, QStringLiteral("temperature"), plain), SamplingSource::Conversation);
    QCOMPARE(kvscope::ui::samplingSummary(other, plain).first(), QStringLiteral("this conversation: temperature 1.2"));
    // A field put back to the default in force follows the defaults again.
    ConversationSettings back = other;
    back.chosen.clear();
    back.sampling.temperature = back.applied_defaults.temperature;
    QVERIFY(back.chosenFields().isEmpty());
  }

  void greedyLeavesOutTheFiltersItIgnores() {
    ConversationSettings c;
    c.sampling.temperature = 0.0f;
    const kvscope::SamplingDefaults plain = kvscope::resolve_sampling_defaults({});
    QCOMPARE(kvscope::ui::samplingSummary(c.withDefaults(plain.params), plain),
             (QStringList{QStringLiteral("this conversation: greedy"),
                          QStringLiteral("kvscope defaults: repeat penalty 1.1, over the last 64 tokens")}));
  }

  // Settings stored before "chosen" existed held every value; the chat's
  // old defaults among them (temperature 0.7, no repetition penalty: the
  // ones that looped) must not count as the user's choice.
  void oldStoredDefaultsFollowTheNewOnes() {
    QString error;
    const auto old = ConversationSettings::fromJson(
        QStringLiteral(R"({"temperature": 0.7, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
                           "repetition_penalty": 1, "repeat_last_n": 64, "max_tokens": 512})"),
        &error);
    QVERIFY2(old.has_value(), qPrintable(error));
    QVERIFY(old->chosenFields().isEmpty());
    const ConversationSettings now = old->withDefaults(kvscope::kvscope_sampling_defaults());
    QCOMPARE(now.sampling.temperature, 0.8f);
    QCOMPARE(now.sampling.repetition_penalty, 1.1f);
    const auto hot = ConversationSettings::fromJson(QStringLiteral(R"({"temperature": 1.3, "top_k": 40})"), &error);
    QVERIFY2(hot.has_value(), qPrintable(error));
    QCOMPARE(hot->chosenFields(), QStringList{QStringLiteral("temperature")});
    QVERIFY(!ConversationSettings::fromJson(QStringLiteral(R"({"chosen": ["seed"]})"), &error));
    QVERIFY2(error.contains(QStringLiteral("chosen")), qPrintable(error));

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("old.ini"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("[chat]\ntemperature=0.7\nrepetition_penalty=1\ntop_k=12\n");
    file.close();
    QSettings settings(path, QSettings::IniFormat);
    const ConversationSettings loaded = kvscope::ui::loadChatDefaults(settings);
    QCOMPARE(loaded.chosenFields(), QStringList{QStringLiteral("top_k")});
    QCOMPARE(loaded.withDefaults(kvscope::kvscope_sampling_defaults()).sampling.temperature, 0.8f);
  }
};

QTEST_GUILESS_MAIN(ConversationSettingsTest)
#include "conversation_settings_test.moc"
