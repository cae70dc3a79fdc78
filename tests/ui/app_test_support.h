// Set-up shared by the tests that run the whole window against a real engine
// on the random tiny model (chat_session_test, block_text_session_test).
#pragma once

#include <QApplication>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "engine_types.h"
#include "support/tiny_model.h"

namespace kvscope::test {

// QSettings and app data go to the test locations; engine types can cross
// queued connections.
inline void prepareAppTest() {
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName(QStringLiteral("kvscope-test"));
  ui::registerEngineMetaTypes();
}

// Writes the tiny model (Llama, ChatML template, byte-level BPE) with
// `context_length` tokens of context into `dir`; its path, or empty with
// *error set.
inline QString writeTinyChatModel(const QTemporaryDir& dir, int context_length, QString* error) {
  const QString path = dir.filePath(QStringLiteral("tiny.gguf"));
  TinyModelSpec spec;
  spec.context_length = context_length;
  const Status written = write_tiny_gguf(spec, path.toStdString());
  if (!written.ok()) {
    *error = QString::fromStdString(written.error());
    return QString();
  }
  return path;
}

}  // namespace kvscope::test
