// ToolTipWrap (ui/tooltip_wrap.h): a long plain tooltip is shown as a
// wrapping paragraph with its text intact; short and rich ones are Qt's.
#include <QHelpEvent>
#include <QLabel>
#include <QToolTip>
#include <QtTest>

#include "tooltip_wrap.h"

using kvscope::ui::ToolTipWrap;

class ToolTipWrapTest : public QObject {
  Q_OBJECT
 private slots:
  void wrapsOnlyLongPlainText() {
    const QString brief = QStringLiteral("Settings > Engine");
    QCOMPARE(ToolTipWrap::wrapped(brief), brief);
    const QString rich = QStringLiteral("<b>12</b>, 40 tokens<br>") + QString(200, QLatin1Char('x'));
    QCOMPARE(ToolTipWrap::wrapped(rich), rich);
    const QString plain = QStringLiteral("A's settings with these changed: keys (block_size, paged) and "
                                         "concurrency=N, where N-1 other requests < run beside it\nsecond line");
    const QString shown = ToolTipWrap::wrapped(plain);
    QVERIFY(shown.startsWith(QStringLiteral("<table width='420'>")));
    QVERIFY(shown.contains(QStringLiteral("requests &lt; run")));  // escaped, not taken for a tag
    QVERIFY(shown.contains(QStringLiteral("\nsecond line")));      // its own line breaks kept
    QVERIFY(Qt::mightBeRichText(shown));                           // so Qt word-wraps it
  }

  void theFilterShowsTheWrappedText() {
    ToolTipWrap::install();
    QLabel widget(QStringLiteral("field"));
    const QString long_tip = QString(120, QLatin1Char('w'));
    widget.setToolTip(long_tip);
    widget.show();
    QVERIFY(QTest::qWaitForWindowExposed(&widget));
    QHelpEvent help(QEvent::ToolTip, QPoint(2, 2), widget.mapToGlobal(QPoint(2, 2)));
    QApplication::sendEvent(&widget, &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QCOMPARE(QToolTip::text(), ToolTipWrap::wrapped(long_tip));
    QToolTip::hideText();
  }
};

QTEST_MAIN(ToolTipWrapTest)
#include "tooltip_wrap_test.moc"
