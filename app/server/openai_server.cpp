// The HTTP side of the OpenAI-compatible server: routes, the API key, CORS,
// errors in OpenAI's format (see openai_server.h). Generation requests are
// answered by generation_responder.cpp.
#include "openai_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "accepted_connections.h"
#include "api_error.h"
#include "generation_responder.h"
#include "kvscope/sampling_defaults.h"
#include "metrics.h"
#include "request_parser.h"
#include "snapshot_json.h"

namespace kvscope::server {
namespace {

using Json = nlohmann::ordered_json;
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

// The endpoints' paths (httplib patterns). The generation endpoints and the
// model list also answer without /v1, as llama.cpp's server does, for clients
// given the bare host as base URL.
constexpr const char* kChatPath = R"((/v1)?/chat/completions)";
constexpr const char* kCompletionsPath = R"((/v1)?/completions)";
constexpr const char* kModelsPath = R"((/v1)?/models)";
constexpr const char* kModelPath = R"((/v1)?/models/(.+))";  // without /v1 too, as /models is
constexpr const char* kHealthPath = "/health";
constexpr const char* kMetricsPath = "/metrics";
constexpr const char* kSnapshotPath = "/v1/engine/snapshot";

void send_error(Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
}

void send_json(Response& res, const Json& j) { res.set_content(dump(j), "application/json"); }

// Sends `e` and ends the connection after it. httplib closes a connection
// only when the request asks it to, whatever the response's Connection
// header says, but it does close one whose content provider fails: this
// provider writes the whole body, then fails.
void send_error_and_close(Response& res, const ApiError& e) {
  res.status = e.status;
  auto body = std::make_shared<std::string>(e.body());
  res.set_header("Connection", "close");
  res.set_content_provider(body->size(), "application/json",
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;
                           });
}

// `text` without the spaces and tabs around it.
std::string trimmed(std::string text) {
  text.erase(0, text.find_first_not_of(" \t"));
  text.erase(text.find_last_not_of(" \t") + 1);
  return text;
}

// A request body the server will not read: one whose size is known only
// once it has been read, chunked (411) or compressed (415); one whose
// Content-Length is unreadable (400) or over the limit (413). httplib holds
// only a Content-Length to the body limit, so a chunked body was read whole
// and a gzip one expanded whole (a 40 KB gzip took 2.8 GB). Methods without a
// body are not asked.
std::optional<ApiError> unread_body_refusal(const Request& req, size_t max_body_bytes) {
  if (req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS") return std::nullopt;
  if (req.has_header("Transfer-Encoding")) return length_required();
  // Neither length nor chunks (curl -X POST without -d): httplib would wait
  // for a body until its read timeout (5 s), then call the request malformed.
  if (!req.has_header("Content-Length")) return length_missing();
  // httplib reads the first Content-Length as a number, whatever it holds
  // ("abc" as 0) and whatever the others say: a request a proxy in front
  // may have framed otherwise (RFC 9112 6.3 makes it an error).
  const std::string length = trimmed(req.get_header_value("Content-Length"));
  for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i) {
    if (trimmed(req.get_header_value("Content-Length", i)) != length) return bad_content_length(length);
  }
  if (length.empty() || length.size() > 18 ||
      length.find_first_not_of("0123456789") != std::string::npos) {
    return bad_content_length(length);
  }
  // Over the limit: said before the body comes (and instead of inviting it
  // with 100 Continue), not after it was sent in vain.
  if (std::stoull(length) > max_body_bytes) return payload_too_large(max_body_bytes);
  const std::string encoding = trimmed(req.get_header_value("Content-Encoding"));
  std::string lower = encoding;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!lower.empty() && lower != "identity") return encoded_body_refused(encoding);
  return std::nullopt;
}

// Compares in time independent of where the strings differ, so that the key
// cannot be guessed a byte at a time from response times.
// `expected` is never empty (the key).
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

// httplib refuses a form-encoded body over its compiled-in cap (8 KiB) with
// the 413 it gives a body over the server's limit; a JSON body within that
// limit, sent with curl -d's default content type, is the usual cause.
bool is_form_within_limit(const Request& req, size_t max_body_bytes) {
  if (req.get_header_value("Content-Type") != "application/x-www-form-urlencoded") return false;
  const std::string length = req.get_header_value("Content-Length");
  char* end = nullptr;
  const unsigned long long n = std::strtoull(length.c_str(), &end, 10);
  return !length.empty() && *end == '\0' && n <= max_body_bytes;
}

std::string model_id_from_path(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // a directory given with a trailing slash
  std::string name = p.filename().string();
  if (p.extension() == ".gguf") name = p.stem().string();
  return name.empty() ? "kvscope" : name;
}

std::string random_hex(int num_chars) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  std::string out;
  for (int i = 0; i < num_chars; ++i) out += "0123456789abcdef"[rng() % 16];
  return out;
}

}  // namespace

struct OpenAiServer::Impl {
  Impl(EngineDriver& d, ServerOptions o) : driver(d), options(std::move(o)) {}

  EngineDriver& driver;
  ServerOptions options;
  httplib::Server http;
  // The socket the server listens on (set_socket_options hands it over
  // before bind): listened on again with a larger backlog once bound.
  socket_t listen_socket = INVALID_SOCKET;
  std::thread listener;
  std::atomic<bool> listener_returned{false};
  int port = -1;
  bool started = false;
  std::string model_id;
  // What start() and engine_reconfigured() read from the engine; the
  // connection threads read them under the lock (parse_defaults(), model_json()).
  mutable std::mutex facts_mutex;
  int32_t context_length = 0;
  ParseDefaults defaults;
  int64_t created = 0;
  std::string id_prefix = random_hex(8);
  std::atomic<uint64_t> next_response{1};
  JobRegistry jobs;
  std::shared_ptr<ServerMetrics> metrics = std::make_shared<ServerMetrics>();

  bool origin_allowed(const std::string& origin) const {
    for (const std::string& o : options.allowed_origins) {
      if (o == "*" || o == origin) return true;
    }
    return false;
  }

  // "Bearer KEY", the scheme in any case (RFC 9110: schemes are case-insensitive).
  bool authorized(const Request& req) const {
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kScheme = "bearer ";
    if (header.size() < kScheme.size()) return false;
    for (size_t i = 0; i < kScheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
    }
    return same_secret(std::string_view(header).substr(kScheme.size()), options.api_key);
  }

  HandlerResponse before_routing(const Request& req, Response& res) {
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty()) {
      // A browser page: only from the origins given (CORS), so that a web
      // site cannot make a visitor's local server generate for it.
      if (!origin_allowed(origin)) {
        send_error(res, origin_not_allowed(origin));
        return HandlerResponse::Handled;
      }
      res.set_header("Access-Control-Allow-Origin", origin);
      // The preflight's allowed headers echo the request's (below).
      res.set_header("Vary", req.method == "OPTIONS" ? "Origin, Access-Control-Request-Headers" : "Origin");
      if (req.method == "OPTIONS") {  // the preflight
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        // The headers the page asks to send, whatever they are: its origin
        // is allowed, and client libraries add their own (OpenAI's adds
        // X-Stainless-*), which a fixed list would fail the preflight on.
        const std::string requested = req.get_header_value("Access-Control-Request-Headers");
        res.set_header("Access-Control-Allow-Headers", requested.empty() ? "Authorization, Content-Type" : requested);
        res.set_header("Access-Control-Max-Age", "600");
        return HandlerResponse::Handled;
      }
    }
    if (!options.api_key.empty() && req.path != kHealthPath && !authorized(req)) {
      // A 401 names the scheme that would pass (RFC 9110 11.6.1).
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, invalid_api_key());
      return HandlerResponse::Handled;
    }
    // Refused before the body is read; the body then stays unread, so the
    // connection cannot carry another request and is closed.
    if (std::optional<ApiError> refusal = unread_body_refusal(req, options.max_body_bytes)) {
      send_error_and_close(res, *refusal);
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  }

  // httplib's own errors (no route, a body over the limit, a malformed
  // request) come here with an empty body; the server's have one already.
  HandlerResponse on_error(const Request& req, Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return HandlerResponse::Unhandled;
    if (res.status == 404) {
      const std::string allowed = methods_of(req.path);
      if (allowed.empty()) {
        send_error(res, route_not_found(req.method, req.path));
      } else {
        send_error(res, method_not_allowed(req.method, req.path, allowed));
        res.set_header("Allow", allowed);
      }
    } else if (res.status == 413 && is_form_within_limit(req, options.max_body_bytes)) {
      send_error(res, form_too_large(CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH));
    } else if (res.status == 413) {
      send_error(res, payload_too_large(options.max_body_bytes));
    } else {
      send_error(res, error_for_status(res.status));
    }
    return HandlerResponse::Handled;
  }

  void set_engine_facts(const ModelInfo& info) {
    std::lock_guard<std::mutex> lock(facts_mutex);
    context_length = info.max_model_len;
    // The chat's defaults (the model file's recommended sampling over
    // kvscope's); without max_tokens a reply may run to the end of the context.
    defaults.sampling = resolve_sampling_defaults(info.recommended_sampling).params;
    defaults.sampling.max_tokens = std::max(info.max_model_len, 1);
  }

  ParseDefaults parse_defaults() const {
    std::lock_guard<std::mutex> lock(facts_mutex);
    return defaults;
  }

  void generate(const Request& req, Response& res, Endpoint endpoint) {
    const ParseDefaults request_defaults = parse_defaults();
    ParseResult parsed = endpoint == Endpoint::kChatCompletions
                             ? parse_chat_request(req.body, request_defaults)
                             : parse_completion_request(req.body, request_defaults);
    if (const ApiError* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
    const ParsedRequest& request = std::get<ParsedRequest>(parsed);
    if (request.model != model_id) return send_error(res, model_not_found(request.model));
    ResponseContext ctx;
    ctx.endpoint = endpoint;
    ctx.id = fmt::format("{}-{}-{}", endpoint == Endpoint::kChatCompletions ? "chatcmpl" : "cmpl", id_prefix,
                         next_response++);
    ctx.created = static_cast<int64_t>(std::time(nullptr));
    ctx.model = model_id;
    ctx.logprobs = request.logprobs;
    const BodyFraming framing = req.version == "HTTP/1.0" ? BodyFraming::kWhole : BodyFraming::kChunked;
    // A held response asks the connection itself whether its client is
    // still there; not found (it cannot be missing while its request is
    // handled, but the listing is the kernel's), it is assumed present.
    // Looked up at the first ask: a stream written as it comes never asks.
    std::optional<int> connection;
    const auto client_present = [&, this]() mutable {
      if (!connection) connection = find_accepted_connection(port, req.remote_addr, req.remote_port);
      return *connection < 0 || !peer_has_gone(*connection);
    };
    respond_generation(driver, request, ctx, jobs, metrics, framing, client_present, res);
  }

  Json model_json() const {
    std::lock_guard<std::mutex> lock(facts_mutex);
    return {{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "kvscope"},
            {"context_length", context_length}};
  }

  // The method an existing endpoint takes ("" when `path` is none), for a 405.
  static std::string methods_of(const std::string& path) {
    for (const auto& [method, pattern] : {std::pair{"POST", kChatPath}, {"POST", kCompletionsPath},
                                          {"GET", kModelsPath}, {"GET", kModelPath}, {"GET", kHealthPath},
                                          {"GET", kMetricsPath}, {"GET", kSnapshotPath}}) {
      // httplib answers HEAD on every GET route: the Allow header says so.
      if (std::regex_match(path, std::regex(pattern))) return std::string(method) == "GET" ? "GET, HEAD" : method;
    }
    return "";
  }

  void install_routes() {
    http.set_pre_routing_handler([this](const Request& req, Response& res) { return before_routing(req, res); });
    // A client that waits for "100 Continue" before sending its body (curl
    // does, for a chunked upload) hears the refusal instead: httplib asks
    // this before the pre-routing handler, and would otherwise invite the
    // body. (The key and origin checks come after, in before_routing.)
    http.set_expect_100_continue_handler([this](const Request& req, Response& res) {
      if (std::optional<ApiError> refusal = unread_body_refusal(req, options.max_body_bytes)) {
        send_error_and_close(res, *refusal);
        return refusal->status;
      }
      return 100;
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const Request& req, Response& res) { return on_error(req, res); }));
    http.set_exception_handler([](const Request&, Response& res, std::exception_ptr thrown) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, engine_error(fmt::format("internal error: {}", what)));
    });
    http.Post(kChatPath,
              [this](const Request& req, Response& res) { generate(req, res, Endpoint::kChatCompletions); });
    http.Post(kCompletionsPath,
              [this](const Request& req, Response& res) { generate(req, res, Endpoint::kCompletions); });
    http.Get(kModelsPath, [this](const Request&, Response& res) {
      send_json(res, {{"object", "list"}, {"data", Json::array({model_json()})}});
    });
    http.Get(kModelPath, [this](const Request& req, Response& res) {
      if (req.matches[2] != model_id) return send_error(res, model_not_found(req.matches[2]));
      send_json(res, model_json());
    });
    http.Get(kHealthPath, [](const Request&, Response& res) { send_json(res, {{"status", "ok"}}); });
    http.Get(kMetricsPath, [this](const Request&, Response& res) {
      EngineSample sample;
      if (!driver.run_between_steps([&sample](Engine& e) { sample = sample_engine(e); })) {
        return send_error(res, {503, "the engine has stopped", "server_error", "", ""});
      }
      res.set_content(prometheus_text(metrics->totals(), metrics->tokens_per_second(), sample),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get(kSnapshotPath, [this](const Request&, Response& res) {
      std::shared_ptr<const EngineSnapshot> snapshot;
      if (!driver.run_between_steps([&snapshot](Engine& e) { snapshot = e.snapshot(); })) {
        return send_error(res, {503, "the engine has stopped", "server_error", "", ""});
      }
      send_json(res, snapshot_json(*snapshot));
    });
  }
};

OpenAiServer::OpenAiServer(EngineDriver& driver, ServerOptions options)
    : impl_(std::make_unique<Impl>(driver, std::move(options))) {}

OpenAiServer::~OpenAiServer() { stop(); }

Status OpenAiServer::start() {
  Impl& m = *impl_;
  if (m.started) return Error{"the server is already started"};
  if (m.options.max_connections < 1) return Error{"max connections must be at least 1"};
  // An empty host bound an address the start line could not name
  // ("http://:36791/v1"): say what to give instead.
  if (m.options.host.empty()) return Error{"the host is empty: give an address (127.0.0.1, ::1, 0.0.0.0)"};
  ModelInfo info;
  const bool read = m.driver.run_between_steps([&](Engine& e) { info = e.model_info(); });
  if (!read) return Error{"the engine has stopped"};
  m.jobs.reopen();  // a server started again after stop() takes requests again
  m.model_id = m.options.model_id.empty() ? model_id_from_path(info.path) : m.options.model_id;
  m.set_engine_facts(info);
  m.created = static_cast<int64_t>(std::time(nullptr));

  // A client that disconnects while a response is written must not end the
  // process with SIGPIPE: the write fails instead and the request is cancelled.
  std::signal(SIGPIPE, SIG_IGN);
  const int num_threads = m.options.max_connections;
  m.http.new_task_queue = [num_threads] { return new httplib::ThreadPool(static_cast<size_t>(num_threads)); };
  m.http.set_payload_max_length(m.options.max_body_bytes);
  m.http.set_keep_alive_max_count(1000);
  m.http.set_tcp_nodelay(true);  // streamed chunks are small: send each at once
  // httplib's default sets SO_REUSEPORT, with which a second server on the
  // same port starts too and the kernel splits the clients between the two;
  // SO_REUSEADDR alone lets a restarted server rebind at once, and a second
  // one fail with "cannot listen".
  m.http.set_socket_options([&m](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    m.listen_socket = sock;
  });
  m.install_routes();
  if (m.options.port == 0) {
    m.port = m.http.bind_to_any_port(m.options.host);
  } else {
    m.port = m.http.bind_to_port(m.options.host, m.options.port) ? m.options.port : -1;
  }
  if (m.port < 0) {
    return Error{fmt::format("cannot listen on {}:{} (is the port in use, or the address not this machine's?)",
                             m.options.host, m.options.port)};
  }
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed
  // when the library was built). Clients connecting at once beyond that had
  // their handshake's last ACK dropped by the kernel: they waited out a
  // SYN-ACK retransmission (a second), and under load one in a few runs of
  // ServerLoadTest's 16 clients lost its connection (a reset; strace showed
  // the accepts stalling for that second). Listening again on the bound
  // socket sets the backlog to what the server is meant to serve at once.
  if (m.listen_socket != INVALID_SOCKET) ::listen(m.listen_socket, std::max(m.options.max_connections, 128));
  m.started = true;
  m.listener_returned = false;
  m.listener = std::thread([&m] {
    m.http.listen_after_bind();
    m.listener_returned = true;
  });
  // httplib's stop() only closes the socket of a server whose accept loop
  // has begun (is_running()); a stop() that came before that is lost and the
  // loop then waits on the socket forever, so stop()'s join never returns
  // (seen as a hung app when the engine was reconfigured right after Start on
  // a loaded machine). Return once the loop runs, so stop() always reaches it.
  while (!m.http.is_running() && !m.listener_returned) std::this_thread::sleep_for(std::chrono::microseconds(200));
  return Status::success();
}

int OpenAiServer::port() const { return impl_->port; }

const std::string& OpenAiServer::model_id() const { return impl_->model_id; }

void OpenAiServer::engine_reconfigured(const ModelInfo& info) { impl_->set_engine_facts(info); }

void OpenAiServer::stop() {
  Impl& m = *impl_;
  if (!m.started) return;
  // Cancelled requests end at the engine's next step; their clients then get
  // an error event (streams) or a 503 and the end of the response, if that
  // comes within a second, before the connections close. A request arriving
  // from now on is answered 503 instead of being started and cut off.
  m.jobs.close_and_cancel_all();
  m.jobs.wait_empty(std::chrono::seconds(1));
  // stop() closes the listening socket; the listener thread then joins the
  // connection threads, which would each wait out an idle keep-alive
  // connection (accepted_connections.h). Shutting those connections down
  // until it has returned ends the waits at once (a connection accepted just
  // before the close included).
  m.http.stop();
  while (!m.listener_returned) {
    shut_down_accepted_connections(m.port);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (m.listener.joinable()) m.listener.join();
  m.started = false;
}

}  // namespace kvscope::server
