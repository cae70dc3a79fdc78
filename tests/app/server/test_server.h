// A kvscope server on a loopback port for tests: an Engine on a tiny random
// model (or any model), its StepLoop and an OpenAiServer on a free port, plus
// small HTTP helpers (httplib's client) that return status, body and parsed
// JSON, and a reader of server-sent events.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kvscope/engine.h"
#include "openai_server.h"
#include "step_loop.h"

namespace kvscope::test {

class TestServer {
 public:
  // Loads `config.model_path` and listens on 127.0.0.1 at a free port
  // (options.port is overridden); nullptr with a gtest failure on error.
  static std::unique_ptr<TestServer> start(const EngineConfig& config, server::ServerOptions options = {});
  ~TestServer();

  int port() const { return server_->port(); }
  const std::string& model_id() const { return server_->model_id(); }
  // The engine's KV counters, read between two steps.
  KvStats kv_stats();
  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<server::StepLoop> loop_;
  std::unique_ptr<server::OpenAiServer> server_;
};

struct Reply {
  int status = 0;  // 0: no response (connection failed)
  std::string error;  // with status 0: what the client says went wrong (httplib's Error)
  std::string body;
  httplib::Headers headers;
  nlohmann::json json;  // the body parsed, or discarded when it is not JSON
  std::string header(const std::string& name) const;
};

Reply http_get(int port, const std::string& path, const httplib::Headers& headers = {});
Reply http_post(int port, const std::string& path, const std::string& body, const httplib::Headers& headers = {},
                const std::string& content_type = "application/json");
Reply http_post(int port, const std::string& path, const nlohmann::json& body, const httplib::Headers& headers = {});
// A POST whose response is read as it arrives: `keep_reading(body so far)`
// returning false hangs up (the client disconnects mid-response).
Reply http_post_streaming(int port, const std::string& path, const nlohmann::json& body,
                          const std::function<bool(const std::string&)>& keep_reading);

// What came back for a request sent as bytes: the response (its head and
// body, read until the server closed the connection or was quiet for
// `quiet`), and whether the server closed it.
struct RawExchange {
  std::string reply;
  bool closed = false;
};
// Sends `request` on a new connection to the loopback port, then `more`
// 300 ms later (the body of a request the server may have refused by then).
RawExchange exchange_raw(int port, const std::string& request, const std::string& more = "",
                         std::chrono::milliseconds quiet = std::chrono::seconds(2));
// A connected TCP socket to the loopback port, -1 on failure; the caller closes it.
int connect_loopback(int port);

// A server-sent-event body: every `data: {...}` chunk parsed, whether
// `data: [DONE]` ended it, and anything that was not framed as SSE.
struct SseStream {
  std::vector<nlohmann::json> chunks;
  bool done = false;
  std::vector<std::string> malformed;
  // Each choice's text: delta.content (chat) or text (completions) joined in order.
  std::vector<std::string> texts() const;
  // Each choice's finish_reason ("" when none came).
  std::vector<std::string> finish_reasons() const;
};
SseStream parse_sse(const std::string& body);

}  // namespace kvscope::test
