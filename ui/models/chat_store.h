// ChatStore: conversations and their messages in one SQLite file (Qt Sql, no
// widgets). Default file: QStandardPaths::AppDataLocation + "/chats.sqlite".
//
// Each instance opens its own named QSqlDatabase connection, turns WAL on and
// creates the schema if missing (PRAGMA user_version holds its version). Every
// mutator is one transaction, so a crash loses nothing that was committed.
// Nothing throws or asserts on bad files: a store that cannot open (corrupt,
// unwritable, a directory, a newer schema) reports is_open() == false, every
// call then fails, and lastError() says why; the app carries on without it.
// Single-threaded: use an instance from the thread that created it.
#pragma once

#include <vector>

#include <QDateTime>
#include <QString>

namespace kvscope::ui {

struct ConversationSummary {
  qint64 id = -1;
  QString title;
  QDateTime updated_at;  // UTC
};

struct StoredMessage {
  qint64 id = -1;
  QString role;  // "system", "user" or "assistant"
  QString content;
  QDateTime created_at;  // UTC
  int ordinal = 0;       // 0, 1, 2, ... within its conversation
};

class ChatStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens (creating if needed) `path`; empty means defaultPath().
  explicit ChatStore(const QString& path = QString());
  ~ChatStore();
  ChatStore(const ChatStore&) = delete;
  ChatStore& operator=(const ChatStore&) = delete;

  static QString defaultPath();

  bool is_open() const { return open_; }
  const QString& path() const { return path_; }
  // Why the last call failed (empty after a success).
  const QString& lastError() const { return last_error_; }
  // The journal mode SQLite reports ("wal" once open); empty on failure.
  QString journal_mode();
  // PRAGMA user_version; -1 on failure.
  int schema_version();

  // The new conversation's id, or -1.
  qint64 create_conversation(const QString& title, const QString& system_prompt = QString());
  bool rename_conversation(qint64 id, const QString& title);
  // Deletes the conversation and its messages.
  bool delete_conversation(qint64 id);
  // Most recently updated first. A non-empty `search` keeps conversations whose
  // title or any message content contains it (LIKE, case-insensitive for ASCII).
  std::vector<ConversationSummary> list_conversations(const QString& search = QString());
  std::vector<StoredMessage> messages(qint64 conversation_id);
  // Appends at the next ordinal and bumps the conversation's updated_at. The
  // new message's id, or -1 (e.g. no such conversation).
  qint64 append_message(qint64 conversation_id, const QString& role, const QString& content);
  // Replaces the content of the conversation's last message (a streamed reply
  // that has finished). Fails when the conversation has no message.
  bool update_last_message(qint64 conversation_id, const QString& content);

 private:
  bool open_database();
  bool fail(const QString& message);
  bool require_open();

  QString path_;
  QString connection_;
  bool open_ = false;
  QString last_error_;
};

}  // namespace kvscope::ui
