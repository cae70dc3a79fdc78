// Loopback server and HTTP helpers for the server tests (see test_server.h).
#include "test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

namespace kvscope::test {

std::unique_ptr<TestServer> TestServer::start(const EngineConfig& config, server::ServerOptions options) {
  auto created = Engine::create(config);
  if (!created.ok()) {
    ADD_FAILURE() << created.error();
    return nullptr;
  }
  auto s = std::unique_ptr<TestServer>(new TestServer);
  s->engine_ = std::move(created).value();
  s->loop_ = std::make_unique<server::StepLoop>(*s->engine_);
  options.host = "127.0.0.1";
  options.port = 0;
  s->server_ = std::make_unique<server::OpenAiServer>(*s->loop_, options);
  if (Status st = s->server_->start(); !st.ok()) {
    ADD_FAILURE() << st.error();
    return nullptr;
  }
  return s;
}

TestServer::~TestServer() {
  if (server_) server_->stop();
  if (loop_) loop_->stop();
}

KvStats TestServer::kv_stats() {
  KvStats stats;
  EXPECT_TRUE(loop_->run_between_steps([&stats](Engine& e) { stats = e.kv_stats(); }));
  return stats;
}

std::string Reply::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

namespace {

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  c.set_write_timeout(30, 0);
  return c;
}

Reply reply_of(const httplib::Result& r) {
  Reply out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  out.json = nlohmann::json::parse(out.body, nullptr, false);
  return out;
}

}  // namespace

Reply http_get(int port, const std::string& path, const httplib::Headers& headers) {
  httplib::Client c = client(port);
  return reply_of(c.Get(path, headers));
}

Reply http_post(int port, const std::string& path, const std::string& body, const httplib::Headers& headers,
                const std::string& content_type) {
  httplib::Client c = client(port);
  return reply_of(c.Post(path, headers, body, content_type));
}

Reply http_post(int port, const std::string& path, const nlohmann::json& body, const httplib::Headers& headers) {
  return http_post(port, path, body.dump(), headers);
}

Reply http_post_streaming(int port, const std::string& path, const nlohmann::json& body,
                          const std::function<bool(const std::string&)>& keep_reading) {
  httplib::Client c = client(port);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string received;
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    received.append(data, size);
    return keep_reading(received);
  };
  httplib::Result r = c.send(req);
  Reply out;
  out.body = received;
  if (r) {
    out.status = r->status;
    out.headers = r->headers;
  }
  return out;
}

SseStream parse_sse(const std::string& body) {
  SseStream s;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.empty() || event[0] == ':') continue;  // a comment
    if (event.rfind("data: ", 0) != 0) {
      s.malformed.push_back(event);
      continue;
    }
    const std::string data = event.substr(6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      s.malformed.push_back(event);
    } else {
      s.chunks.push_back(std::move(j));
    }
  }
  return s;
}

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

RawExchange exchange_raw(int port, const std::string& request, const std::string& more,
                         std::chrono::milliseconds quiet) {
  RawExchange out;
  const int fd = connect_loopback(port);
  if (fd < 0) return out;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    if (!more.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ::send(fd, more.data(), more.size(), MSG_NOSIGNAL);
    }
    const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(quiet).count();
    timeval wait{static_cast<time_t>(usec / 1000000), static_cast<suseconds_t>(usec % 1000000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) out.reply.append(buffer, static_cast<size_t>(n));
    out.closed = n == 0;
  }
  ::close(fd);
  return out;
}

std::vector<std::string> SseStream::texts() const {
  std::vector<std::string> out;
  for (const nlohmann::json& c : chunks) {
    if (!c.contains("choices")) continue;
    for (const nlohmann::json& choice : c["choices"]) {
      const size_t i = choice["index"].get<size_t>();
      if (out.size() <= i) out.resize(i + 1);
      if (choice.contains("delta") && choice["delta"].contains("content")) {
        out[i] += choice["delta"]["content"].get<std::string>();
      }
      if (choice.contains("text")) out[i] += choice["text"].get<std::string>();
    }
  }
  return out;
}

std::vector<std::string> SseStream::finish_reasons() const {
  std::vector<std::string> out;
  for (const nlohmann::json& c : chunks) {
    if (!c.contains("choices")) continue;
    for (const nlohmann::json& choice : c["choices"]) {
      const size_t i = choice["index"].get<size_t>();
      if (out.size() <= i) out.resize(i + 1);
      if (choice["finish_reason"].is_string()) out[i] = choice["finish_reason"].get<std::string>();
    }
  }
  return out;
}

}  // namespace kvscope::test
