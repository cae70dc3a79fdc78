// setCountedUnit; see unit_suffix.h.
#include "unit_suffix.h"

#include <QSpinBox>

namespace kvscope::ui {

void setCountedUnit(QSpinBox* box, const QString& singular, const QString& plural) {
  const QString one = QStringLiteral(" ") + singular;
  const QString many = QStringLiteral(" ") + plural;
  const auto follow = [box, one, many](int value) { box->setSuffix(value == 1 ? one : many); };
  follow(box->value());
  QObject::connect(box, &QSpinBox::valueChanged, box, follow);
}

void setCountedUnit(QSpinBox* box, const QString& plural) {
  if (plural.endsWith(QLatin1Char('s'))) {
    setCountedUnit(box, plural.chopped(1), plural);
  } else {
    box->setSuffix(QStringLiteral(" ") + plural);
  }
}

}  // namespace kvscope::ui
