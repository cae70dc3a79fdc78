// See sha256_file.h.
#include "fetch/sha256_file.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace kvscope::fetch {

FetchStatus sha256_file(const std::string& path, std::string& hex_out,
                        const std::function<void(uint64_t, uint64_t)>& progress) {
  std::error_code ec;
  const uint64_t total = std::filesystem::file_size(path, ec);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (ec || !file) {
    return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return FetchStatus::fail(FetchFailure::kDisk, "OpenSSL cannot start a SHA-256 digest");
  }
  std::vector<unsigned char> buf(1 << 20);
  uint64_t done = 0;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), file.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
    done += n;
    if (progress && done % (8u << 20) < n) progress(done, total);
  }
  if (std::ferror(file.get())) {
    return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  hex_out.clear();
  for (unsigned int i = 0; i < len; ++i) hex_out += fmt::format("{:02x}", digest[i]);
  if (progress) progress(done, total);
  return FetchStatus::success();
}

}  // namespace kvscope::fetch
