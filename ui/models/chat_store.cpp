// ChatStore (see chat_store.h).
#include "models/chat_store.h"

#include <atomic>
#include <span>

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
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

QString sqlError(const QSqlQuery& q) {
  const QString text = q.lastError().text();
  return text.isEmpty() ? QStringLiteral("unknown SQLite error") : text;
}

// NOT NULL columns get '' rather than a null QString (which binds as NULL).
QString orEmpty(const QString& text) { return text.isNull() ? QStringLiteral("") : text; }

// `%text%` with LIKE's wildcards in `text` taken literally (ESCAPE '\').
QString likePattern(const QString& text) {
  QString escaped = text;
  escaped.replace(QLatin1Char('\\'), QLatin1String("\\\\"));
  escaped.replace(QLatin1Char('%'), QLatin1String("\\%"));
  escaped.replace(QLatin1Char('_'), QLatin1String("\\_"));
  return QLatin1Char('%') + escaped + QLatin1Char('%');
}

// Alternatives are kept as one JSON array of strings; '' when there are none.
QString encodeAlternatives(const QStringList& alternatives) {
  if (alternatives.isEmpty()) return QStringLiteral("");
  return QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(alternatives)).toJson(QJsonDocument::Compact));
}

// Anything but a JSON array (a hand-edited file) reads as no alternatives.
QStringList decodeAlternatives(const QString& text) {
  QStringList out;
  if (text.isEmpty()) return out;
  const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8());
  for (const QJsonValue& v : doc.array()) out.push_back(v.toString());
  return out;
}

// Runs `body(query)`, which returns an error message (empty on success), in
// one transaction: committed on success, rolled back otherwise. Returns the
// error, empty on success.
template <typename Body>
QString inTransaction(QSqlDatabase db, Body body) {
  if (!db.transaction()) return db.lastError().text();
  QString error;
  {
    QSqlQuery q(db);
    error = body(q);
    q.finish();
  }  // SQLite cannot commit while a statement is still active
  if (error.isEmpty() && !db.commit()) error = db.lastError().text();
  if (!error.isEmpty()) db.rollback();
  return error;
}

QString execAll(QSqlQuery& q, std::span<const char* const> statements) {
  for (const char* statement : statements)
    if (!q.exec(QString::fromLatin1(statement))) return sqlError(q);
  return {};
}

// A new file gets schema 2 at once.
const char* const kSchema[] = {
    "CREATE TABLE IF NOT EXISTS conversations ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " title TEXT NOT NULL,"
    " system_prompt TEXT NOT NULL DEFAULT '',"
    " created_at INTEGER NOT NULL,"   // ms since the epoch, UTC
    " updated_at INTEGER NOT NULL,"   // ditto
    " settings TEXT NOT NULL DEFAULT '')",  // opaque JSON from the app
    "CREATE TABLE IF NOT EXISTS messages ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    " role TEXT NOT NULL,"
    " content TEXT NOT NULL,"  // the selected alternative when there are some
    " created_at INTEGER NOT NULL,"
    " ordinal INTEGER NOT NULL,"
    " stats TEXT NOT NULL DEFAULT '',"         // opaque JSON from the app
    " alternatives TEXT NOT NULL DEFAULT '',"  // JSON array of strings, '' = none
    " selected_alternative INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (conversation_id, ordinal))",
    "CREATE INDEX IF NOT EXISTS conversations_updated ON conversations(updated_at)",
};

// Schema 1 -> 2: columns added with defaults, so every row stays as it was.
const char* const kMigrateFrom1[] = {
    "ALTER TABLE conversations ADD COLUMN settings TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE messages ADD COLUMN stats TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE messages ADD COLUMN alternatives TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE messages ADD COLUMN selected_alternative INTEGER NOT NULL DEFAULT 0",
};

QString bumpUpdatedAt(QSqlQuery& q, qint64 conversation_id) {
  q.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
  q.addBindValue(nowMs());
  q.addBindValue(conversation_id);
  if (!q.exec()) return sqlError(q);
  if (q.numRowsAffected() != 1) return QStringLiteral("no conversation %1").arg(conversation_id);
  return {};
}

// The columns readSummary() expects, in its order.
const char* const kSummaryColumns = "id, title, updated_at, created_at, system_prompt";

ConversationSummary readSummary(const QSqlQuery& q) {
  return {q.value(0).toLongLong(), q.value(1).toString(), fromMs(q.value(2)), fromMs(q.value(3)), q.value(4).toString()};
}

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
  if (version < 0) return close(QStringLiteral("schema version %1 is not one kvscope writes").arg(version));
  if (!q.exec(QStringLiteral("PRAGMA journal_mode=WAL")) || !q.next()) return close(sqlError(q));
  if (!q.exec(QStringLiteral("PRAGMA foreign_keys=ON"))) return close(sqlError(q));
  q.finish();
  const QString error = inTransaction(db, [&](QSqlQuery& t) -> QString {
    if (version == 0) {
      if (QString create_error = execAll(t, kSchema); !create_error.isEmpty()) return create_error;
    } else if (version == 1) {
      if (QString migrate_error = execAll(t, kMigrateFrom1); !migrate_error.isEmpty())
        return QStringLiteral("updating schema 1 to 2: %1").arg(migrate_error);
    }
    // Always written, so a read-only file is found now rather than at the first message.
    if (!t.exec(QStringLiteral("PRAGMA user_version=%1").arg(kSchemaVersion))) return sqlError(t);
    return {};
  });
  if (!error.isEmpty()) return close(error);
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
  q.addBindValue(orEmpty(system_prompt));
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
  const QString error = inTransaction(QSqlDatabase::database(connection_), [&](QSqlQuery& q) -> QString {
    q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ?"));
    q.addBindValue(id);
    if (!q.exec()) return sqlError(q);
    q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
    q.addBindValue(id);
    if (!q.exec()) return sqlError(q);
    if (q.numRowsAffected() != 1) return QStringLiteral("no conversation %1").arg(id);
    return {};
  });
  return error.isEmpty() || fail(error);
}

std::vector<ConversationSummary> ChatStore::list_conversations(const QString& search) {
  std::vector<ConversationSummary> out;
  if (!require_open()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.setForwardOnly(true);
  if (search.isEmpty()) {
    q.prepare(QStringLiteral("SELECT %1 FROM conversations ORDER BY updated_at DESC, id DESC")
                  .arg(QLatin1String(kSummaryColumns)));
  } else {
    q.prepare(QStringLiteral(
                  "SELECT %1 FROM conversations c"
                  " WHERE c.title LIKE ? ESCAPE '\\'"
                  " OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id"
                  " AND (m.content LIKE ? ESCAPE '\\' OR m.alternatives LIKE ? ESCAPE '\\'))"
                  " ORDER BY c.updated_at DESC, c.id DESC")
                  .arg(QLatin1String(kSummaryColumns)));
    // The replies not picked (n > 1) are searched in their stored JSON, where
    // a quote, a backslash or a line break is escaped: text with one of those
    // is found in the picked reply only.
    const QString pattern = likePattern(search);
    q.addBindValue(pattern);
    q.addBindValue(pattern);
    q.addBindValue(pattern);
  }
  if (!q.exec()) {
    fail(sqlError(q));
    return out;
  }
  while (q.next()) out.push_back(readSummary(q));
  return out;
}

std::optional<ConversationSummary> ChatStore::conversation(qint64 id) {
  if (!require_open()) return std::nullopt;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("SELECT %1 FROM conversations WHERE id = ?").arg(QLatin1String(kSummaryColumns)));
  q.addBindValue(id);
  if (!q.exec()) {
    fail(sqlError(q));
    return std::nullopt;
  }
  if (!q.next()) {
    fail(QStringLiteral("no conversation %1").arg(id));
    return std::nullopt;
  }
  return readSummary(q);
}

QString ChatStore::conversation_settings(qint64 id) {
  if (!require_open()) return {};
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("SELECT settings FROM conversations WHERE id = ?"));
  q.addBindValue(id);
  if (!q.exec()) {
    fail(sqlError(q));
    return {};
  }
  if (!q.next()) {
    fail(QStringLiteral("no conversation %1").arg(id));
    return {};
  }
  return q.value(0).toString();
}

bool ChatStore::set_conversation_settings(qint64 id, const QString& json) {
  if (!require_open()) return false;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare(QStringLiteral("UPDATE conversations SET settings = ? WHERE id = ?"));
  q.addBindValue(orEmpty(json));
  q.addBindValue(id);
  if (!q.exec()) return fail(sqlError(q));
  if (q.numRowsAffected() != 1) return fail(QStringLiteral("no conversation %1").arg(id));
  return true;
}

std::vector<StoredMessage> ChatStore::messages(qint64 conversation_id) {
  std::vector<StoredMessage> out;
  if (!require_open()) return out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.setForwardOnly(true);
  q.prepare(QStringLiteral(
      "SELECT id, role, content, created_at, ordinal, stats, alternatives, selected_alternative"
      " FROM messages WHERE conversation_id = ? ORDER BY ordinal"));
  q.addBindValue(conversation_id);
  if (!q.exec()) {
    fail(sqlError(q));
    return out;
  }
  while (q.next()) {
    StoredMessage m;
    m.id = q.value(0).toLongLong();
    m.role = q.value(1).toString();
    m.content = q.value(2).toString();
    m.created_at = fromMs(q.value(3));
    m.ordinal = q.value(4).toInt();
    m.stats_json = q.value(5).toString();
    m.alternatives = decodeAlternatives(q.value(6).toString());
    m.selected_alternative = m.alternatives.isEmpty() ? 0 : q.value(7).toInt();
    out.push_back(std::move(m));
  }
  return out;
}

qint64 ChatStore::append_message(qint64 conversation_id, const QString& role, const QString& content) {
  if (!require_open()) return -1;
  qint64 id = -1;
  const QString error = inTransaction(QSqlDatabase::database(connection_), [&](QSqlQuery& q) -> QString {
    if (QString bump_error = bumpUpdatedAt(q, conversation_id); !bump_error.isEmpty()) return bump_error;
    q.prepare(QStringLiteral(
        "INSERT INTO messages (conversation_id, role, content, created_at, ordinal)"
        " VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(ordinal) + 1, 0) FROM messages WHERE conversation_id = ?))"));
    q.addBindValue(conversation_id);
    q.addBindValue(role);
    q.addBindValue(orEmpty(content));
    q.addBindValue(nowMs());
    q.addBindValue(conversation_id);
    if (!q.exec()) return sqlError(q);
    id = q.lastInsertId().toLongLong();
    return {};
  });
  if (!error.isEmpty()) {
    fail(error);
    return -1;
  }
  return id;
}

bool ChatStore::update_last_message(qint64 conversation_id, const QString& content, const QString& stats_json,
                                    const QStringList& alternatives, int selected) {
  return update_message(conversation_id, -1, content, stats_json, alternatives, selected);
}

bool ChatStore::update_message(qint64 conversation_id, qint64 message_id, const QString& content,
                               const QString& stats_json, const QStringList& alternatives, int selected) {
  if (!require_open()) return false;
  // Checked before writing, so that content always is the selected alternative.
  if (alternatives.isEmpty() && selected != 0)
    return fail(QStringLiteral("alternative %1 selected, but no alternatives given").arg(selected));
  if (!alternatives.isEmpty()) {
    if (selected < 0 || selected >= alternatives.size())
      return fail(QStringLiteral("alternative %1 selected, but there are %2 (0 to %3)")
                      .arg(selected)
                      .arg(alternatives.size())
                      .arg(alternatives.size() - 1));
    if (content != alternatives[selected])
      return fail(QStringLiteral("the content differs from the selected alternative %1").arg(selected));
  }
  const QString error = inTransaction(QSqlDatabase::database(connection_), [&](QSqlQuery& q) -> QString {
    // message_id < 0: the conversation's last message.
    q.prepare(message_id < 0
                  ? QStringLiteral("UPDATE messages SET content = ?, stats = ?, alternatives = ?, selected_alternative = ?"
                                   " WHERE id = (SELECT id FROM messages WHERE conversation_id = ?"
                                   " ORDER BY ordinal DESC LIMIT 1)")
                  : QStringLiteral("UPDATE messages SET content = ?, stats = ?, alternatives = ?, selected_alternative = ?"
                                   " WHERE conversation_id = ? AND id = ?"));
    q.addBindValue(orEmpty(content));
    q.addBindValue(orEmpty(stats_json));
    q.addBindValue(encodeAlternatives(alternatives));
    q.addBindValue(selected);
    q.addBindValue(conversation_id);
    if (message_id >= 0) q.addBindValue(message_id);
    if (!q.exec()) return sqlError(q);
    if (q.numRowsAffected() != 1) {
      return message_id < 0 ? QStringLiteral("conversation %1 has no message").arg(conversation_id)
                            : QStringLiteral("conversation %1 has no message %2").arg(conversation_id).arg(message_id);
    }
    return bumpUpdatedAt(q, conversation_id);
  });
  return error.isEmpty() || fail(error);
}

bool ChatStore::select_alternative(qint64 message_id, int index) {
  if (!require_open()) return false;
  const QString error = inTransaction(QSqlDatabase::database(connection_), [&](QSqlQuery& q) -> QString {
    q.prepare(QStringLiteral("SELECT conversation_id, alternatives FROM messages WHERE id = ?"));
    q.addBindValue(message_id);
    if (!q.exec()) return sqlError(q);
    if (!q.next()) return QStringLiteral("no message %1").arg(message_id);
    const qint64 conversation_id = q.value(0).toLongLong();
    const QStringList alternatives = decodeAlternatives(q.value(1).toString());
    q.finish();
    if (alternatives.isEmpty()) return QStringLiteral("message %1 has no alternatives").arg(message_id);
    if (index < 0 || index >= alternatives.size())
      return QStringLiteral("message %1 has %2 alternatives (0 to %3), not %4")
          .arg(message_id)
          .arg(alternatives.size())
          .arg(alternatives.size() - 1)
          .arg(index);
    q.prepare(QStringLiteral("UPDATE messages SET content = ?, selected_alternative = ? WHERE id = ?"));
    q.addBindValue(orEmpty(alternatives[index]));
    q.addBindValue(index);
    q.addBindValue(message_id);
    if (!q.exec()) return sqlError(q);
    return bumpUpdatedAt(q, conversation_id);
  });
  return error.isEmpty() || fail(error);
}

bool ChatStore::truncate_conversation(qint64 conversation_id, int from_ordinal) {
  if (!require_open()) return false;
  if (from_ordinal < 0) return fail(QStringLiteral("cannot truncate at ordinal %1 (< 0)").arg(from_ordinal));
  const QString error = inTransaction(QSqlDatabase::database(connection_), [&](QSqlQuery& q) -> QString {
    q.prepare(QStringLiteral("SELECT 1 FROM conversations WHERE id = ?"));
    q.addBindValue(conversation_id);
    if (!q.exec()) return sqlError(q);
    if (!q.next()) return QStringLiteral("no conversation %1").arg(conversation_id);
    q.finish();
    q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND ordinal >= ?"));
    q.addBindValue(conversation_id);
    q.addBindValue(from_ordinal);
    if (!q.exec()) return sqlError(q);
    if (q.numRowsAffected() == 0) return {};  // nothing changed
    return bumpUpdatedAt(q, conversation_id);
  });
  return error.isEmpty() || fail(error);
}

}  // namespace kvscope::ui
