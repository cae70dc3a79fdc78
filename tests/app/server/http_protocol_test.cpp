// The server at the HTTP level, below what the OpenAI clients see: an
// HTTP/1.0 client gets whole bodies with a Content-Length, never the chunked
// coding it does not know (RFC 9112 6.1), whether it closes or keeps the
// connection; and stopping the server does not wait for an idle kept-alive
// connection (accepted_connections.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "openai_server_fixture.h"
#include "test_server.h"

namespace kvscope {
namespace {

using nlohmann::json;
using test::exchange_raw;
using test::kGreedy;
using test::RawExchange;

using HttpProtocolTest = test::OpenAiServerFixture;

// An HTTP/1.0 POST of `body` to `path` with `connection` as its Connection
// header ("" for none).
std::string http10_post(const std::string& path, const json& body, const std::string& connection) {
  const std::string text = body.dump();
  return fmt::format("POST {} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{}"
                     "Content-Length: {}\r\n\r\n{}",
                     path, connection.empty() ? "" : "Connection: " + connection + "\r\n", text.size(), text);
}

// The response's head (lowercased) and body.
struct Split {
  std::string head;
  std::string body;
};
Split split(const std::string& reply) {
  const size_t end = reply.find("\r\n\r\n");
  if (end == std::string::npos) return {};
  Split s{reply.substr(0, end), reply.substr(end + 4)};
  for (char& c : s.head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Sends `request` and reads the response until its Content-Length is in,
// the server closes, or 20 s pass (a keep-alive connection stays open, so
// the end of the body is known only from its length); then, with
// `wait_for_close`, up to 5 s more for the server to close.
RawExchange exchange_until_complete(int port, const std::string& request, bool wait_for_close) {
  RawExchange out;
  const int fd = test::connect_loopback(port);
  if (fd < 0) return out;
  timeval poll{0, 200 * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &poll, sizeof(poll));
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) {
        out.closed = true;
        break;
      }
      if (n > 0) out.reply.append(buffer, static_cast<size_t>(n));
      const size_t head_end = out.reply.find("\r\n\r\n");
      std::string head = out.reply.substr(0, head_end);
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t length_at = head.find("content-length: ");
      if (head_end != std::string::npos && length_at != std::string::npos &&
          out.reply.size() - head_end - 4 >= std::stoul(head.substr(length_at + 16))) {
        break;
      }
    }
    const auto close_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (wait_for_close && !out.closed && std::chrono::steady_clock::now() < close_deadline) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      out.closed = n == 0;
      if (n > 0) out.reply.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

TEST_F(HttpProtocolTest, AnHttp10ClientGetsWholeBodiesNotChunks) {
  json extra = kGreedy;
  extra["max_tokens"] = 6;
  const test::Reply reference = post("/v1/chat/completions", chat("Hello", extra));
  ASSERT_EQ(reference.status, 200) << reference.body;
  const std::string reply_text = reference.json["choices"][0]["message"]["content"];

  // "Keep-Alive" as ApacheBench -k sends it: httplib keeps that connection
  // open, so only a Content-Length can end the body for the client.
  for (const std::string connection : {"", "Keep-Alive"}) {
    SCOPED_TRACE("Connection: " + connection);
    const RawExchange whole =
        exchange_until_complete(server_->port(), http10_post("/v1/chat/completions", chat("Hello", extra), connection),
                                connection.empty());
    const Split w = split(whole.reply);
    ASSERT_NE(w.head.find(" 200 "), std::string::npos) << whole.reply;
    EXPECT_EQ(w.head.find("transfer-encoding"), std::string::npos) << whole.reply;
    EXPECT_NE(w.head.find(fmt::format("content-length: {}", w.body.size())), std::string::npos) << whole.reply;
    const json parsed = json::parse(w.body, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << w.body;
    EXPECT_EQ(parsed["choices"][0]["message"]["content"], reply_text);

    extra["stream"] = true;
    const RawExchange streamed =
        exchange_until_complete(server_->port(), http10_post("/v1/chat/completions", chat("Hello", extra), connection),
                                connection.empty());
    extra.erase("stream");
    const Split s = split(streamed.reply);
    ASSERT_NE(s.head.find(" 200 "), std::string::npos) << streamed.reply;
    EXPECT_NE(s.head.find("content-type: text/event-stream"), std::string::npos) << streamed.reply;
    EXPECT_EQ(s.head.find("transfer-encoding"), std::string::npos) << streamed.reply;
    EXPECT_NE(s.head.find(fmt::format("content-length: {}", s.body.size())), std::string::npos) << streamed.reply;
    const test::SseStream sse = test::parse_sse(s.body);
    EXPECT_TRUE(sse.done);
    EXPECT_TRUE(sse.malformed.empty()) << s.body;
    EXPECT_EQ(sse.texts(), std::vector<std::string>{reply_text});
    // Closed after the response by HTTP/1.0's default; kept open when asked.
    EXPECT_EQ(whole.closed, connection.empty());
    EXPECT_EQ(streamed.closed, connection.empty());
  }
}

// An HTTP/1.1 client still gets its stream in chunks, as it is made.
TEST_F(HttpProtocolTest, AnHttp11ClientStillGetsChunks) {
  json extra = kGreedy;
  extra["max_tokens"] = 4;
  extra["stream"] = true;
  const std::string text = chat("Hello", extra).dump();
  const RawExchange r = exchange_raw(server_->port(),
                                     fmt::format("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                 "Content-Type: application/json\r\nConnection: close\r\n"
                                                 "Content-Length: {}\r\n\r\n{}",
                                                 text.size(), text));
  EXPECT_NE(split(r.reply).head.find("transfer-encoding: chunked"), std::string::npos) << r.reply;
}

// The body's length is checked before the body is read: one over the limit
// is refused instead of invited with 100 Continue, and a length that is not
// one number (unreadable, or two that differ) is a 400, not read as some
// number (httplib took "abc" as 0 and the first of two).
TEST_F(HttpProtocolTest, ContentLengthIsCheckedBeforeTheBody) {
  const auto head = [](const std::string& lengths) {
    return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + lengths;
  };
  const RawExchange big =
      exchange_raw(server_->port(), head("Content-Length: 9437184\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(big.reply.rfind("HTTP/1.1 413", 0), 0u) << big.reply;
  EXPECT_EQ(big.reply.find("100 Continue"), std::string::npos) << big.reply;
  EXPECT_NE(big.reply.find("request_too_large"), std::string::npos) << big.reply;
  EXPECT_TRUE(big.closed);

  const std::string body = completion("Hi", {{"max_tokens", 1}}).dump();
  for (const std::string& lengths : {std::string("Content-Length: abc\r\n"), std::string("Content-Length: -1\r\n"),
                                    fmt::format("Content-Length: {}\r\nContent-Length: {}\r\n", body.size(),
                                                body.size() + 1)}) {
    SCOPED_TRACE(lengths);
    const RawExchange bad = exchange_raw(server_->port(), head(lengths + "\r\n") + body);
    EXPECT_EQ(bad.reply.rfind("HTTP/1.1 400", 0), 0u) << bad.reply;
    EXPECT_NE(bad.reply.find("invalid_content_length"), std::string::npos) << bad.reply;
    EXPECT_TRUE(bad.closed);
  }
  // The same length twice is one length.
  const RawExchange twice = exchange_raw(
      server_->port(),
      head(fmt::format("Content-Length: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.size(),
                       body.size())) +
          body);
  EXPECT_EQ(twice.reply.rfind("HTTP/1.1 200", 0), 0u) << twice.reply;
}

// An OpenAI SDK client keeps its connection open between requests; stopping
// the server (Ctrl+C, or the app applying settings on its GUI thread) took
// httplib's keep-alive timeout, 5 s, while one was connected.
TEST_F(HttpProtocolTest, StoppingDoesNotWaitForAnIdleKeptAliveConnection) {
  const int idle = test::connect_loopback(server_->port());
  ASSERT_GE(idle, 0);
  const std::string request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(idle, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  // The whole answer (head and body may come in two writes), so that what
  // is read after the stop is the end of the connection, not its rest.
  char buffer[1024];
  std::string answer;
  while (answer.find("{\"status\":\"ok\"}") == std::string::npos) {
    const ssize_t n = ::recv(idle, buffer, sizeof(buffer), 0);
    ASSERT_GT(n, 0) << "the health check's answer, so far: " << answer;
    answer.append(buffer, static_cast<size_t>(n));
  }
  const int silent = test::connect_loopback(server_->port());  // connected, never sends
  ASSERT_GE(silent, 0);
  const auto start = std::chrono::steady_clock::now();
  server_.reset();  // stops the server, then the engine
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "stop waited out the keep-alive timeout";
  // Both connections were ended by the server (the silent one may not have
  // been accepted yet: then the listener's close resets it).
  EXPECT_EQ(::recv(idle, buffer, sizeof(buffer), 0), 0);
  const ssize_t silent_end = ::recv(silent, buffer, sizeof(buffer), 0);
  EXPECT_TRUE(silent_end == 0 || (silent_end < 0 && errno == ECONNRESET)) << std::strerror(errno);
  ::close(idle);
  ::close(silent);
}

}  // namespace
}  // namespace kvscope
