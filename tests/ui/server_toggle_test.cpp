// The app's Server toggle (Engine > Server…) against a real engine on the
// random tiny model, wired as the app is (connectWindowToEngine): the server
// started from the dialog answers /health and /v1/completions over real HTTP
// (cpp-httplib's client), its requests run in the app's engine beside the
// chat's and are tagged "server" in the Sequences table; stopping frees the
// port; a port in use shows the bind error and the app carries on; new engine
// settings applied in place keep it serving and its requests going, another
// model restarts it once the engine is ready; the settings are saved with
// the app's. Offscreen.
//   ctest --test-dir build -R server_toggle_test
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <QFile>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "app_test_support.h"
#include "chat_widget.h"
#include "engine_host.h"
#include "gui_engine_driver.h"
#include "main_window.h"
#include "models/block_table_model.h"
#include "server_controller.h"
#include "server_dialog.h"
#include "server_request_tags.h"
#include "window_wiring.h"

using namespace kvscope;
using Json = nlohmann::json;
using State = gui::ServerController::State;

namespace {

constexpr int kTimeoutMs = 60000;
constexpr int kContext = 4096;

struct Reply {
  int status = 0;  // 0: no answer (nothing listening)
  Json json;
};

Reply httpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(60);
  Reply reply;
  if (auto res = client.Get(path)) {
    reply.status = res->status;
    reply.json = Json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  }
  return reply;
}

Reply httpPost(int port, const std::string& path, const Json& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(120);
  Reply reply;
  if (auto res = client.Post(path, body.dump(), "application/json")) {
    reply.status = res->status;
    reply.json = Json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  }
  return reply;
}

// A socket listening on 127.0.0.1:`port` (0: any free port), as another
// program holding the port would; -1 when the port cannot be had.
struct Listener {
  int fd = -1;
  int port = -1;
  explicit Listener(int wanted) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));  // as the server does: TIME_WAIT is no obstacle
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(wanted));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 4) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

// The Sequences table's rows (as the view shows them) whose Seq cell says "server".
int taggedRows(const QAbstractItemModel& model) {
  int tagged = 0;
  for (int row = 0; row < model.rowCount(); ++row) {
    if (model.index(row, ui::BlockTableModel::Sequence).data().toString().endsWith(QStringLiteral("· server")))
      ++tagged;
  }
  return tagged;
}

}  // namespace

class ServerToggleTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    test::prepareAppTest();
    QSettings().remove(QStringLiteral("server"));  // no server settings left from an earlier run
    QVERIFY(dir_.isValid());
    QString error;
    model_ = test::writeTinyChatModel(dir_, kContext, &error);
    QVERIFY2(!model_.isEmpty(), qPrintable(error));
  }

  void init() {
    window_ = std::make_unique<ui::MainWindow>(nullptr, dir_.filePath(QStringLiteral("chats-%1.sqlite").arg(++run_)));
    host_ = std::make_unique<gui::EngineHost>();
    gui::connectWindowToEngine(*window_, *host_);
    window_->loadEngine(config());
    QTRY_VERIFY_WITH_TIMEOUT(!window_->modelInfo().name.empty(), kTimeoutMs);
  }

  void cleanup() {
    host_.reset();  // stops the server, then joins the engine thread
    window_.reset();
  }

  void theSettingsAreSavedWithTheApp() {
    QCOMPARE(ui::parseAllowedOrigins(QStringLiteral(" http://a:3000, http://b  *,")),
             QStringList({QStringLiteral("http://a:3000"), QStringLiteral("http://b"), QStringLiteral("*")}));
    ui::ServerDialog* dialog = window_->serverDialog();
    // Loopback unless the user says otherwise, and the dialog says so.
    QVERIFY(dialog->settings().loopbackOnly());
    auto* host_field = dialog->findChild<QLineEdit*>(QStringLiteral("serverHost"));
    QVERIFY(host_field);
    QVERIFY(!host_field->isEnabled());
    QCOMPARE(host_field->text(), QStringLiteral("127.0.0.1"));

    ui::ServerSettings wanted;
    wanted.host = QStringLiteral("0.0.0.0");
    wanted.port = 0;
    wanted.api_key = QStringLiteral("sesame");
    wanted.allowed_origins = {QStringLiteral("http://localhost:3000")};
    dialog->setSettings(wanted);
    QVERIFY(host_field->isEnabled());
    QCOMPARE(dialog->settings(), wanted);
    dialog->requestStart();  // saves them
    QTRY_VERIFY_WITH_TIMEOUT(host_->server()->state() == State::Serving, kTimeoutMs);
    QVERIFY2(dialog->statusText().contains(QStringLiteral("API key required")), qPrintable(dialog->statusText()));
    const int port = host_->server()->port();
    QCOMPARE(httpGet(port, "/health").status, 200);       // no key needed
    QCOMPARE(httpGet(port, "/v1/models").status, 401);    // the key is
    dialog->requestStop();
    QCOMPARE(host_->server()->state(), State::Off);

    QSettings settings;
    QCOMPARE(ui::loadServerSettings(settings), wanted);
    ui::ServerDialog reopened;
    QCOMPARE(reopened.settings(), wanted);
    ui::saveServerSettings(settings, ui::ServerSettings{});  // back to the defaults for the other tests
  }

  void servesHealthAndACompletionFromTheAppsEngine() {
    const int port = startServing(0);
    QCOMPARE(window_->serverDialog()->url(), QStringLiteral("http://127.0.0.1:%1/v1").arg(port));
    QVERIFY2(window_->serverDialog()->statusText().startsWith(QStringLiteral("Serving model \"tiny\"")),
             qPrintable(window_->serverDialog()->statusText()));
    QVERIFY(window_->findChild<QLabel*>(QStringLiteral("serverSummary"))->text().contains(QString::number(port)));

    const Reply health = httpGet(port, "/health");
    QCOMPARE(health.status, 200);
    QCOMPARE(health.json.value("status", ""), std::string("ok"));

    QSignalSpy submitted(host_->server()->driver(), &gui::GuiEngineDriver::requestSubmitted);
    QSignalSpy snapshots(host_->worker(), &gui::EngineWorker::snapshot);
    const Reply done = httpPost(port, "/v1/completions",
                                {{"model", "tiny"}, {"prompt", "Hello there"}, {"max_tokens", 5},
                                 {"temperature", 0}, {"ignore_eos", true}});
    QCOMPARE(done.status, 200);
    QCOMPARE(done.json["object"].get<std::string>(), std::string("text_completion"));
    QVERIFY(done.json["choices"][0]["text"].is_string());
    QCOMPARE(done.json["usage"]["completion_tokens"].get<int>(), 5);
    // It ran in the app's engine: submitted through the driver, stepped by the
    // worker (which published snapshots as it went).
    QTRY_COMPARE_WITH_TIMEOUT(submitted.count(), 1, kTimeoutMs);
    // Snapshots arrive as queued signals: wait for the event loop to deliver one.
    QTRY_VERIFY_WITH_TIMEOUT(snapshots.count() > 0, kTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(host_->server()->driver()->numLiveRequests(), 0, kTimeoutMs);
  }

  void serverRequestsRunBesideTheChatsAndAreTagged() {
    const int port = startServing(0);
    ui::ChatWidget* chat = window_->chat();
    ui::ConversationSettings settings = chat->conversationSettings();
    settings.sampling.max_tokens = kContext - 256;  // runs until stopped
    settings.sampling.ignore_eos = true;
    chat->setConversationSettings(settings);
    chat->sendPrompt(QStringLiteral("A long reply, please."));

    std::atomic<int> status{-1};
    std::thread client([&status, port] {
      status = httpPost(port, "/v1/completions",
                        {{"model", "tiny"}, {"prompt", "Count to a thousand"}, {"max_tokens", kContext - 256},
                         {"ignore_eos", true}})
                   .status;
    });
    // Both in the Sequences table at once, only the server's tagged.
    const QAbstractItemModel* table = window_->serverRequestTags();
    QTRY_VERIFY_WITH_TIMEOUT(table->rowCount() >= 2 && taggedRows(*table) == 1, kTimeoutMs);
    const int tagged_row = table->index(0, 0).data().toString().endsWith(QStringLiteral("server")) ? 0 : 1;
    QVERIFY(table->index(tagged_row, ui::BlockTableModel::Sequence)
                .data(Qt::ToolTipRole)
                .toString()
                .startsWith(QStringLiteral("A request to the app's server")));
    QVERIFY(chat->busy());

    // Stopping the server cancels its request; the chat's goes on.
    window_->serverDialog()->requestStop();
    client.join();
    QVERIFY(status != -1);  // the client got an answer or an error: it was not left hanging
    QTRY_COMPARE_WITH_TIMEOUT(host_->server()->driver()->numLiveRequests(), 0, kTimeoutMs);
    QVERIFY(chat->busy());
    chat->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!chat->busy(), kTimeoutMs);
  }

  void stoppingFreesThePort() {
    const int port = startServing(0);
    QCOMPARE(httpGet(port, "/health").status, 200);
    window_->serverDialog()->requestStop();
    QCOMPARE(host_->server()->state(), State::Off);
    QCOMPARE(host_->server()->port(), -1);
    QVERIFY(window_->serverDialog()->url().isEmpty());
    QCOMPARE(httpGet(port, "/health").status, 0);  // nothing listens
    {
      const Listener other(port);
      QVERIFY2(other.port == port, "the port is still taken after Stop");
    }
    // And the app can serve on it again.
    QCOMPARE(startServing(port), port);
  }

  void aTakenPortShowsTheErrorAndTheAppCarriesOn() {
    const Listener squatter(0);
    const int taken = squatter.port;
    QVERIFY(taken > 0);
    ui::ServerDialog* dialog = window_->serverDialog();
    ui::ServerSettings settings;
    settings.port = taken;
    dialog->setSettings(settings);
    dialog->show();  // at the size it opens with: the error's two bold lines must still fit
    dialog->requestStart();
    QTRY_VERIFY_WITH_TIMEOUT(host_->server()->state() == State::Failed, kTimeoutMs);
    QCOMPARE(dialog->phase(), ui::ServerDialog::Phase::Failed);
    QVERIFY2(dialog->height() >= dialog->layout()->totalHeightForWidth(dialog->width()),
             qPrintable(QStringLiteral("%1 px high, %2 needed")
                            .arg(dialog->height())
                            .arg(dialog->layout()->totalHeightForWidth(dialog->width()))));
    dialog->hide();
    QVERIFY2(dialog->statusText().contains(QStringLiteral("cannot listen on 127.0.0.1:%1").arg(taken)),
             qPrintable(dialog->statusText()));
    QVERIFY(dialog->url().isEmpty());
    // The app is fine: the chat answers, and another port serves.
    window_->chat()->sendPrompt(QStringLiteral("Still there?"));
    QTRY_VERIFY_WITH_TIMEOUT(!window_->chat()->busy(), kTimeoutMs);
    QVERIFY(startServing(0) > 0);
  }

  // Settings the engine takes in place leave the server serving: a request
  // in flight is re-queued with the chat's and ends well (it was cancelled,
  // "the server is stopping"), and the models list says the new context.
  void newSettingsKeepTheServerAndItsRequests() {
    const int port = startServing(0);
    QSignalSpy states(host_->server(), &gui::ServerController::stateChanged);
    std::atomic<int> status{-1};
    Json body;
    std::thread client([&status, &body, port] {
      const Reply r = httpPost(port, "/v1/completions",
                               {{"model", "tiny"}, {"prompt", "Count"}, {"max_tokens", 3800}, {"ignore_eos", true}});
      body = r.json;
      status = r.status;
    });
    QTRY_COMPARE_WITH_TIMEOUT(host_->server()->driver()->numLiveRequests(), 1, kTimeoutMs);
    EngineConfig changed = config();
    changed.block_size = 8;  // applied in place (Engine::reconfigure)
    window_->loadEngine(changed);
    QTRY_COMPARE_WITH_TIMEOUT(window_->engineConfig().block_size, 8, kTimeoutMs);
    // Still running once the engine has the new settings: it was re-queued.
    QCOMPARE(host_->server()->driver()->numLiveRequests(), 1);
    client.join();
    QCOMPARE(status.load(), 200);
    QVERIFY2(!body.contains("error"), body.dump().c_str());
    QCOMPARE(body["choices"][0]["finish_reason"].get<std::string>(), std::string("length"));
    QCOMPARE(body["usage"]["completion_tokens"].get<int>(), 3800);
    QCOMPARE(host_->server()->state(), State::Serving);
    QCOMPARE(states.count(), 0);  // never stopped

    // The models list follows the engine's new context.
    changed.max_model_len = 1024;
    window_->loadEngine(changed);
    QTRY_COMPARE_WITH_TIMEOUT(window_->engineConfig().max_model_len, 1024, kTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(httpGet(port, "/v1/models").json["data"][0]["context_length"].get<int>(), 1024,
                              kTimeoutMs);
    QCOMPARE(states.count(), 0);
  }

  void anotherModelRestartsTheServer() {
    const int port = startServing(0);
    QSignalSpy states(host_->server(), &gui::ServerController::stateChanged);
    // Another model file: the server serves it under its own id.
    const QString other = dir_.filePath(QStringLiteral("tiny-two.gguf"));
    QFile::remove(other);
    QVERIFY(QFile::copy(model_, other));
    EngineConfig reloaded = config();
    reloaded.model_path = other.toStdString();
    window_->loadEngine(reloaded);
    QTRY_VERIFY_WITH_TIMEOUT(window_->engineConfig().model_path == reloaded.model_path, kTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(host_->server()->state() == State::Serving && states.count() >= 2, kTimeoutMs);
    const Reply models = httpGet(port, "/v1/models");
    QCOMPARE(models.status, 200);
    QCOMPARE(models.json["data"][0]["id"].get<std::string>(), std::string("tiny-two"));
  }

  void aServerAskedForBeforeAnyModelWaitsForIt() {
    gui::EngineHost host;  // no model yet
    server::ServerOptions options;
    options.port = 0;
    host.server()->start(options);
    QCOMPARE(host.server()->state(), State::WaitingForEngine);
    host.loadModel(config());
    QTRY_VERIFY_WITH_TIMEOUT(host.server()->state() == State::Serving, kTimeoutMs);
    QCOMPARE(httpGet(host.server()->port(), "/health").status, 200);
    // A model that cannot be loaded keeps the one there: the server comes back on it.
    EngineConfig bad = config();
    bad.model_path = dir_.filePath(QStringLiteral("missing.gguf")).toStdString();
    host.loadModel(bad);
    QTRY_VERIFY_WITH_TIMEOUT(host.server()->state() == State::Serving, kTimeoutMs);
    QCOMPARE(httpGet(host.server()->port(), "/health").status, 200);
  }

 private:
  EngineConfig config() const {
    EngineConfig c;
    c.model_path = model_.toStdString();
    c.num_threads = 1;
    return c;
  }

  // Starts the server from the dialog on `port` (0: any free one) and waits
  // until it serves; the port it serves on.
  int startServing(int port) {
    ui::ServerSettings settings;
    settings.port = port;
    window_->serverDialog()->setSettings(settings);
    window_->serverDialog()->requestStart();
    if (!QTest::qWaitFor([&] { return host_->server()->state() == State::Serving; }, kTimeoutMs)) {
      qWarning("not serving: %s", qPrintable(host_->server()->message()));
      return -1;
    }
    return host_->server()->port();
  }

  QTemporaryDir dir_;
  QString model_;
  int run_ = 0;
  std::unique_ptr<ui::MainWindow> window_;
  std::unique_ptr<gui::EngineHost> host_;
};

QTEST_MAIN(ServerToggleTest)
#include "server_toggle_test.moc"
