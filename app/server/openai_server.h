// OpenAiServer: a local OpenAI-compatible HTTP server over a kvscope engine
// (cpp-httplib, one thread per connection from a fixed pool).
//
//   POST /v1/chat/completions   POST /v1/completions   (streamed or not)
//   GET  /v1/models             GET  /v1/models/{id}
//   GET  /health                GET  /metrics (Prometheus)
//   GET  /v1/engine/snapshot    (the engine's state as JSON)
//
// It never steps the engine: requests go through an EngineDriver (a
// StepLoop in kvscope-cli serve), so many clients share one continuous batch.
// Loopback only unless told otherwise; an optional API key (Authorization:
// Bearer KEY; /health needs none); no CORS headers unless origins are given,
// and a request from a browser page of another origin is refused (403).
// docs/server.md is the user's guide.
//
//   StepLoop loop(*engine);
//   OpenAiServer server(loop, options);
//   if (Status s = server.start(); !s.ok()) ...;   // listening on server.port()
//   server.stop();                                  // the destructor also stops
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine_driver.h"
#include "kvscope/model_info.h"
#include "kvscope/result.h"

namespace kvscope::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (port() says which)
  std::string api_key;  // empty: no key needed
  // Origins whose browser pages may call the server (CORS); "*" allows any.
  // Empty: no CORS headers, and requests carrying an Origin header are refused.
  std::vector<std::string> allowed_origins;
  size_t max_body_bytes = 8u << 20;  // larger bodies get 413
  // Connections served at once (the HTTP thread pool); more wait for a free
  // thread. A streaming request holds its connection until it finishes.
  int max_connections = 64;
  std::string model_id;  // the id clients name in "model"; empty: the model file's name without .gguf
};

class OpenAiServer {
 public:
  OpenAiServer(EngineDriver& driver, ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds and starts listening on a thread of its own; an error says why the
  // address could not be bound.
  Status start();
  // The port bound (after start()).
  int port() const;
  const std::string& model_id() const;
  // The engine was given new settings in place (Engine::reconfigure, same
  // model): requests in flight go on, and what the server tells clients of
  // the engine (its context length, a reply's default length) follows
  // `info`. Safe while requests are answered.
  void engine_reconfigured(const ModelInfo& info);
  // Cancels every request being answered (their clients get an error event
  // or body), gives those responses up to a second to end, then stops
  // listening and joins the connection threads. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvscope::server
