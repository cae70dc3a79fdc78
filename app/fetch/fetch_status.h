// FetchStatus: how a download or install step ended. Like kvscope::Status
// (engine/include/kvscope/result.h) a message a person can act on, plus the
// kind of failure, because callers act on it: a cancel is not an error to show,
// a network failure can be resumed, a checksum mismatch cannot.
#pragma once

#include <string>
#include <utility>

namespace kvscope::fetch {

enum class FetchFailure {
  kNone,
  kCancelled,  // the cancel callback said so; a partial download is kept
  kNetwork,    // no connection, DNS, TLS, timeout, connection dropped
  kHttp,       // the server answered with an error status (404, 500, ...)
  kSize,       // the file is not the pinned size
  kChecksum,   // the file's SHA-256 is not the pinned one
  kDisk,       // cannot create, write or rename a file (disk full, permissions)
  kArchive,    // the archive cannot be read or lacks the member
};

struct FetchStatus {
  FetchFailure failure = FetchFailure::kNone;
  std::string message;  // empty when ok

  bool ok() const { return failure == FetchFailure::kNone; }
  static FetchStatus success() { return {}; }
  static FetchStatus fail(FetchFailure failure, std::string message) { return {failure, std::move(message)}; }
};

// What a long step is doing, for progress reports.
enum class FetchStage {
  kDownloading,  // bytes of the archive received (resumed bytes included)
  kVerifying,    // bytes hashed
  kExtracting,   // bytes of the model written from the archive
};

const char* stage_name(FetchStage stage);  // "downloading", "verifying", "extracting"

}  // namespace kvscope::fetch
