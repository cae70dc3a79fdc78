// ElidedLabel (ui/elided_label.h): the whole text when it fits, its start and
// "…" with the whole text as the tooltip when it does not, and a minimum
// width hint far below the text's so a status bar can shrink. Offscreen.
#include <QtTest>

#include "elided_label.h"

using kvscope::ui::ElidedLabel;

class ElidedLabelTest : public QObject {
  Q_OBJECT
 private slots:
  void elidesToItsWidthAndTellsTheRestInItsTooltip() {
    const QString text = QStringLiteral("Smollm2 135M (llama, 30 layers) · 728 KV blocks × 16 tokens · paged · "
                                        "prefix caching on");
    ElidedLabel label(text);
    label.resize(label.sizeHint());
    label.show();
    QVERIFY(QTest::qWaitForWindowExposed(&label));
    QCOMPARE(label.shownText(), text);
    QVERIFY(label.toolTip().isEmpty());

    label.resize(label.sizeHint().width() / 3, label.height());
    QVERIFY(label.shownText().endsWith(QChar(0x2026)));
    QVERIFY(text.startsWith(label.shownText().chopped(1)));
    QCOMPARE(label.toolTip(), text);
    QVERIFY(label.minimumSizeHint().width() < label.sizeHint().width() / 3);

    label.setText(QStringLiteral("no model"));  // short again: whole, no tooltip
    QCOMPARE(label.shownText(), QStringLiteral("no model"));
    QVERIFY(label.toolTip().isEmpty());
  }
};

QTEST_MAIN(ElidedLabelTest)
#include "elided_label_test.moc"
