// What the dialog tests share: find a child by object name, the OK button,
// and the checks that a message sits right under its control and that every
// control has an accessible name.
#pragma once

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabBar>
#include <QtTest>

namespace kvscope::test {

inline QPushButton* okButton(QWidget* dialog) {
  return dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
}

template <typename T>
inline T* child(QWidget* parent, const char* name) {
  T* w = parent->findChild<T*>(QLatin1String(name));
  if (!w) qFatal("no child %s", name);
  return w;
}

// The message label is shown (on the current tab), says something, and sits
// right under the control.
inline void expectMessageAt(QWidget* root, QWidget* control, const char* message_name, const QString& contains) {
  auto* message = child<QLabel>(root, message_name);
  QVERIFY2(message->isVisible(), message_name);
  QVERIFY2(message->text().contains(contains), qPrintable(message->text()));
  const QPoint control_at = control->mapTo(root, QPoint(0, control->height()));
  const QPoint message_at = message->mapTo(root, QPoint(0, 0));
  QVERIFY2(message_at.y() >= control_at.y() && message_at.y() - control_at.y() < 40,
           qPrintable(QStringLiteral("message at y=%1, control ends at y=%2").arg(message_at.y()).arg(control_at.y())));
}

inline void expectAccessibleNames(QWidget* root) {
  for (QWidget* w : root->findChildren<QWidget*>()) {
    const bool input = qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QLineEdit*>(w) ||
                       qobject_cast<QPlainTextEdit*>(w) || qobject_cast<QComboBox*>(w) ||
                       qobject_cast<QAbstractButton*>(w);
    if (!input) continue;
    // Parts of a compound control (a spin box's or combo's line edit, tab
    // scroll buttons) are named through their owner.
    if (qobject_cast<QAbstractSpinBox*>(w->parentWidget()) || qobject_cast<QComboBox*>(w->parentWidget()) ||
        qobject_cast<QTabBar*>(w->parentWidget()))
      continue;
    auto* button = qobject_cast<QAbstractButton*>(w);
    const bool named = !w->accessibleName().isEmpty() || (button && !button->text().isEmpty());
    QVERIFY2(named, qPrintable(QStringLiteral("%1 %2 has no accessible name")
                                   .arg(QLatin1String(w->metaObject()->className()), w->objectName())));
  }
}

}  // namespace kvscope::test
