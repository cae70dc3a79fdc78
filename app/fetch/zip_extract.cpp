// See zip_extract.h.
#include "fetch/zip_extract.h"

#include <zip.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace kvscope::fetch {
namespace {

FetchStatus archive_error(const std::string& archive, const std::string& what) {
  return FetchStatus::fail(FetchFailure::kArchive, fmt::format("cannot read {}: {}", archive, what));
}

FetchStatus copy_member(zip_t* zip, const std::string& archive, const std::string& member, const std::string& dest,
                        const std::function<void(uint64_t, uint64_t)>& progress,
                        const std::function<bool()>& cancelled) {
  const zip_int64_t index = zip_name_locate(zip, member.c_str(), 0);
  if (index < 0) return archive_error(archive, fmt::format("it has no member {}", member));
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(zip, static_cast<zip_uint64_t>(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
    return archive_error(archive, zip_strerror(zip));
  }
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> in(zip_fopen_index(zip, static_cast<zip_uint64_t>(index), 0),
                                                        &zip_fclose);
  if (!in) return archive_error(archive, zip_strerror(zip));
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(dest.c_str(), "wb"), &std::fclose);
  if (!out) {
    return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot write {}: {}", dest, std::strerror(errno)));
  }
  std::vector<char> buf(1 << 20);
  uint64_t done = 0;
  for (;;) {
    if (cancelled && cancelled()) return FetchStatus::fail(FetchFailure::kCancelled, "cancelled while unpacking");
    const zip_int64_t n = zip_fread(in.get(), buf.data(), buf.size());
    if (n < 0) return archive_error(archive, fmt::format("{}: {}", member, zip_file_strerror(in.get())));  // CRC too
    if (n == 0) break;
    if (std::fwrite(buf.data(), 1, static_cast<size_t>(n), out.get()) != static_cast<size_t>(n)) {
      return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot write {}: {}", dest, std::strerror(errno)));
    }
    done += static_cast<uint64_t>(n);
    if (progress) progress(done, st.size);
  }
  if (std::fclose(out.release()) != 0) {
    return FetchStatus::fail(FetchFailure::kDisk, fmt::format("cannot write {}: {}", dest, std::strerror(errno)));
  }
  return FetchStatus::success();
}

}  // namespace

FetchStatus extract_zip_member(const std::string& archive, const std::string& member, const std::string& dest,
                               const std::function<void(uint64_t, uint64_t)>& progress,
                               const std::function<bool()>& cancelled) {
  int error_code = 0;
  zip_t* zip = zip_open(archive.c_str(), ZIP_RDONLY, &error_code);
  if (!zip) {
    zip_error_t error;
    zip_error_init_with_code(&error, error_code);
    FetchStatus status = archive_error(archive, zip_error_strerror(&error));
    zip_error_fini(&error);
    return status;
  }
  FetchStatus status = copy_member(zip, archive, member, dest, progress, cancelled);
  zip_discard(zip);  // opened read-only: nothing to write back
  if (!status.ok()) {
    std::error_code ec;
    std::filesystem::remove(dest, ec);
  }
  return status;
}

}  // namespace kvscope::fetch
