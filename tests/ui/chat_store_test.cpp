// ChatStore on files in a temporary folder: create / rename / delete / list /
// search / append / update; everything is there after reopening the file; WAL
// is on; a directory, a corrupt file or a newer schema give an error, not a
// crash. Offscreen.
//   ctest --test-dir build-gui -R chat_store_test
#include <QFile>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "models/chat_store.h"

using kvscope::ui::ChatStore;

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
