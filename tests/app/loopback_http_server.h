// LoopbackHttpServer: a tiny HTTP/1.1 server on 127.0.0.1 (an ephemeral
// port) for tests of the model downloader, so that no test needs the
// internet. It serves registered bodies by path, answers "Range: bytes=N-"
// with 206 unless told to ignore ranges (as `python3 -m http.server` does),
// answers 404 for any other path, and can send slowly so that a test can
// cancel in the middle of a transfer. One connection at a time, each closed
// after its response. Used by tests/app/model_fetch_test and
// tests/ui/first_run_dialog_test.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kvscope::test {

class LoopbackHttpServer {
 public:
  LoopbackHttpServer();  // listening when constructed; check ok()
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  bool ok() const { return port_ > 0; }
  // "http://127.0.0.1:PORT" + path (path starts with '/').
  std::string url(const std::string& path) const;

  void serve(const std::string& path, std::string body);
  void set_ignore_range(bool ignore);
  // Sends bodies in `chunk` bytes with `delay` after each (default: at once).
  void set_throttle(size_t chunk, std::chrono::milliseconds delay);

  // What clients asked for, in order: the Range header of each request ("" if none).
  std::vector<std::string> ranges() const;
  // Body bytes sent so far, all requests together.
  uint64_t body_bytes_sent() const { return body_bytes_sent_.load(); }

  // A port on 127.0.0.1 where nothing listens (bound, then released).
  static int unused_port();

 private:
  void run();
  void handle(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> body_bytes_sent_{0};
  mutable std::mutex mutex_;  // guards the fields below
  std::map<std::string, std::string> bodies_;
  bool ignore_range_ = false;
  size_t chunk_ = 0;  // 0: one send
  std::chrono::milliseconds delay_{0};
  std::vector<std::string> ranges_;
  std::thread thread_;
};

// Writes a zip archive holding `members` (name -> contents, deflated) to
// `path` with libzip; returns false if libzip fails.
bool write_test_zip(const std::string& path, const std::map<std::string, std::string>& members);

// SHA-256 of `data` in lowercase hex (OpenSSL one-shot; independent of the
// streaming hash under test).
std::string sha256_hex(const std::string& data);

// `size` bytes of a fixed pseudo-random sequence (`seed` picks which).
std::string pseudo_random_bytes(size_t size, uint32_t seed);

}  // namespace kvscope::test
