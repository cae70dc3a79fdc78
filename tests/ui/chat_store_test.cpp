// ChatStore on files in a temporary folder: create / rename / delete / list /
// search / append / update; everything is there after reopening the file; WAL
// is on; a directory, a corrupt file or a newer schema give an error, not a
// crash. Schema 2: a version 1 file (made here with the version 1 DDL) is
// migrated keeping its data, or left untouched when the migration fails;
// settings, stats, alternatives and truncation. Offscreen.
//   ctest --test-dir build-gui -R chat_store_test
#include <QFile>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "models/chat_store.h"

using kvscope::ui::ChatStore;

namespace {

// Runs `statements` on `path` through a connection of its own, outside
// ChatStore; the first failure's message, empty when all succeeded.
QString execRaw(const QString& path, const QStringList& statements) {
  const QString name = QStringLiteral("raw");
  QString error;
  {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
    db.setDatabaseName(path);
    if (!db.open()) return db.lastError().text();
    QSqlQuery q(db);
    for (const QString& statement : statements) {
      if (!q.exec(statement)) {
        error = statement + QStringLiteral(": ") + q.lastError().text();
        break;
      }
    }
    q.finish();
    db.close();
  }
  QSqlDatabase::removeDatabase(name);
  return error;
}

// The first value `query` returns on `path`, read outside ChatStore.
QVariant queryRaw(const QString& path, const QString& query) {
  const QString name = QStringLiteral("raw_query");
  QVariant value;
  {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
    db.setDatabaseName(path);
    if (db.open()) {
      QSqlQuery q(db);
      if (q.exec(query) && q.next()) value = q.value(0);
      q.finish();
      db.close();
    }
  }
  QSqlDatabase::removeDatabase(name);
  return value;
}

// Schema version 1 exactly as kvscope wrote it before version 2: frozen here so
// that the migration is tested against the real old layout.
const QStringList kVersion1Ddl = {
    QStringLiteral("CREATE TABLE conversations ("
                   " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                   " title TEXT NOT NULL,"
                   " system_prompt TEXT NOT NULL DEFAULT '',"
                   " created_at INTEGER NOT NULL,"
                   " updated_at INTEGER NOT NULL)"),
    QStringLiteral("CREATE TABLE messages ("
                   " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                   " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                   " role TEXT NOT NULL,"
                   " content TEXT NOT NULL,"
                   " created_at INTEGER NOT NULL,"
                   " ordinal INTEGER NOT NULL,"
                   " UNIQUE (conversation_id, ordinal))"),
    QStringLiteral("CREATE INDEX conversations_updated ON conversations(updated_at)"),
};

// Two conversations with known timestamps (ms since the epoch).
const QStringList kVersion1Rows = {
    QStringLiteral("INSERT INTO conversations VALUES (1, 'Old chat', 'be brief', 1700000000000, 1700000005000)"),
    QStringLiteral("INSERT INTO conversations VALUES (2, 'Empty one', '', 1700000001000, 1700000001000)"),
    QStringLiteral("INSERT INTO messages VALUES (1, 1, 'user', 'Grüße — what is a KV cache?', 1700000002000, 0)"),
    QStringLiteral("INSERT INTO messages VALUES (2, 1, 'assistant', 'Keys and values, kept.', 1700000003000, 1)"),
    QStringLiteral("INSERT INTO messages VALUES (3, 1, 'user', 'thanks', 1700000004000, 2)"),
    QStringLiteral("PRAGMA user_version=1"),
};

QDateTime utcMs(qint64 ms) { return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC); }

}  // namespace

class ChatStoreTest : public QObject {
  Q_OBJECT
 private slots:
  void createRenameDeleteList() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    QVERIFY2(store.is_open(), qPrintable(store.lastError()));
    QCOMPARE(store.schema_version(), ChatStore::kSchemaVersion);
    QVERIFY(store.list_conversations().empty());

    const qint64 a = store.create_conversation(QStringLiteral("first"));
    QTest::qWait(2);  // distinct updated_at
    const qint64 b = store.create_conversation(QStringLiteral("second"));
    QVERIFY(a >= 0 && b >= 0 && a != b);
    auto list = store.list_conversations();
    QCOMPARE(list.size(), size_t(2));
    QCOMPARE(list[0].id, b);  // most recently updated first
    QCOMPARE(list[1].title, QStringLiteral("first"));

    QTest::qWait(2);
    QVERIFY(store.rename_conversation(a, QStringLiteral("renamed")));
    list = store.list_conversations();
    QCOMPARE(list[0].id, a);
    QCOMPARE(list[0].title, QStringLiteral("renamed"));
    QVERIFY(!store.rename_conversation(9999, QStringLiteral("x")));
    QVERIFY(!store.lastError().isEmpty());

    QVERIFY(store.append_message(a, QStringLiteral("user"), QStringLiteral("hi")) >= 0);
    QVERIFY(store.delete_conversation(a));
    QVERIFY(store.lastError().isEmpty());
    QCOMPARE(store.list_conversations().size(), size_t(1));
    QVERIFY(store.messages(a).empty());  // its messages went with it
    QVERIFY(!store.delete_conversation(a));
  }

  // A reply that ends after a later turn was added completes its own
  // placeholder, not the last message.
  void updateAMessageByItsId() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    QVERIFY2(store.is_open(), qPrintable(store.lastError()));
    const qint64 a = store.create_conversation(QStringLiteral("chat"));
    const qint64 b = store.create_conversation(QStringLiteral("other"));
    store.append_message(a, QStringLiteral("user"), QStringLiteral("hello"));
    const qint64 reply = store.append_message(a, QStringLiteral("assistant"), QString());
    store.append_message(a, QStringLiteral("user"), QStringLiteral("and then?"));
    QVERIFY2(store.update_message(a, reply, QStringLiteral("Hi"), QStringLiteral("{}")), qPrintable(store.lastError()));
    const auto messages = store.messages(a);
    QCOMPARE(messages.size(), size_t(3));
    QCOMPARE(messages[1].content, QStringLiteral("Hi"));
    QCOMPARE(messages[2].content, QStringLiteral("and then?"));
    QVERIFY(!store.update_message(b, reply, QStringLiteral("not b's")));  // another conversation's message
    QVERIFY(store.lastError().contains(QStringLiteral("no message")));
    QCOMPARE(store.messages(a)[1].content, QStringLiteral("Hi"));
  }

  void appendAndUpdate() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    QVERIFY2(store.is_open(), qPrintable(store.lastError()));
    const qint64 a = store.create_conversation(QStringLiteral("chat"));
    QVERIFY(!store.update_last_message(a, QStringLiteral("nothing yet")));
    QVERIFY(store.append_message(a, QStringLiteral("user"), QStringLiteral("hello")) >= 0);
    QVERIFY(store.append_message(a, QStringLiteral("assistant"), QString()) >= 0);
    QVERIFY(store.update_last_message(a, QStringLiteral("Hi **there**")));
    const auto messages = store.messages(a);
    QCOMPARE(messages.size(), size_t(2));
    QCOMPARE(messages[0].role, QStringLiteral("user"));
    QCOMPARE(messages[0].content, QStringLiteral("hello"));
    QCOMPARE(messages[0].ordinal, 0);
    QCOMPARE(messages[1].role, QStringLiteral("assistant"));
    QCOMPARE(messages[1].content, QStringLiteral("Hi **there**"));
    QCOMPARE(messages[1].ordinal, 1);
    QVERIFY(store.append_message(12345, QStringLiteral("user"), QStringLiteral("orphan")) < 0);
    QVERIFY(!store.lastError().isEmpty());
  }

  void searchMatchesTitleAndContent() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    const qint64 paris = store.create_conversation(QStringLiteral("Trip to Paris"));
    const qint64 kv = store.create_conversation(QStringLiteral("KV cache"));
    const qint64 other = store.create_conversation(QStringLiteral("100% sure"));
    store.append_message(kv, QStringLiteral("user"), QStringLiteral("How does paged attention work?"));
    auto ids = [&](const QString& search) {
      QList<qint64> out;
      for (const auto& c : store.list_conversations(search)) out.push_back(c.id);
      std::sort(out.begin(), out.end());
      return out;
    };
    QCOMPARE(ids(QStringLiteral("paris")), QList<qint64>{paris});  // title, any case
    QCOMPARE(ids(QStringLiteral("PAGED")), QList<qint64>{kv});     // message content
    QCOMPARE(ids(QStringLiteral("%")), QList<qint64>{other});      // a literal %, not a wildcard
    QVERIFY(ids(QStringLiteral("nowhere")).isEmpty());
    QCOMPARE(ids(QString()).size(), 3);
  }

  void persistsAcrossReopen() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("sub/chats.sqlite"));  // folder made on open
    qint64 a = -1;
    {
      ChatStore store(path);
      QVERIFY2(store.is_open(), qPrintable(store.lastError()));
      a = store.create_conversation(QStringLiteral("kept"), QStringLiteral("be brief"));
      store.append_message(a, QStringLiteral("user"), QStringLiteral("one"));
      store.append_message(a, QStringLiteral("assistant"), QStringLiteral("two"));
      QVERIFY(store.create_conversation(QStringLiteral("also kept")) >= 0);
    }
    ChatStore again(path);
    QVERIFY2(again.is_open(), qPrintable(again.lastError()));
    const auto list = again.list_conversations();
    QCOMPARE(list.size(), size_t(2));
    const auto messages = again.messages(a);
    QCOMPARE(messages.size(), size_t(2));
    QCOMPARE(messages[1].content, QStringLiteral("two"));
    QVERIFY(again.append_message(a, QStringLiteral("user"), QStringLiteral("three")) >= 0);
    QCOMPARE(again.messages(a).back().ordinal, 2);
  }

  void migratesVersion1File() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    QCOMPARE(execRaw(path, kVersion1Ddl + kVersion1Rows), QString());
    {
      ChatStore store(path);
      QVERIFY2(store.is_open(), qPrintable(store.lastError()));
      QCOMPARE(store.schema_version(), 2);
      const auto list = store.list_conversations();
      QCOMPARE(list.size(), size_t(2));
      QCOMPARE(list[0].id, qint64(1));  // updated last
      QCOMPARE(list[0].title, QStringLiteral("Old chat"));
      QCOMPARE(list[0].system_prompt, QStringLiteral("be brief"));
      QCOMPARE(list[0].created_at, utcMs(1700000000000));
      QCOMPARE(list[0].updated_at, utcMs(1700000005000));
      QCOMPARE(list[1].title, QStringLiteral("Empty one"));
      QCOMPARE(store.conversation_settings(1), QString());
      QVERIFY2(store.lastError().isEmpty(), qPrintable(store.lastError()));

      const auto messages = store.messages(1);
      QCOMPARE(messages.size(), size_t(3));
      QCOMPARE(messages[0].content, QStringLiteral("Grüße — what is a KV cache?"));
      QCOMPARE(messages[0].created_at, utcMs(1700000002000));
      QCOMPARE(messages[1].role, QStringLiteral("assistant"));
      QCOMPARE(messages[1].content, QStringLiteral("Keys and values, kept."));
      QCOMPARE(messages[2].ordinal, 2);
      for (const auto& m : messages) {
        QVERIFY(m.stats_json.isEmpty());
        QVERIFY(m.alternatives.isEmpty());
        QCOMPARE(m.selected_alternative, 0);
      }
      // The new columns are writable on a migrated file.
      QVERIFY(store.set_conversation_settings(1, QStringLiteral("{\"temperature\":0.7}")));
      QVERIFY(store.append_message(1, QStringLiteral("assistant"), QString()) >= 0);
      QVERIFY2(store.update_last_message(1, QStringLiteral("b"), QStringLiteral("{\"num_tokens\":1}"),
                                         {QStringLiteral("a"), QStringLiteral("b")}, 1),
               qPrintable(store.lastError()));
    }
  }

  void migratedFileReopensAsVersion2() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    QCOMPARE(execRaw(path, kVersion1Ddl + kVersion1Rows), QString());
    {
      ChatStore first(path);
      QVERIFY2(first.is_open(), qPrintable(first.lastError()));
    }
    QCOMPARE(queryRaw(path, QStringLiteral("PRAGMA user_version")).toInt(), 2);
    ChatStore again(path);  // no second migration: it would fail on the existing columns
    QVERIFY2(again.is_open(), qPrintable(again.lastError()));
    QCOMPARE(again.messages(1).size(), size_t(3));
  }

  void failedMigrationLeavesVersion1File() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    // A messages table that already has `stats` makes the second ALTER fail
    // after the first one (conversations.settings) succeeded.
    const QString add_stats = QStringLiteral("ALTER TABLE messages ADD COLUMN stats TEXT");
    QCOMPARE(execRaw(path, kVersion1Ddl + kVersion1Rows + QStringList{add_stats}), QString());
    {
      ChatStore store(path);
      QVERIFY(!store.is_open());
      QVERIFY2(store.lastError().contains(QStringLiteral("schema 1 to 2")), qPrintable(store.lastError()));
    }
    QCOMPARE(queryRaw(path, QStringLiteral("PRAGMA user_version")).toInt(), 1);
    QCOMPARE(queryRaw(path,
                      QStringLiteral("SELECT COUNT(*) FROM pragma_table_info('conversations') WHERE name = 'settings'"))
                 .toInt(),
             0);  // the first ALTER was rolled back too
    QCOMPARE(queryRaw(path, QStringLiteral("SELECT COUNT(*) FROM messages")).toInt(), 3);
  }

  void settingsRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    const QString json = QStringLiteral("{\"temperature\":0.7,\"system_prompt\":\"Réponds en français \\\"vite\\\"\",\"n\":3}");
    qint64 a = -1;
    {
      ChatStore store(path);
      a = store.create_conversation(QStringLiteral("with settings"), QStringLiteral("sys"));
      QCOMPARE(store.conversation_settings(a), QString());
      QVERIFY(store.lastError().isEmpty());
      const QDateTime updated = store.conversation(a)->updated_at;
      QTest::qWait(2);
      QVERIFY2(store.set_conversation_settings(a, json), qPrintable(store.lastError()));
      QCOMPARE(store.conversation_settings(a), json);
      QCOMPARE(store.conversation(a)->updated_at, updated);  // settings alone do not reorder the list

      QVERIFY(!store.set_conversation_settings(a + 100, json));
      QVERIFY(store.lastError().contains(QStringLiteral("no conversation")));
      QVERIFY(store.conversation_settings(a + 100).isEmpty());
      QVERIFY(store.lastError().contains(QStringLiteral("no conversation")));
    }
    ChatStore again(path);
    QCOMPARE(again.conversation_settings(a), json);
    QVERIFY(again.set_conversation_settings(a, QString()));  // cleared
    QCOMPARE(again.conversation_settings(a), QString());
  }

  void conversationById() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    const qint64 a = store.create_conversation(QStringLiteral("one"), QStringLiteral("be kind"));
    const auto c = store.conversation(a);
    QVERIFY(c.has_value());
    QCOMPARE(c->id, a);
    QCOMPARE(c->title, QStringLiteral("one"));
    QCOMPARE(c->system_prompt, QStringLiteral("be kind"));
    QVERIFY(c->created_at.isValid());
    QCOMPARE(c->created_at, c->updated_at);
    QCOMPARE(c->updated_at.timeSpec(), Qt::UTC);
    QVERIFY(!store.conversation(a + 1).has_value());
    QVERIFY(store.lastError().contains(QStringLiteral("no conversation")));
  }

  void alternativesAndSelection() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    ChatStore store(path);
    const qint64 a = store.create_conversation(QStringLiteral("n=3"));
    QVERIFY(store.append_message(a, QStringLiteral("user"), QStringLiteral("name a colour")) >= 0);
    const qint64 reply = store.append_message(a, QStringLiteral("assistant"), QString());
    const QStringList alternatives = {QStringLiteral("red"), QStringLiteral("grün ```code```"),
                                      QStringLiteral("\"blue\"")};
    QVERIFY2(store.update_last_message(a, alternatives[1], QString(), alternatives, 1), qPrintable(store.lastError()));
    auto messages = store.messages(a);
    QCOMPARE(messages[1].alternatives, alternatives);
    QCOMPARE(messages[1].selected_alternative, 1);
    QCOMPARE(messages[1].content, alternatives[1]);
    QVERIFY(messages[0].alternatives.isEmpty());
    // Search finds a reply that was not picked, as the export shows it.
    QCOMPARE(store.list_conversations(QStringLiteral("red")).size(), size_t{1});
    QCOMPARE(store.list_conversations(QStringLiteral("grün")).size(), size_t{1});

    QTest::qWait(2);
    const QDateTime before = store.conversation(a)->updated_at;
    QVERIFY2(store.select_alternative(reply, 2), qPrintable(store.lastError()));
    messages = store.messages(a);
    QCOMPARE(messages[1].content, QStringLiteral("\"blue\""));
    QCOMPARE(messages[1].selected_alternative, 2);
    QCOMPARE(messages[1].alternatives, alternatives);
    QVERIFY(store.conversation(a)->updated_at > before);

    for (int bad : {3, -1}) {
      QVERIFY(!store.select_alternative(reply, bad));
      QVERIFY2(store.lastError().contains(QStringLiteral("3 alternatives")), qPrintable(store.lastError()));
    }
    QVERIFY(!store.select_alternative(messages[0].id, 0));  // a message without alternatives
    QVERIFY(store.lastError().contains(QStringLiteral("no alternatives")));
    QVERIFY(!store.select_alternative(reply + 100, 0));
    QVERIFY(store.lastError().contains(QStringLiteral("no message")));
    QCOMPARE(store.messages(a)[1].content, QStringLiteral("\"blue\""));  // the failures changed nothing

    // Inconsistent arguments are refused before anything is written.
    QVERIFY(!store.update_last_message(a, QStringLiteral("not one of them"), QString(), alternatives, 0));
    QVERIFY(store.lastError().contains(QStringLiteral("differs")));
    QVERIFY(!store.update_last_message(a, alternatives[0], QString(), alternatives, 3));
    QVERIFY(!store.lastError().isEmpty());
    QVERIFY(!store.update_last_message(a, QStringLiteral("x"), QString(), {}, 1));
    QVERIFY(!store.lastError().isEmpty());
    QCOMPARE(store.messages(a)[1].selected_alternative, 2);

    ChatStore again(path);  // persisted
    QCOMPARE(again.messages(a)[1].alternatives, alternatives);
    QCOMPARE(again.messages(a)[1].selected_alternative, 2);
    // A plain update replaces the whole reply: no alternatives left.
    QVERIFY(again.update_last_message(a, QStringLiteral("just one")));
    QVERIFY(again.messages(a)[1].alternatives.isEmpty());
    QCOMPARE(again.messages(a)[1].selected_alternative, 0);
  }

  void statsRoundTrip() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    const qint64 a = store.create_conversation(QStringLiteral("stats"));
    QVERIFY(store.append_message(a, QStringLiteral("assistant"), QString()) >= 0);
    const QString stats =
        QStringLiteral("{\"num_tokens\":42,\"ttft_ms\":118.5,\"tokens_per_s\":53.2,\"prefix_hit_tokens\":16,\"note\":\"ü\"}");
    QVERIFY(store.update_last_message(a, QStringLiteral("done"), stats));
    const auto messages = store.messages(a);
    QCOMPARE(messages[0].stats_json, stats);
    QCOMPARE(messages[0].content, QStringLiteral("done"));
    QVERIFY(store.update_last_message(a, QStringLiteral("again")));  // stats replaced too
    QCOMPARE(store.messages(a)[0].stats_json, QString());
  }

  void truncateConversation() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    const qint64 a = store.create_conversation(QStringLiteral("five turns"));
    const qint64 other = store.create_conversation(QStringLiteral("untouched"));
    for (int i = 0; i < 5; ++i)
      QVERIFY(store.append_message(a, i % 2 ? QStringLiteral("assistant") : QStringLiteral("user"),
                                   QString::number(i)) >= 0);
    QVERIFY(store.append_message(other, QStringLiteral("user"), QStringLiteral("keep me")) >= 0);

    QTest::qWait(2);
    const QDateTime before = store.conversation(a)->updated_at;
    QVERIFY2(store.truncate_conversation(a, 2), qPrintable(store.lastError()));  // edit turn 2 and resend
    auto messages = store.messages(a);
    QCOMPARE(messages.size(), size_t(2));
    QCOMPARE(messages[1].content, QStringLiteral("1"));
    QVERIFY(store.conversation(a)->updated_at > before);
    QVERIFY(store.append_message(a, QStringLiteral("user"), QStringLiteral("edited")) >= 0);
    QCOMPARE(store.messages(a).back().ordinal, 2);  // ordinals continue without a gap

    QTest::qWait(2);
    const QDateTime unchanged = store.conversation(a)->updated_at;
    QVERIFY(store.truncate_conversation(a, 10));  // past the end: nothing to delete
    QCOMPARE(store.messages(a).size(), size_t(3));
    QCOMPARE(store.conversation(a)->updated_at, unchanged);
    QVERIFY(store.truncate_conversation(a, 3));  // exactly at the end
    QCOMPARE(store.messages(a).size(), size_t(3));

    QVERIFY(store.truncate_conversation(a, 0));
    QVERIFY(store.messages(a).empty());
    QVERIFY(store.conversation(a).has_value());  // the conversation itself stays
    QCOMPARE(store.messages(other).size(), size_t(1));

    QVERIFY(!store.truncate_conversation(a, -1));
    QVERIFY(!store.lastError().isEmpty());
    QVERIFY(!store.truncate_conversation(other + 100, 0));
    QVERIFY(store.lastError().contains(QStringLiteral("no conversation")));
  }

  void walIsOn() {
    QTemporaryDir dir;
    ChatStore store(dir.filePath(QStringLiteral("chats.sqlite")));
    QCOMPARE(store.journal_mode(), QStringLiteral("wal"));
  }

  void twoStoresOnOneFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    ChatStore one(path);
    ChatStore two(path);  // its own connection
    QVERIFY(one.is_open() && two.is_open());
    const qint64 a = one.create_conversation(QStringLiteral("shared"));
    QCOMPARE(two.list_conversations().size(), size_t(1));
    QVERIFY(two.append_message(a, QStringLiteral("user"), QStringLiteral("x")) >= 0);
    QCOMPARE(one.messages(a).size(), size_t(1));
  }

  void directoryGivesAnError() {
    QTemporaryDir dir;
    ChatStore store(dir.path());
    QVERIFY(!store.is_open());
    QVERIFY(!store.lastError().isEmpty());
    QCOMPARE(store.create_conversation(QStringLiteral("x")), qint64(-1));
    QVERIFY(store.lastError().contains(QStringLiteral("not open")));
    QVERIFY(store.list_conversations().empty());
    QVERIFY(store.messages(1).empty());
    QVERIFY(store.append_message(1, QStringLiteral("user"), QStringLiteral("x")) < 0);
    QVERIFY(!store.update_last_message(1, QStringLiteral("x")));
    QVERIFY(!store.rename_conversation(1, QStringLiteral("x")));
    QVERIFY(!store.delete_conversation(1));
    QVERIFY(!store.update_last_message(1, QStringLiteral("a"), QStringLiteral("{}"), {QStringLiteral("a")}, 0));
    QVERIFY(!store.select_alternative(1, 0));
    QVERIFY(!store.truncate_conversation(1, 0));
    QVERIFY(!store.set_conversation_settings(1, QStringLiteral("{}")));
    QVERIFY(store.conversation_settings(1).isEmpty());
    QVERIFY(store.lastError().contains(QStringLiteral("not open")));
    QVERIFY(!store.conversation(1).has_value());
    QVERIFY(store.lastError().contains(QStringLiteral("not open")));
  }

  void corruptFileGivesAnError() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QByteArray(8192, 'x'));
    file.close();
    ChatStore store(path);
    QVERIFY(!store.is_open());
    QVERIFY2(!store.lastError().isEmpty(), "no error for a corrupt file");
    QVERIFY(store.list_conversations().empty());
  }

  void newerSchemaIsRefused() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chats.sqlite"));
    {
      QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("newer"));
      db.setDatabaseName(path);
      QVERIFY(db.open());
      QSqlQuery q(db);
      QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=99")));
      q.finish();
      db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("newer"));
    ChatStore store(path);
    QVERIFY(!store.is_open());
    QVERIFY(store.lastError().contains(QStringLiteral("newer")));
  }
};

QTEST_GUILESS_MAIN(ChatStoreTest)
#include "chat_store_test.moc"
