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
//
// Schema 2 (over 1) adds per-conversation settings, per-message stats and the
// alternative replies of an assistant turn; a version 1 file is migrated in
// place, in one transaction, when it is opened.
#pragma once

#include <optional>
#include <vector>

#include <QDateTime>
#include <QString>
#include <QStringList>

namespace kvscope::ui {

struct ConversationSummary {
  qint64 id = -1;
  QString title;
  QDateTime updated_at;  // UTC
  QDateTime created_at;  // UTC
  QString system_prompt;  // as given to create_conversation
};

struct StoredMessage {
  qint64 id = -1;
  QString role;  // "system", "user" or "assistant"
  QString content;
  QDateTime created_at;  // UTC
  int ordinal = 0;       // 0, 1, 2, ... within its conversation
  // Opaque JSON written by the app (tokens, time to first token, ...); empty
  // when none.
  QString stats_json;
  // All n replies of one assistant turn; empty means just `content`. When not
  // empty, content == alternatives[selected_alternative].
  QStringList alternatives;
  int selected_alternative = 0;
};

class ChatStore {
 public:
  static constexpr int kSchemaVersion = 2;

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
  // `stats_json` and `alternatives` replace what the message had; non-empty
  // `alternatives` need `content` == alternatives[selected] (else false and
  // lastError says why; nothing is written).
  bool update_last_message(qint64 conversation_id, const QString& content, const QString& stats_json = QString(),
                           const QStringList& alternatives = {}, int selected = 0);
  // The same for message `message_id` of the conversation, wherever it is
  // (a reply that finished after more turns were added). False when the
  // conversation has no such message.
  bool update_message(qint64 conversation_id, qint64 message_id, const QString& content,
                      const QString& stats_json = QString(), const QStringList& alternatives = {}, int selected = 0);
  // Makes alternatives[index] the message's content and bumps updated_at.
  // False for a message without alternatives or an index out of range.
  bool select_alternative(qint64 message_id, int index);
  // Deletes the messages with ordinal >= from_ordinal (edit-and-resend,
  // regenerate, taking back a turn whose request never started) and bumps
  // updated_at when any went. Past the end deletes nothing and succeeds.
  bool truncate_conversation(qint64 conversation_id, int from_ordinal);

  // The conversation's settings: opaque JSON written by the app, empty when
  // none were set. Empty with lastError set when it fails (no such id).
  QString conversation_settings(qint64 id);
  // Does not bump updated_at: opening a conversation may store settings, and
  // that alone should not move it to the top of the list.
  bool set_conversation_settings(qint64 id, const QString& json);
  // One conversation; nullopt with lastError set when there is none.
  std::optional<ConversationSummary> conversation(qint64 id);

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
