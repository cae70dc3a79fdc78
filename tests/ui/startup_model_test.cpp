// Which model the app opens at start (app/gui/startup_model.h): --model, else
// the --settings file's, else the last opened, else the default; a folder (a
// Hugging Face model) counts as there; a saved model that is gone gives way
// to the default with a note; the failure text names where a path came from;
// a relative --model is kept absolute.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "startup_model.h"

using kvscope::gui::chooseStartupModel;
using kvscope::gui::missingModelMessage;
using kvscope::gui::StartupModel;

class StartupModelTest : public QObject {
  Q_OBJECT

 private slots:
  void theFirstGivenWins() {
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("m.gguf"));
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const QString missing = dir.filePath(QStringLiteral("gone.gguf"));
    const QString fallback = dir.filePath(QStringLiteral("default.gguf"));

    StartupModel m = chooseStartupModel(missing, file, file, fallback);
    QCOMPARE(m.source, StartupModel::Source::CommandLine);
    QCOMPARE(m.path, missing);
    QVERIFY(!m.exists);  // a missing --model is not replaced by anything

    m = chooseStartupModel(QString(), missing, file, fallback);
    QCOMPARE(m.source, StartupModel::Source::SettingsFile);
    QVERIFY(!m.exists);  // nor one the settings file names

    m = chooseStartupModel(QString(), QString(), file, fallback);
    QCOMPARE(m.source, StartupModel::Source::LastOpened);
    QVERIFY(m.exists);
    QVERIFY(m.note.isEmpty());

    m = chooseStartupModel(QString(), QString(), missing, fallback);
    QCOMPARE(m.source, StartupModel::Source::Default);
    QCOMPARE(m.path, fallback);
    QVERIFY2(m.note.contains(missing), qPrintable(m.note));

    m = chooseStartupModel(QString(), QString(), QString(), fallback);
    QCOMPARE(m.source, StartupModel::Source::Default);
    QVERIFY(m.note.isEmpty());
  }

  // A relative --model is kept absolute: the app saves it as the model
  // opened last, which a start from another folder must find.
  void aRelativeCommandLinePathIsMadeAbsolute() {
    QTemporaryDir dir;
    QFile f(dir.filePath(QStringLiteral("m.gguf")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const QString was = QDir::currentPath();
    QVERIFY(QDir::setCurrent(dir.path()));
    const StartupModel m = chooseStartupModel(QStringLiteral("m.gguf"), QString(), QString(), QStringLiteral("/d"));
    QVERIFY(QDir::setCurrent(was));
    QCOMPARE(m.path, QDir(dir.path()).absoluteFilePath(QStringLiteral("m.gguf")));
    QVERIFY(m.exists);
  }

  // Something that is there but neither a file nor a folder is not called missing.
  void aFifoIsNotCalledMissing() {
    const StartupModel m = chooseStartupModel(QStringLiteral("/dev/null"), QString(), QString(), QStringLiteral("/d"));
    QVERIFY(!m.exists);
    const QString text = missingModelMessage(m, QString());
    QVERIFY2(text.contains(QStringLiteral("neither a file nor a folder")), qPrintable(text));
    QVERIFY2(!text.contains(QStringLiteral("does not exist")), qPrintable(text));
  }

  void aFolderIsAModel() {
    QTemporaryDir dir;  // the engine's Hugging Face loader says what a folder lacks
    const StartupModel m = chooseStartupModel(dir.path(), QString(), QString(), QStringLiteral("/d.gguf"));
    QVERIFY(m.exists);
  }

  void theMessageNamesWhereThePathCameFrom() {
    StartupModel m = chooseStartupModel(QStringLiteral("/no/m.gguf"), QString(), QString(), QStringLiteral("/d"));
    QString text = missingModelMessage(m, QString());
    QVERIFY2(text.contains(QStringLiteral("/no/m.gguf")) && text.contains(QStringLiteral("does not exist")),
             qPrintable(text));
    m = chooseStartupModel(QString(), QStringLiteral("/no/m.gguf"), QString(), QStringLiteral("/d"));
    text = missingModelMessage(m, QStringLiteral("run.ini"));
    QVERIFY2(text.contains(QStringLiteral("run.ini")) && text.contains(QStringLiteral("model_path")), qPrintable(text));
  }
};

QTEST_GUILESS_MAIN(StartupModelTest)
#include "startup_model_test.moc"
