// See loopback_http_server.h.
#include "loopback_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zip.h>

#include <cctype>
#include <cstdlib>
#include <random>

namespace kvscope::test {
namespace {

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;  // the client went away (a cancelled download)
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

LoopbackHttpServer::LoopbackHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) return;
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // never reachable from outside
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 8) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string LoopbackHttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void LoopbackHttpServer::serve(const std::string& path, std::string body) {
  std::lock_guard lock(mutex_);
  bodies_[path] = std::move(body);
}

void LoopbackHttpServer::set_ignore_range(bool ignore) {
  std::lock_guard lock(mutex_);
  ignore_range_ = ignore;
}

void LoopbackHttpServer::set_throttle(size_t chunk, std::chrono::milliseconds delay) {
  std::lock_guard lock(mutex_);
  chunk_ = chunk;
  delay_ = delay;
}

std::vector<std::string> LoopbackHttpServer::ranges() const {
  std::lock_guard lock(mutex_);
  return ranges_;
}

int LoopbackHttpServer::unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // not listening: connections are refused
  return ntohs(addr.sin_port);
}

void LoopbackHttpServer::run() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;  // wake up to notice stop_
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    handle(fd);
    ::close(fd);
  }
}

void LoopbackHttpServer::handle(int fd) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  // "GET /path HTTP/1.1"
  const size_t sp1 = request.find(' ');
  const size_t sp2 = request.find(' ', sp1 + 1);
  const std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string range;
  const std::string headers = lower(request);
  if (const size_t at = headers.find("\r\nrange:"); at != std::string::npos) {
    const size_t start = request.find_first_not_of(' ', at + 8);
    range = request.substr(start, request.find("\r\n", start) - start);
  }

  std::string body;
  bool found = false, ignore_range = false;
  size_t chunk = 0;
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard lock(mutex_);
    ranges_.push_back(range);
    if (auto it = bodies_.find(path); it != bodies_.end()) {
      body = it->second;
      found = true;
    }
    ignore_range = ignore_range_;
    chunk = chunk_;
    delay = delay_;
  }
  if (!found) {
    const std::string r = "HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n";
    send_all(fd, r.data(), r.size());
    return;
  }
  size_t from = 0;
  std::string head;
  if (!range.empty() && !ignore_range && range.starts_with("bytes=")) {
    from = std::strtoull(range.c_str() + 6, nullptr, 10);
    if (from >= body.size()) {
      head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(body.size()) +
             "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      send_all(fd, head.data(), head.size());
      return;
    }
    head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(from) + "-" +
           std::to_string(body.size() - 1) + "/" + std::to_string(body.size()) + "\r\n";
  } else {
    head = "HTTP/1.1 200 OK\r\n";
  }
  head += "Content-Type: application/zip\r\nContent-Length: " + std::to_string(body.size() - from) +
          "\r\nConnection: close\r\n\r\n";
  if (!send_all(fd, head.data(), head.size())) return;
  const size_t step = chunk > 0 ? chunk : body.size();
  for (size_t at = from; at < body.size() && !stop_.load(); at += step) {
    const size_t n = std::min(step, body.size() - at);
    // Counted before the send: the client can have every byte and the test
    // read the count before send() returns here (seen under load).
    body_bytes_sent_ += n;
    if (!send_all(fd, body.data() + at, n)) {
      body_bytes_sent_ -= n;
      return;
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
  }
}

bool write_test_zip(const std::string& path, const std::map<std::string, std::string>& members) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (!zip) return false;
  for (const auto& [name, data] : members) {
    // The buffers outlive zip_close, which is when libzip reads them.
    zip_source_t* src = zip_source_buffer(zip, data.data(), data.size(), 0);
    if (!src || zip_file_add(zip, name.c_str(), src, ZIP_FL_OVERWRITE) < 0) {
      if (src) zip_source_free(src);
      zip_discard(zip);
      return false;
    }
  }
  return zip_close(zip) == 0;
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string pseudo_random_bytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

}  // namespace kvscope::test
