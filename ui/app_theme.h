// The app's colour theme: the system's (the default), or a light or dark one
// chosen in View > Theme and kept in the settings ("ui/theme").
//
// Why the app has its own: on many Linux desktops a Qt application gets a
// light palette whatever the desktop uses (no platform theme plugin), so
// someone who works in a dark desktop could not have a dark kvscope. Light
// and Dark draw with the Fusion style, which takes its colours from the
// palette; System gives back the style and palette the app started with.
// Every inspector widget follows the application palette when it changes
// (palette_colors.h; tests/ui/theme_test.cpp), so a choice applies at once.
//   tested by tests/ui/app_theme_test.cpp
#pragma once

#include <optional>

#include <QString>

namespace kvscope::ui {

enum class AppTheme { System, Light, Dark };

// "system", "light", "dark": the settings value and the --theme argument.
QString appThemeKey(AppTheme theme);
std::optional<AppTheme> appThemeFromKey(const QString& key);

// Sets the application's style and palette for `theme` (Dark:
// darkAppPalette(), palette_colors.h). Needs a
// QApplication, on its thread. The first call remembers the style and
// palette the app started with, for System.
void applyAppTheme(AppTheme theme);
// The theme last applied (System before any call).
AppTheme currentAppTheme();

// The theme kept in the settings (System when none or unreadable), and
// keeping one there.
AppTheme savedAppTheme();
void saveAppTheme(AppTheme theme);

}  // namespace kvscope::ui
