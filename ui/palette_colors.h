// Colours derived from a QPalette, so that painted widgets follow the system
// light or dark theme instead of assuming black on white. Pure functions of
// the palette (tested by tests/ui/palette_colors_test.cpp).
#pragma once

#include <QColor>
#include <QPalette>

namespace kvscope::ui {

// True when the palette's content background (Base) is darker than its text:
// a dark theme.
bool isDarkPalette(const QPalette& palette);

// a blended towards b by t (0: a, 1: b), alpha included.
QColor mixColors(const QColor& a, const QColor& b, double t);

// A red for error messages that reads on the palette's Window and Base: the
// usual deep red on a light theme, a light red on a dark one.
QColor errorTextColor(const QPalette& palette);
// `palette` with its text roles (WindowText, Text) in errorTextColor: for a
// label that reports a problem, readable on a light theme and a dark one.
QPalette withErrorText(QPalette palette);

// The background that marks text from accepted speculative draft tokens in
// the chat: a green blended into the palette's Base, faint enough that the
// palette's Text keeps a contrast of at least 4.5 on it (light and dark).
QColor draftTokenBackground(const QPalette& palette);

// The app's own dark palette (View > Theme > Dark, app_theme.h): text on
// its backgrounds at a contrast of at least 7, disabled text at least 3.
QPalette darkAppPalette();

// WCAG relative-luminance contrast ratio of two colours (1 to 21); 4.5 is
// the usual floor for body text.
double contrastRatio(const QColor& a, const QColor& b);

}  // namespace kvscope::ui
