// The engine worker's draft spans on a real engine (the random tiny model,
// spec=ngram, greedy): the characters it marks in the streamed chunks of a
// reply are exactly the text of the tokens the engine reported as accepted
// drafts (TokenEvent::from_draft), found by running the same request on an
// Engine directly. Offscreen, no files needed.
//   ctest --test-dir build -R spec_worker_test --output-on-failure
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app_test_support.h"
#include "engine_host.h"
#include "engine_worker.h"
#include "kvscope/engine.h"

using namespace kvscope;

namespace {

constexpr int kTimeoutMs = 60000;

// A reply that copies its prompt is what the n-gram proposer guesses; the
// random model repeats itself too, which it also catches.
const ui::ChatHistory kMessages{{"user", "abc abc abc abc abc abc abc abc abc abc abc abc abc abc abc abc"}};

SamplingParams greedy() {
  SamplingParams sampling;
  sampling.temperature = 0.0f;
  sampling.max_tokens = 64;
  sampling.ignore_eos = true;
  return sampling;
}

// Appends `span` (offset by `offset`) to `spans`, merging it into the last
// one when they touch (as the worker does).
void appendSpan(ui::TextSpans& spans, ui::TextSpan span, int offset) {
  span.begin += offset;
  if (!spans.empty() && spans.back().begin + spans.back().length == span.begin) {
    spans.back().length += span.length;
  } else {
    spans.push_back(span);
  }
}

}  // namespace

class SpecWorkerTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, 4096, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void spansAreTheAcceptedDraftTokens() {
    EngineConfig config;
    config.model_path = model_.toStdString();
    config.spec = SpecMethod::Ngram;
    config.spec_k = 4;
    config.num_threads = 1;

    // The truth: the same request on an engine, token by token.
    QString expected_text;
    ui::TextSpans expected;
    {
      auto engine = Engine::create(config);
      QVERIFY2(engine.ok(), engine.ok() ? "" : engine.error().c_str());
      GenerationRequest request;
      request.messages = kMessages;
      request.sampling = greedy();
      request.on_event = [&](const TokenEvent& ev) {
        const QString text = QString::fromStdString(ev.text);
        if (ev.from_draft && !text.isEmpty())
          appendSpan(expected, {0, static_cast<int>(text.size())}, static_cast<int>(expected_text.size()));
        expected_text += text;
      };
      QVERIFY((*engine)->submit(std::move(request)).ok());
      while ((*engine)->has_work()) (*engine)->step();
    }
    QVERIFY2(!expected.empty(), "no accepted draft token: the test would prove nothing");

    gui::EngineHost host;
    QSignalSpy loaded(host.worker(), &gui::EngineWorker::modelLoaded);
    QSignalSpy tokens(host.worker(), &gui::EngineWorker::tokens);
    QSignalSpy finished(host.worker(), &gui::EngineWorker::finished);
    host.loadModel(config);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, kTimeoutMs);
    host.submitChat(kMessages, greedy(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() > 0, kTimeoutMs);
    QString text;
    ui::TextSpans spans;
    for (const QList<QVariant>& args : tokens) {
      const QString chunk = args.at(2).toString();
      for (const ui::TextSpan& span : args.at(3).value<ui::TextSpans>()) {
        QVERIFY(span.begin >= 0 && span.length > 0 && span.begin + span.length <= chunk.size());
        appendSpan(spans, span, static_cast<int>(text.size()));
      }
      text += chunk;
    }
    QCOMPARE(text, expected_text);
    QCOMPARE(spans, expected);
    const auto info = finished.at(0).at(1).value<ui::FinishInfo>();
    QVERIFY(info.stats.num_accepted_tokens > 0);
  }

 private:
  QTemporaryDir dir_;
  QString model_;
};

QTEST_MAIN(SpecWorkerTest)
#include "spec_worker_test.moc"
