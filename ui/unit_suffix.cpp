// setCountedUnit; see unit_suffix.h.
#include "unit_suffix.h"

#include <QSpinBox>

namespace kvscope::ui {

namespace {

// The box's unit rule, a child of the box so refreshCountedUnit can find it.
class CountedUnit : public QObject {
 public:
  CountedUnit(QSpinBox* box, const QString& singular, const QString& plural)
      : QObject(box), box_(box), one_(QStringLiteral(" ") + singular), many_(QStringLiteral(" ") + plural) {
    setObjectName(QStringLiteral("countedUnit"));
  }
  void follow() const {
    const QString& suffix = box_->value() == 1 ? one_ : many_;
    if (box_->suffix() != suffix) box_->setSuffix(suffix);  // setSuffix rewrites the text: only on a change
  }

 private:
  QSpinBox* box_;
  QString one_, many_;
};

}  // namespace

void setCountedUnit(QSpinBox* box, const QString& singular, const QString& plural) {
  auto* unit = new CountedUnit(box, singular, plural);
  unit->follow();
  QObject::connect(box, &QSpinBox::valueChanged, unit, [unit] { unit->follow(); });
}

void refreshCountedUnit(QSpinBox* box) {
  if (const auto* unit = box->findChild<CountedUnit*>(QStringLiteral("countedUnit"), Qt::FindDirectChildrenOnly)) {
    unit->follow();
  }
}

void setCountedUnit(QSpinBox* box, const QString& plural) {
  if (plural.endsWith(QLatin1Char('s'))) {
    setCountedUnit(box, plural.chopped(1), plural);
  } else {
    box->setSuffix(QStringLiteral(" ") + plural);
  }
}

}  // namespace kvscope::ui
