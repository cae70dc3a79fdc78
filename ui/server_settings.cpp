// The server's settings in QSettings (see server_settings.h).
#include "server_settings.h"

#include <QRegularExpression>
#include <QSettings>

namespace kvscope::ui {

ServerSettings loadServerSettings(QSettings& settings) {
  ServerSettings s;
  settings.beginGroup(QStringLiteral("server"));
  const QString host = settings.value(QStringLiteral("host"), s.host).toString().trimmed();
  if (!host.isEmpty()) s.host = host;
  bool ok = false;
  const int port = settings.value(QStringLiteral("port"), s.port).toInt(&ok);
  if (ok && port >= 0 && port <= 65535) s.port = port;
  s.api_key = settings.value(QStringLiteral("api_key")).toString();
  s.allowed_origins = parseAllowedOrigins(settings.value(QStringLiteral("allowed_origins")).toStringList().join(QLatin1Char(',')));
  settings.endGroup();
  return s;
}

void saveServerSettings(QSettings& settings, const ServerSettings& server) {
  settings.beginGroup(QStringLiteral("server"));
  settings.setValue(QStringLiteral("host"), server.host);
  settings.setValue(QStringLiteral("port"), server.port);
  settings.setValue(QStringLiteral("api_key"), server.api_key);
  settings.setValue(QStringLiteral("allowed_origins"), server.allowed_origins);
  settings.endGroup();
}

QStringList parseAllowedOrigins(const QString& text) {
  static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
  return text.split(separators, Qt::SkipEmptyParts);
}

}  // namespace kvscope::ui
