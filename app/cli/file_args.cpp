// Command-line file arguments (see file_args.h).
#include "file_args.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kvscope::cli {
namespace fs = std::filesystem;

Result<std::string> read_file_arg(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) return Error{fmt::format("'{}' is a directory, not a file", path)};
  if (!fs::exists(st)) return Error{fmt::format("'{}' does not exist", path)};
  // Regular files only: a pipe or /dev/stdin has no size to check up front.
  if (fs::is_regular_file(st)) {
    const auto size = static_cast<int64_t>(fs::file_size(path, ec));
    if (!ec && size > max_bytes) {
      return Error{fmt::format("'{}' is {:.1f} MiB: text files are read up to {} MiB (is it a text file?)", path,
                               static_cast<double>(size) / (1 << 20), max_bytes >> 20)};
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Error{fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  return buffer.str();
}

Status check_output_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Error{fmt::format("'{}' is a directory, not a file", path)};
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return Error{fmt::format("the folder of '{}' does not exist", path)};
  }
  return Status::success();
}

}  // namespace kvscope::cli
