// See app_theme.h.
#include "app_theme.h"


#include <QApplication>
#include <QSettings>
#include <QStyle>

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

QPalette darkAppPalette() {
  const QColor window(0x2b, 0x2b, 0x2b), base(0x1e, 0x1e, 0x1e), text(0xe8, 0xe8, 0xe8);
  const QColor button(0x35, 0x35, 0x35), disabled(0x8a, 0x8a, 0x8a), highlight(0x2f, 0x6f, 0xb8);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3a, 0x3a));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, button);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, QColor(0x4a, 0x4a, 0x4a));
  p.setColor(QPalette::Midlight, QColor(0x40, 0x40, 0x40));
  p.setColor(QPalette::Mid, QColor(0x2f, 0x2f, 0x2f));
  p.setColor(QPalette::Dark, QColor(0x1a, 0x1a, 0x1a));
  p.setColor(QPalette::Shadow, QColor(0x0a, 0x0a, 0x0a));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb0, 0xff));
  p.setColor(QPalette::LinkVisited, QColor(0xb4, 0x8c, 0xff));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
    p.setColor(QPalette::Disabled, role, disabled);
  }
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4a, 0x4a));
  return p;
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
