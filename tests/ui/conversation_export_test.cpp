// Conversation export: the Markdown has the title, system prompt, settings and
// every turn in order with its alternatives and stats; the JSON parses with
// QJsonDocument and gives back every field (unicode, quotes and code fences
// included); writeExportFile writes atomically and explains a failure.
//   ctest --test-dir build -R conversation_export_test
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "models/conversation_export.h"

using kvscope::ui::ConversationSummary;
using kvscope::ui::StoredMessage;

namespace {

QDateTime utc(const char* iso) { return QDateTime::fromString(QString::fromLatin1(iso), Qt::ISODateWithMs); }

StoredMessage message(const QString& role, const QString& content, const char* created_at,
                      const QString& stats_json = QString(), const QStringList& alternatives = {}, int selected = 0) {
  StoredMessage m;
  m.role = role;
  m.content = content;
  m.created_at = utc(created_at);
  m.stats_json = stats_json;
  m.alternatives = alternatives;
  m.selected_alternative = selected;
  return m;
}

ConversationSummary sampleConversation() {
  ConversationSummary c;
  c.id = 7;
  c.title = QStringLiteral("Ünïcode \"quotes\" & `ticks`");
  c.created_at = utc("2026-01-02T03:04:05.678Z");
  c.updated_at = utc("2026-01-02T03:09:00.001Z");
  c.system_prompt = QStringLiteral("Be brief.\nAnswer in English.");
  return c;
}

const QString kSettings = QStringLiteral("{\"temperature\":0.7,\"top_p\":0.9,\"max_tokens\":256,\"n\":3}");

const QStringList kAlternatives = {
    QStringLiteral("print('a')"),
    QStringLiteral("```python\nprint(\"héllo 世界\")\n```"),
    QStringLiteral("Use `print`."),
};

std::vector<StoredMessage> sampleMessages() {
  return {
      message(QStringLiteral("user"), QStringLiteral("How do I print in Python? Quote: \"x\""),
              "2026-01-02T03:05:00.000Z"),
      message(QStringLiteral("assistant"), kAlternatives[1], "2026-01-02T03:05:01.500Z",
              QStringLiteral("{\"num_tokens\":12,\"ttft_ms\":80.25,\"tokens_per_s\":41.5}"), kAlternatives, 1),
      message(QStringLiteral("user"), QStringLiteral("Thanks! 🙂"), "2026-01-02T03:08:00.000Z"),
      message(QStringLiteral("assistant"), QStringLiteral("You're welcome."), "2026-01-02T03:09:00.001Z",
              QStringLiteral("not json")),
  };
}

}  // namespace

class ConversationExportTest : public QObject {
  Q_OBJECT
 private slots:
  // The suggested file name: a title's sentence end, slashes and the
  // truncation mark never make "..md" or a folder.
  void fileStemFromTheTitle() {
    using kvscope::ui::exportFileStem;
    QCOMPARE(exportFileStem(QStringLiteral("Name three colors.")), QStringLiteral("Name three colors"));
    QCOMPARE(exportFileStem(QStringLiteral("What is 1/2? And a:b")), QStringLiteral("What is 1-2- And a-b"));
    QCOMPARE(exportFileStem(QStringLiteral("A very long title that was cut…")),
             QStringLiteral("A very long title that was cut"));
    QCOMPARE(exportFileStem(QStringLiteral(" ... ")), QStringLiteral("conversation"));
    QCOMPARE(exportFileStem(QString()), QStringLiteral("conversation"));
  }

  void markdownHasTurnsInOrder() {
    const QString md = kvscope::ui::conversationToMarkdown(sampleConversation(), kSettings, sampleMessages());
    QVERIFY(md.startsWith(QStringLiteral("# Ünïcode \"quotes\" & `ticks`\n")));
    QVERIFY(md.contains(QStringLiteral("2026-01-02T03:04:05.678Z")));
    QVERIFY(md.contains(QStringLiteral("## System prompt\n\n> Be brief.\n> Answer in English.\n")));
    QVERIFY(md.contains(QStringLiteral("- `temperature`: 0.7\n")));
    QVERIFY(md.contains(QStringLiteral("- `max_tokens`: 256\n")));

    // Each turn under its heading, in order, with its content after it.
    const QStringList in_order = {
        QStringLiteral("## 1. User"),
        QStringLiteral("How do I print in Python? Quote: \"x\""),
        QStringLiteral("## 2. Assistant (3 alternatives)"),
        QStringLiteral("### Alternative 1 of 3\n\nprint('a')"),
        QStringLiteral("### Alternative 2 of 3 (selected)\n\n") + kAlternatives[1],
        QStringLiteral("### Alternative 3 of 3\n\nUse `print`."),
        QStringLiteral("*Stats:* `num_tokens` 12 · `tokens_per_s` 41.5 · `ttft_ms` 80.25"),
        QStringLiteral("## 3. User"),
        QStringLiteral("Thanks! 🙂"),
        QStringLiteral("## 4. Assistant"),
        QStringLiteral("You're welcome."),
        QStringLiteral("*Stats:* not json"),  // shown as it is when it does not parse
    };
    qsizetype from = 0;
    for (const QString& part : in_order) {
      const qsizetype at = md.indexOf(part, from);
      QVERIFY2(at >= 0, qPrintable(QStringLiteral("missing or out of order: ") + part + QStringLiteral("\n") + md));
      from = at + part.size();
    }
    QCOMPARE(md.count(QStringLiteral("(selected)")), 1);
    QCOMPARE(md.count(QStringLiteral("Alternative ")), 3);
  }

  void markdownFallbacks() {
    ConversationSummary untitled;
    std::vector<StoredMessage> messages = {message(QStringLiteral("assistant"), QString(), "2026-01-02T03:05:00Z")};
    // The system prompt from the settings when the conversation has none;
    // listed once.
    QString md = kvscope::ui::conversationToMarkdown(
        untitled, QStringLiteral("{\"system_prompt\":\"from settings\",\"seed\":5}"), messages);
    QVERIFY2(md.startsWith(QStringLiteral("# Untitled conversation\n")), qPrintable(md));
    QVERIFY(md.contains(QStringLiteral("## System prompt\n\n> from settings\n")));
    QCOMPARE(md.count(QStringLiteral("from settings")), 1);
    QVERIFY(md.contains(QStringLiteral("- `seed`: 5\n")));
    QVERIFY(md.contains(QStringLiteral("*(empty)*")));  // a reply stopped before its first token

    // Settings that are not JSON are shown raw, fenced so they cannot break out.
    md = kvscope::ui::conversationToMarkdown(untitled, QStringLiteral("temp=0.7 ```"), {});
    QVERIFY2(md.contains(QStringLiteral("## Settings\n\n````\ntemp=0.7 ```\n````\n")), qPrintable(md));
    QVERIFY(md.contains(QStringLiteral("*No messages.*")));
    QVERIFY(!md.contains(QStringLiteral("System prompt")));
  }

  // The stats the app stores, {"alternatives": [one object per reply]}: a
  // line per reply, not the array as JSON.
  void appStatsAreALinePerReply() {
    ConversationSummary c;
    const QString one = QStringLiteral("{\"alternatives\":[{\"finish\":\"stop\",\"generated_tokens\":12}]}");
    QString md = kvscope::ui::conversationToMarkdown(
        c, QString(), {message(QStringLiteral("assistant"), QStringLiteral("Hi"), "2026-01-02T03:05:00Z", one)});
    QVERIFY2(md.contains(QStringLiteral("*Stats:* `finish` stop · `generated_tokens` 12")), qPrintable(md));
    QVERIFY2(!md.contains(QStringLiteral("[{")), qPrintable(md));
    const QString two = QStringLiteral(
        "{\"alternatives\":[{\"generated_tokens\":3},{\"generated_tokens\":5}]}");
    md = kvscope::ui::conversationToMarkdown(
        c, QString(), {message(QStringLiteral("assistant"), QStringLiteral("Hi"), "2026-01-02T03:05:00Z", two)});
    QVERIFY2(md.contains(QStringLiteral("*Stats (alternative 1):* `generated_tokens` 3")), qPrintable(md));
    QVERIFY2(md.contains(QStringLiteral("*Stats (alternative 2):* `generated_tokens` 5")), qPrintable(md));
  }

  void jsonRoundTripsEveryField() {
    const ConversationSummary conversation = sampleConversation();
    const std::vector<StoredMessage> messages = sampleMessages();
    const QByteArray bytes = kvscope::ui::conversationToJson(conversation, kSettings, messages);
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
    const QJsonObject root = doc.object();
    QCOMPARE(root.value(QLatin1String("format")).toString(), QStringLiteral("kvscope-conversation"));
    QCOMPARE(root.value(QLatin1String("version")).toInt(), 1);
    QCOMPARE(root.value(QLatin1String("title")).toString(), conversation.title);
    QCOMPARE(root.value(QLatin1String("system_prompt")).toString(), conversation.system_prompt);
    QCOMPARE(root.value(QLatin1String("created_at")).toString(), QStringLiteral("2026-01-02T03:04:05.678Z"));
    QCOMPARE(utc(qPrintable(root.value(QLatin1String("updated_at")).toString())), conversation.updated_at);
    QCOMPARE(root.value(QLatin1String("settings")).toObject(),
             QJsonDocument::fromJson(kSettings.toUtf8()).object());  // an object, not a string

    const QJsonArray array = root.value(QLatin1String("messages")).toArray();
    QCOMPARE(array.size(), qsizetype(messages.size()));
    for (qsizetype i = 0; i < array.size(); ++i) {
      const QJsonObject m = array[i].toObject();
      const StoredMessage& expected = messages[size_t(i)];
      QCOMPARE(m.value(QLatin1String("role")).toString(), expected.role);
      QCOMPARE(m.value(QLatin1String("content")).toString(), expected.content);
      QCOMPARE(utc(qPrintable(m.value(QLatin1String("created_at")).toString())), expected.created_at);
      QStringList alternatives;
      for (const QJsonValue& v : m.value(QLatin1String("alternatives")).toArray()) alternatives << v.toString();
      QCOMPARE(alternatives, expected.alternatives);
      QCOMPARE(m.value(QLatin1String("selected")).toInt(-1), expected.selected_alternative);
    }
    QVERIFY(array[0].toObject().value(QLatin1String("stats")).isNull());
    const QJsonObject stats = array[1].toObject().value(QLatin1String("stats")).toObject();
    QCOMPARE(stats.value(QLatin1String("num_tokens")).toInt(), 12);
    QCOMPARE(stats.value(QLatin1String("ttft_ms")).toDouble(), 80.25);
    QCOMPARE(array[3].toObject().value(QLatin1String("stats")).toString(), QStringLiteral("not json"));
  }

  void jsonKeepsSettingsThatDoNotParse() {
    ConversationSummary conversation;  // no timestamps
    QJsonObject root = QJsonDocument::fromJson(kvscope::ui::conversationToJson(conversation, QStringLiteral("t=1"), {}))
                           .object();
    QCOMPARE(root.value(QLatin1String("settings")).toString(), QStringLiteral("t=1"));
    QVERIFY(root.value(QLatin1String("created_at")).isNull());
    QVERIFY(root.value(QLatin1String("messages")).toArray().isEmpty());
    root = QJsonDocument::fromJson(kvscope::ui::conversationToJson(conversation, QString(), {})).object();
    QVERIFY(root.contains(QLatin1String("settings")));
    QVERIFY(root.value(QLatin1String("settings")).isNull());
  }

  void writeExportFileWritesAndReplaces() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chat.md"));
    QString error = QStringLiteral("stale");
    QVERIFY2(kvscope::ui::writeExportFile(path, QByteArrayLiteral("first"), &error), qPrintable(error));
    QVERIFY(error.isEmpty());
    const QByteArray second = QStringLiteral("second — ünïcode").toUtf8();
    QVERIFY(kvscope::ui::writeExportFile(path, second, nullptr));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), second);
  }

  void writeExportFileExplainsFailures() {
    QTemporaryDir dir;
    QString error;
    const QString missing = dir.filePath(QStringLiteral("no/such/folder/chat.md"));
    QVERIFY(!kvscope::ui::writeExportFile(missing, QByteArrayLiteral("x"), &error));
    QVERIFY2(error.contains(QStringLiteral("chat.md")) && error.contains(QStringLiteral("does not exist")),
             qPrintable(error));
    QVERIFY(!QFile::exists(missing));

    QVERIFY(!kvscope::ui::writeExportFile(dir.path(), QByteArrayLiteral("x"), &error));
    QVERIFY2(error.contains(QStringLiteral("folder")), qPrintable(error));
    QVERIFY(!kvscope::ui::writeExportFile(QString(), QByteArrayLiteral("x"), &error));
    QVERIFY2(error.contains(QStringLiteral("no file name")), qPrintable(error));
    QVERIFY(!kvscope::ui::writeExportFile(missing, QByteArrayLiteral("x"), nullptr));  // no error wanted

    // A folder without write permission; root may write anyway, then there is
    // nothing to check.
    const QString locked = dir.filePath(QStringLiteral("locked"));
    QVERIFY(QDir().mkpath(locked));
    QVERIFY(QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::ExeOwner));
    QFile probe(locked + QStringLiteral("/probe"));
    if (probe.open(QIODevice::WriteOnly)) {
      probe.close();
      probe.remove();
      qInfo("running with permission to write into a read-only folder (root?): that case is not checked");
    } else {
      QVERIFY(!kvscope::ui::writeExportFile(locked + QStringLiteral("/chat.md"), QByteArrayLiteral("x"), &error));
      QVERIFY2(error.startsWith(QStringLiteral("cannot write")), qPrintable(error));
    }
    QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
  }
};

QTEST_GUILESS_MAIN(ConversationExportTest)
#include "conversation_export_test.moc"
