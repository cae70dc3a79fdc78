// ChatStore (see chat_store.h).
#include "models/chat_store.h"

#include <atomic>

#include <QDir>
#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QVariant>

namespace kvscope::ui {
namespace {

std::atomic<int> g_num_connections{0};

qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }

QDateTime fromMs(const QVariant& v) { return QDateTime::fromMSecsSinceEpoch(v.toLongLong(), Qt::UTC); }

QString sqlError(const QSqlQuery& q) { return q.lastError().text(); }

// `%text%` with LIKE's wildcards in `text` taken literally (ESCAPE '\').
QString likePattern(const QString& text) {
  QString escaped = text;
  escaped.replace(QLatin1Char('\\'), QLatin1String("\\\\"));
  escaped.replace(QLatin1Char('%'), QLatin1String("\\%"));
  escaped.replace(QLatin1Char('_'), QLatin1String("\\_"));
  return QLatin1Char('%') + escaped + QLatin1Char('%');
}

const char* const kSchema[] = {
    "CREATE TABLE IF NOT EXISTS conversations ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " title TEXT NOT NULL,"
    " system_prompt TEXT NOT NULL DEFAULT '',"
    " created_at INTEGER NOT NULL,"   // ms since the epoch, UTC
    " updated_at INTEGER NOT NULL)",  // ditto
    "CREATE TABLE IF NOT EXISTS messages ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    " role TEXT NOT NULL,"
    " content TEXT NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " ordinal INTEGER NOT NULL,"
    " UNIQUE (conversation_id, ordinal))",
    "CREATE INDEX IF NOT EXISTS conversations_updated ON conversations(updated_at)",
};

}  // namespace

ChatStore::ChatStore(const QString& path)
    : path_(path.isEmpty() ? defaultPath() : path),
      connection_(QStringLiteral("kvscope_chat_store_%1").arg(g_num_connections.fetch_add(1))) {
  open_ = open_database();
}

ChatStore::~ChatStore() {
  {
    QSqlDatabase db = QSqlDatabase::database(connection_, false);
    if (db.isOpen()) db.close();
  }  // the last handle must be gone before removeDatabase
  QSqlDatabase::removeDatabase(connection_);
}

QString ChatStore::defaultPath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/chats.sqlite");
}

bool ChatStore::fail(const QString& message) {
  last_error_ = message;
  return false;
}

bool ChatStore::require_open() {
  if (open_) {
    last_error_.clear();
    return true;
  }
  if (!last_error_.startsWith(QLatin1String("chat store is not open")))
    last_error_ = QStringLiteral("chat store is not open: %1").arg(last_error_);
  return false;
}

bool ChatStore::open_database() {
  QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
  if (!db.isValid()) return fail(QStringLiteral("the Qt SQLite driver (QSQLITE) is not available"));
  const QFileInfo info(path_);
  if (info.isDir()) return fail(QStringLiteral("%1 is a directory, not a database file").arg(path_));
  if (!QDir().mkpath(info.absolutePath()))
    return fail(QStringLiteral("cannot create the folder %1").arg(info.absolutePath()));
  db.setDatabaseName(path_);
  db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=2000"));
  if (!db.open()) return fail(QStringLiteral("cannot open %1: %2").arg(path_, db.lastError().text()));

  auto close = [&](const QString& message) {
    db.close();
    return fail(QStringLiteral("%1: %2").arg(path_, message));
  };
  QSqlQuery q(db);
  // The first statement reads the file: a corrupt one fails here.
  if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) return close(sqlError(q));
  const int version = q.value(0).toInt();
  if (version > kSchemaVersion)
    return close(QStringLiteral("schema version %1 is newer than this kvscope's (%2)").arg(version).arg(kSchemaVersion));
  if (!q.exec(QStringLiteral("PRAGMA journal_mode=WAL")) || !q.next()) return close(sqlError(q));
  if (!q.exec(QStringLiteral("PRAGMA foreign_keys=ON"))) return close(sqlError(q));
  q.finish();
  if (!db.transaction()) return close(db.lastError().text());
  for (const char* statement : kSchema) {
    if (!q.exec(QString::fromLatin1(statement))) {
      const QString error = sqlError(q);
      q.finish();
      db.rollback();
      return close(error);
    }
  }
  // Always written, so a read-only file is found now rather than at the first message.
  if (!q.exec(QStringLiteral("PRAGMA user_version=%1").arg(kSchemaVersion))) {
    const QString error = sqlError(q);
    q.finish();
    db.rollback();
    return close(error);
  }
  q.finish();
  if (!db.commit()) {
    const QString error = db.lastError().text();
    db.rollback();
    return close(error);
  }
  last_error_.clear();
  return true;
}

QString ChatStore::journal_mode() {
  if (!require_open()) return {};
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec(QStringLiteral("PRAGMA journal_mode")) || !q.next()) {
    fail(sqlError(q));
    return {};
  }
  return q.value(0).toString().toLower();
}

int ChatStore::schema_version() {
  if (!require_open()) return -1;
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) {
    fail(sqlError(q));
    return -1;
  }
  return q.value(0).toInt();
}

qint64 ChatStore::create_conversation(const QString& title, const QString& system_prompt) {
  if (!require_open()) return -1;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral(
      "INSERT INTO conversations (title, system_prompt, created_at, updated_at) VALUES (?, ?, ?, ?)"));
  const qint64 now = nowMs();
  q.addBindValue(title);
  q.addBindValue(system_prompt.isNull() ? QStringLiteral("") : system_prompt);
  q.addBindValue(now);
  q.addBindValue(now);
  if (!q.exec()) {
    fail(sqlError(q));
    return -1;
  }
  return q.lastInsertId().toLongLong();
}

bool ChatStore::rename_conversation(qint64 id, const QString& title) {
  if (!require_open()) return false;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("UPDATE conversations SET title = ?, updated_at = ? WHERE id = ?"));
  q.addBindValue(title);
  q.addBindValue(nowMs());
  q.addBindValue(id);
  if (!q.exec()) return fail(sqlError(q));
  if (q.numRowsAffected() != 1) return fail(QStringLiteral("no conversation %1").arg(id));
  return true;
}

bool ChatStore::delete_conversation(qint64 id) {
  if (!require_open()) return false;
  QSqlDatabase db = QSqlDatabase::database(connection_);
  if (!db.transaction()) return fail(db.lastError().text());
  {
    QSqlQuery q(db);
    q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ?"));
    q.addBindValue(id);
    bool ok = q.exec();
    int num_deleted = 0;
    if (ok) {
      q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
      q.addBindValue(id);
      ok = q.exec();
      num_deleted = ok ? q.numRowsAffected() : 0;
    }
    const QString error = ok ? QStringLiteral("no conversation %1").arg(id) : sqlError(q);
    q.finish();
    if (!ok || num_deleted != 1) {
      db.rollback();
      return fail(error);
    }
  }
  if (!db.commit()) {
    const QString error = db.lastError().text();
    db.rollback();
    return fail(error);
  }
  return true;
}

std::vector<ConversationSummary> ChatStore::list_conversations(const QString& search) {
  std::vector<ConversationSummary> out;
  if (!require_open()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.setForwardOnly(true);
  if (search.isEmpty()) {
    q.prepare(QStringLiteral("SELECT id, title, updated_at FROM conversations ORDER BY updated_at DESC, id DESC"));
  } else {
    q.prepare(QStringLiteral(
        "SELECT c.id, c.title, c.updated_at FROM conversations c"
        " WHERE c.title LIKE ? ESCAPE '\\'"
        " OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.content LIKE ? ESCAPE '\\')"
        " ORDER BY c.updated_at DESC, c.id DESC"));
    const QString pattern = likePattern(search);
    q.addBindValue(pattern);
    q.addBindValue(pattern);
  }
  if (!q.exec()) {
    fail(sqlError(q));
    return out;
  }
  while (q.next()) out.push_back({q.value(0).toLongLong(), q.value(1).toString(), fromMs(q.value(2))});
  return out;
}

std::vector<StoredMessage> ChatStore::messages(qint64 conversation_id) {
  std::vector<StoredMessage> out;
  if (!require_open()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.setForwardOnly(true);
  q.prepare(QStringLiteral(
      "SELECT id, role, content, created_at, ordinal FROM messages WHERE conversation_id = ? ORDER BY ordinal"));
  q.addBindValue(conversation_id);
  if (!q.exec()) {
    fail(sqlError(q));
    return out;
  }
  while (q.next()) {
    out.push_back({q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toString(), fromMs(q.value(3)),
                   q.value(4).toInt()});
  }
  return out;
}

qint64 ChatStore::append_message(qint64 conversation_id, const QString& role, const QString& content) {
  if (!require_open()) return -1;
  QSqlDatabase db = QSqlDatabase::database(connection_);
  if (!db.transaction()) {
    fail(db.lastError().text());
    return -1;
  }
  qint64 id = -1;
  QString error;
  {
    QSqlQuery q(db);
    const qint64 now = nowMs();
    q.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
    q.addBindValue(now);
    q.addBindValue(conversation_id);
    if (!q.exec()) {
      error = sqlError(q);
    } else if (q.numRowsAffected() != 1) {
      error = QStringLiteral("no conversation %1").arg(conversation_id);
    } else {
      q.prepare(QStringLiteral(
          "INSERT INTO messages (conversation_id, role, content, created_at, ordinal)"
          " VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(ordinal) + 1, 0) FROM messages WHERE conversation_id = ?))"));
      q.addBindValue(conversation_id);
      q.addBindValue(role);
      q.addBindValue(content.isNull() ? QStringLiteral("") : content);
      q.addBindValue(now);
      q.addBindValue(conversation_id);
      if (q.exec()) {
        id = q.lastInsertId().toLongLong();
      } else {
        error = sqlError(q);
      }
    }
    q.finish();
  }
  if (id < 0 || !db.commit()) {
    if (id >= 0) error = db.lastError().text();
    db.rollback();
    fail(error);
    return -1;
  }
  return id;
}

bool ChatStore::update_last_message(qint64 conversation_id, const QString& content) {
  if (!require_open()) return false;
  QSqlDatabase db = QSqlDatabase::database(connection_);
  if (!db.transaction()) return fail(db.lastError().text());
  QString error;
  {
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "UPDATE messages SET content = ? WHERE id ="
        " (SELECT id FROM messages WHERE conversation_id = ? ORDER BY ordinal DESC LIMIT 1)"));
    q.addBindValue(content.isNull() ? QStringLiteral("") : content);
    q.addBindValue(conversation_id);
    if (!q.exec()) {
      error = sqlError(q);
    } else if (q.numRowsAffected() != 1) {
      error = QStringLiteral("conversation %1 has no message").arg(conversation_id);
    } else {
      q.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
      q.addBindValue(nowMs());
      q.addBindValue(conversation_id);
      if (!q.exec()) error = sqlError(q);
    }
    q.finish();
  }
  if (!error.isEmpty()) {
    db.rollback();
    return fail(error);
  }
  if (!db.commit()) {
    error = db.lastError().text();
    db.rollback();
    return fail(error);
  }
  return true;
}

}  // namespace kvscope::ui
