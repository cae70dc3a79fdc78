// "1 step", "2 steps": a count with its noun in the number it takes. The
// app's texts said "1 steps, up to 1 sequences a step" where the CLI's said
// it right. English plural rules only: the app is not translated.
#pragma once

#include <QString>

namespace kvscope::ui {

inline QString counted(qint64 n, const QString& singular, const QString& plural) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? singular : plural);
}

}  // namespace kvscope::ui
