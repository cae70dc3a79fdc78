// `kvscope-cli serve`: a local OpenAI-compatible HTTP server over the engine
// (app/server; docs/server.md). The engine is stepped by a StepLoop thread,
// HTTP connections by the server's own threads; Ctrl-C or SIGTERM stops it
// cleanly (requests in flight are cancelled).
//
//   kvscope-cli serve --port 8080
//   curl http://127.0.0.1:8080/v1/chat/completions -d '{"model": "SmolLM2-135M-Instruct.Q4_1",
//        "messages": [{"role": "user", "content": "Hi"}]}'
#include <csignal>
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common_options.h"
#include "openai_server.h"
#include "step_loop.h"

namespace kvscope::cli {
namespace {

struct ServeOptions {
  EngineOptions engine;
  server::ServerOptions server;
  size_t max_body_mib = 8;
};

// SIGINT and SIGTERM, blocked in every thread so that only sigwait() sees them.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

int run_serve(ServeOptions o) {
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;
  o.server.max_body_bytes = o.max_body_mib << 20;

  // Blocked before any thread starts, so every thread inherits the mask.
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  server::StepLoop loop(*engine);
  server::OpenAiServer http(loop, o.server);
  if (Status s = http.start(); !s.ok()) {
    print_error(s.error());
    return kExitRuntime;
  }
  const ModelInfo& info = engine->model_info();
  // The name and the model id are the file's: printed terminal_safe.
  const std::string line = fmt::format(
      "kvscope-cli: serving {} ({}, context {}) at http://{}:{}/v1 as model \"{}\"{}\n", escape_line(info.name),
      info.architecture, engine->config().max_model_len, o.server.host, http.port(), http.model_id(),
      o.server.api_key.empty() ? "" : " (API key required)");
  fmt::print(stderr, "{}", terminal_safe(line));
  fmt::print(stderr, "kvscope-cli: Ctrl-C stops the server\n");
  std::fflush(stderr);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  fmt::print(stderr, "kvscope-cli: {}, stopping\n", signal_number == SIGINT ? "interrupted" : "terminated");
  http.stop();
  loop.stop();
  return kExitOk;
}

}  // namespace

Command add_serve_command(CLI::App& parent) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = parent.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  cmd->add_option("--host", o->server.host, "address to listen on (loopback by default; 0.0.0.0: every interface)")
      ->capture_default_str();
  cmd->add_option("--port", o->server.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--api-key", o->server.api_key, "require 'Authorization: Bearer KEY' on every request but /health");
  cmd->add_option("--allowed-origins", o->server.allowed_origins,
                  "origins whose browser pages may call the server (CORS), e.g. http://localhost:3000; * for any")
      ->delimiter(',');
  cmd->add_option("--max-body-size", o->max_body_mib, "largest request body, in MiB (larger: HTTP 413)")
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->capture_default_str();
  cmd->add_option("--max-connections", o->server.max_connections,
                  "connections served at once (one thread each; more wait their turn)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--model-id", o->server.model_id,
                  "the model name clients send in \"model\" (default: the model file's name without .gguf)");
  add_engine_options(*cmd, o->engine);
  return {cmd, [o] { return run_serve(*o); }};
}

}  // namespace kvscope::cli
