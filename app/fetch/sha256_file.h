// SHA-256 of a file with OpenSSL's libcrypto, in lowercase hex.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fetch/fetch_status.h"

namespace kvscope::fetch {

// Hashes `path` into `hex_out`. `progress(done, total)` is called every few
// MiB when given. Fails with kDisk when the file cannot be read.
FetchStatus sha256_file(const std::string& path, std::string& hex_out,
                        const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace kvscope::fetch
