// See http_download.h. One libcurl easy handle per attempt; the body goes
// straight into DEST.part. Whether the body continues the .part or replaces it
// is decided at its first byte from the response status: 206 with the
// Content-Range we asked for continues it, 200 (a server that ignores Range)
// rewrites it, anything else is an error page and never touches the file.
#include "fetch/http_download.h"

#include <curl/curl.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "fetch/sha256_file.h"

namespace kvscope::fetch {
namespace fs = std::filesystem;

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

// State shared with the libcurl callbacks of one request.
struct Transfer {
  CURL* curl = nullptr;
  const DownloadSpec* spec = nullptr;
  const DownloadCallbacks* callbacks = nullptr;
  std::string part;
  uint64_t resume_from = 0;          // bytes in the .part when the request was sent
  uint64_t base = 0;                 // bytes before this body: resume_from on 206, 0 on 200
  uint64_t received = 0;             // body bytes written
  long long content_range_start = -1;
  std::unique_ptr<FILE, int (*)(FILE*)> file{nullptr, &std::fclose};
  // Why the write callback stopped the transfer, if it did.
  int write_errno = 0;
  bool range_mismatch = false;
  bool too_large = false;
  bool error_status = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    t->content_range_start = -1;  // a new response (after a redirect)
  } else if (starts_with_nocase(line, "content-range:")) {
    // "Content-Range: bytes START-END/TOTAL"
    const size_t at = line.find("bytes ");
    if (at != std::string_view::npos) t->content_range_start = std::atoll(std::string(line.substr(at + 6)).c_str());
  }
  return size * count;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (!t->file) {
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    const char* mode = nullptr;
    if (status == 206 && t->resume_from > 0) {
      if (t->content_range_start != static_cast<long long>(t->resume_from)) {
        t->range_mismatch = true;
        return 0;
      }
      t->base = t->resume_from;
      mode = "ab";
    } else if (status == 200) {
      t->base = 0;  // the whole file again: rewrite the .part from its start
      mode = "wb";
    } else {
      t->error_status = true;  // an error page is not the file
      return 0;
    }
    t->file.reset(std::fopen(t->part.c_str(), mode));
    if (!t->file) {
      t->write_errno = errno;
      return 0;
    }
  }
  if (t->base + t->received + bytes > t->spec->size) {
    t->too_large = true;
    return 0;
  }
  if (std::fwrite(data, 1, bytes, t->file.get()) != bytes) {
    t->write_errno = errno ? errno : EIO;
    return 0;
  }
  t->received += bytes;
  return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->callbacks->cancelled && t->callbacks->cancelled()) return 1;  // CURLE_ABORTED_BY_CALLBACK
  if (t->callbacks->progress) {
    const uint64_t done = t->file ? t->base + t->received : t->resume_from;
    t->callbacks->progress(FetchStage::kDownloading, done, t->spec->size);
  }
  return 0;
}

enum class Outcome { kDone, kFailed, kRestart };

// One request for the bytes after `resume_from`.
Outcome request(const DownloadSpec& spec, const DownloadCallbacks& callbacks, uint64_t resume_from,
                FetchStatus& status) {
  init_curl_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) {
    status = FetchStatus::fail(FetchFailure::kNetwork, "libcurl cannot start a transfer");
    return Outcome::kFailed;
  }
  Transfer t;
  t.curl = curl.get();
  t.spec = &spec;
  t.callbacks = &callbacks;
  t.part = partial_path(spec.dest);
  t.resume_from = resume_from;
  char error_text[CURL_ERROR_SIZE] = {};
  const std::string user_agent = "kvscope/" KVSCOPE_VERSION;
  const std::string range = fmt::format("{}-", resume_from);

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, spec.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // safe off the main thread
  curl_easy_setopt(c, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // A connection that delivers nothing for a minute is dead; the .part keeps
  // what arrived.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  if (resume_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

  const CURLcode rc = curl_easy_perform(c);
  long http_status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http_status);
  if (t.file && std::fclose(t.file.release()) != 0 && t.write_errno == 0) t.write_errno = errno;

  if (rc == CURLE_ABORTED_BY_CALLBACK) {
    status = FetchStatus::fail(FetchFailure::kCancelled,
                               fmt::format("download cancelled; {} is kept and the next attempt resumes it", t.part));
    return Outcome::kFailed;
  }
  if (t.write_errno != 0) {
    status = FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot write {}: {}", t.part, std::strerror(t.write_errno)));
    return Outcome::kFailed;
  }
  if (t.too_large) {
    std::error_code ec;
    fs::remove(t.part, ec);
    status = FetchStatus::fail(FetchFailure::kSize,
                               fmt::format("{} sent more than the expected {} bytes: it is not the pinned file "
                                           "(the download was discarded)", spec.url, spec.size));
    return Outcome::kFailed;
  }
  // The server answered the range with other bytes, or cannot serve it.
  if (t.range_mismatch || (http_status == 416 && resume_from > 0)) return Outcome::kRestart;
  if (t.error_status || http_status >= 400) {
    status = FetchStatus::fail(
        FetchFailure::kHttp,
        fmt::format("the server answered HTTP {} for {}{}", http_status, spec.url,
                    http_status == 404 ? " (not found: the file has moved or this kvscope is too old)" : ""));
    return Outcome::kFailed;
  }
  if (rc != CURLE_OK) {
    // Resuming is promised only where something arrived to resume from.
    std::error_code ec;
    const uintmax_t kept = fs::file_size(t.part, ec);
    status = FetchStatus::fail(FetchFailure::kNetwork,
                               fmt::format("cannot download {}: {}. Check the network connection{}", spec.url,
                                           error_text[0] ? error_text : curl_easy_strerror(rc),
                                           !ec && kept > 0 ? "; the next attempt resumes where this one stopped"
                                                           : " and try again"));
    return Outcome::kFailed;
  }
  return Outcome::kDone;
}

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

}  // namespace

std::string partial_path(const std::string& dest) { return dest + ".part"; }

FetchStatus download_file(const DownloadSpec& spec, const DownloadCallbacks& callbacks) {
  const std::string part = partial_path(spec.dest);
  std::error_code ec;
  // Two attempts: the second from zero when the server could not continue the .part.
  for (int attempt = 0; attempt < 2; ++attempt) {
    uint64_t have = size_or_zero(part);
    if (have > spec.size || attempt > 0) {
      fs::remove(part, ec);
      have = 0;
    }
    if (have < spec.size) {
      FetchStatus status;
      const Outcome outcome = request(spec, callbacks, have, status);
      if (outcome == Outcome::kRestart) continue;
      if (outcome == Outcome::kFailed) return status;
    }
    const uint64_t got = size_or_zero(part);
    if (got != spec.size) {
      return FetchStatus::fail(FetchFailure::kNetwork,
                               fmt::format("the download of {} stopped at {} of {} bytes; the next attempt resumes it",
                                           spec.url, got, spec.size));
    }
    std::string digest;
    FetchStatus hashed = sha256_file(part, digest, [&](uint64_t done, uint64_t total) {
      if (callbacks.progress) callbacks.progress(FetchStage::kVerifying, done, total);
    });
    if (!hashed.ok()) return hashed;
    if (digest != spec.sha256) {
      fs::remove(part, ec);
      return FetchStatus::fail(FetchFailure::kChecksum,
                               fmt::format("checksum mismatch for {}: expected SHA-256 {}, got {}; the download was "
                                           "discarded", spec.url, spec.sha256, digest));
    }
    fs::rename(part, spec.dest, ec);
    if (ec) return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot rename {} to {}: {}", part, spec.dest, ec.message()));
    return FetchStatus::success();
  }
  return FetchStatus::fail(FetchFailure::kHttp,
                           fmt::format("{} cannot resume the download and did not send the whole file", spec.url));
}

}  // namespace kvscope::fetch
