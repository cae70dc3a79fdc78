// A spin box's unit that follows its value: "1 token", "2 tokens". Qt's
// suffix is one fixed text, and the settings dialog showed "1 ranks" by
// default. Every spin box with a counted unit (tokens, ranks, sequences)
// sets its unit here.
//
// Tests: tests/ui/settings_dialog_test.cpp (every counted unit of the table).
#pragma once

#include <QString>

class QSpinBox;

namespace kvscope::ui {

// Sets `box`'s suffix to " " + singular at 1 and " " + plural otherwise, now
// and whenever the value changes.
void setCountedUnit(QSpinBox* box, const QString& singular, const QString& plural);

// Puts the unit right after the value was set with the box's signals
// blocked (a form filled under a QSignalBlocker): no valueChanged came.
void refreshCountedUnit(QSpinBox* box);

// The same for a plain English plural ("tokens" -> "token"); a unit that does
// not end in 's' is set as it is, whatever the value.
void setCountedUnit(QSpinBox* box, const QString& plural);

}  // namespace kvscope::ui
