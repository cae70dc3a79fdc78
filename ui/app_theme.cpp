// See app_theme.h.
#include "app_theme.h"


#include <QApplication>
#include <QSettings>
#include <QStyle>

#include "palette_colors.h"

namespace kvscope::ui {
namespace {

constexpr const char* kThemeKey = "ui/theme";

// What the app started with, taken before the first change.
struct StartingLook {
  QString style;
  QPalette palette;
};

const StartingLook& startingLook() {
  static const StartingLook look{QApplication::style()->name(), QApplication::palette()};
  return look;
}

AppTheme& appliedTheme() {
  static AppTheme theme = AppTheme::System;
  return theme;
}

}  // namespace

QString appThemeKey(AppTheme theme) {
  switch (theme) {
    case AppTheme::Light: return QStringLiteral("light");
    case AppTheme::Dark: return QStringLiteral("dark");
    case AppTheme::System: break;
  }
  return QStringLiteral("system");
}

std::optional<AppTheme> appThemeFromKey(const QString& key) {
  for (AppTheme t : {AppTheme::System, AppTheme::Light, AppTheme::Dark}) {
    if (key.trimmed().compare(appThemeKey(t), Qt::CaseInsensitive) == 0) return t;
  }
  return std::nullopt;
}

void applyAppTheme(AppTheme theme) {
  const StartingLook& start = startingLook();  // before anything changes
  if (theme == AppTheme::System) {
    QApplication::setStyle(start.style);
    QApplication::setPalette(start.palette);
  } else {
    QApplication::setStyle(QStringLiteral("Fusion"));
    QApplication::setPalette(theme == AppTheme::Dark ? darkAppPalette() : QApplication::style()->standardPalette());
  }
  appliedTheme() = theme;
}

AppTheme currentAppTheme() { return appliedTheme(); }

AppTheme savedAppTheme() {
  const QSettings settings;
  return appThemeFromKey(settings.value(QLatin1String(kThemeKey)).toString()).value_or(AppTheme::System);
}

void saveAppTheme(AppTheme theme) {
  QSettings settings;
  settings.setValue(QLatin1String(kThemeKey), appThemeKey(theme));
}

}  // namespace kvscope::ui
