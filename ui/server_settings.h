// The Server toggle's settings (Engine > Server…) and their place in
// QSettings (group "server"), beside the engine's. The bind address is
// 127.0.0.1 (this computer only) unless the user sets another one.
//   tested by tests/ui/server_toggle_test.cpp
#pragma once

#include <QString>
#include <QStringList>

class QSettings;

namespace kvscope::ui {

inline const QString kLoopbackHost = QStringLiteral("127.0.0.1");

struct ServerSettings {
  QString host = kLoopbackHost;
  int port = 8080;  // 0: any free port
  QString api_key;  // empty: no key needed
  // Origins whose web pages may call the server (CORS); "*": any. Empty:
  // requests from web pages are refused.
  QStringList allowed_origins;

  bool loopbackOnly() const { return host == kLoopbackHost; }
  bool operator==(const ServerSettings&) const = default;
};

// Values that are unusable (a port out of range, an empty host) fall back to
// the defaults.
ServerSettings loadServerSettings(QSettings& settings);
void saveServerSettings(QSettings& settings, const ServerSettings& server);

// "http://a:3000, http://b" -> {"http://a:3000", "http://b"} (commas or
// spaces between, empty pieces dropped).
QStringList parseAllowedOrigins(const QString& text);

}  // namespace kvscope::ui
