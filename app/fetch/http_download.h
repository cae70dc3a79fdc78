// download_file: one HTTP(S) download with libcurl into DEST, through
// DEST.part so that an interrupted download resumes (an HTTP Range request
// for the bytes still missing). A server that ignores the range answers 200
// with the whole file, and the .part is then rewritten from the start. The
// result must have the pinned size and SHA-256 before it becomes DEST; a
// mismatch deletes the .part (resuming it would only repeat the bad bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fetch/fetch_status.h"

namespace kvscope::fetch {

struct DownloadSpec {
  std::string url;
  std::string dest;            // final path; DEST.part while downloading
  uint64_t size = 0;           // pinned size in bytes (> 0)
  std::string sha256;          // pinned SHA-256, lowercase hex
};

struct DownloadCallbacks {
  // Optional. Called often from the downloading thread (done counts bytes
  // already in the .part; total is the pinned size).
  std::function<void(FetchStage stage, uint64_t done, uint64_t total)> progress;
  // Optional. Polled at least once a second; true aborts with kCancelled and
  // keeps the .part for the next attempt.
  std::function<bool()> cancelled;
};

// Downloads spec.url to spec.dest (see the file comment). A dest that already
// exists is replaced.
FetchStatus download_file(const DownloadSpec& spec, const DownloadCallbacks& callbacks);

// "DEST.part".
std::string partial_path(const std::string& dest);

}  // namespace kvscope::fetch
