// LiveLabel (ui/live_label.h) elided: the whole text when it fits, its start
// and "…" with the whole text as the tooltip when it does not, and a minimum
// width hint far below the text's so a status bar can shrink. Offscreen.
// (Its layout requests: unseen_updates_test.cpp.)
#include <QtTest>

#include "live_label.h"

using kvscope::ui::LiveLabel;

class LiveLabelTest : public QObject {
  Q_OBJECT
 private slots:
  void elidesToItsWidthAndTellsTheRestInItsTooltip() {
    const QString text = QStringLiteral("Smollm2 135M (llama, 30 layers) · 728 KV blocks × 16 tokens · paged · "
                                        "prefix caching on");
    LiveLabel label;
    label.setElided(true);
    label.setText(text);
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

QTEST_MAIN(LiveLabelTest)
#include "live_label_test.moc"
