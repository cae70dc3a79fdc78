// Command-line file arguments (see file_args.h).
#include "file_args.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

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

namespace {

bool starts_with_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == "GGUF";
}

// access(2)'s answer in words, or empty when `path` may be written.
std::string write_refusal(const fs::path& path) {
  if (access(path.c_str(), W_OK) == 0) return {};
  return std::strerror(errno);
}

// Why the file `path` cannot be opened for writing, or empty: tried, since
// permissions do not tell (root passes access(2), yet cannot create a file in
// /proc). A new file is created and removed again; an existing regular file
// is opened to append, which changes nothing. Devices and pipes are not
// opened here (a pipe with no reader would block).
std::string open_refusal(const fs::path& path, bool exists) {
  std::error_code ec;
  if (exists && !fs::is_regular_file(path, ec)) return write_refusal(path);
  const int fd = exists ? open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)
                        : open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  close(fd);
  if (!exists) unlink(path.c_str());
  return {};
}

}  // namespace

Status check_output_file(const std::string& path, const std::vector<InputFile>& inputs) {
  if (path.empty()) return Error{"an empty path: give a file name"};
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Error{fmt::format("'{}' is a directory, not a file", path)};
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return Error{fmt::format("the folder of '{}' does not exist", path)};
  }
  // A link to a file not there yet is written through, creating its target.
  if (fs::is_symlink(path, ec) && !fs::exists(path, ec)) return Status::success();
  const bool exists = fs::exists(path, ec);
  if (exists) {
    for (const InputFile& input : inputs) {
      if (!input.path.empty() && fs::equivalent(path, input.path, ec)) {
        return Error{fmt::format("'{}' is {} this command reads; choose another path", path, input.what)};
      }
    }
    // Regular files only: reading a pipe or a terminal (/dev/stdout) to
    // look for the magic would block.
    if (fs::is_regular_file(path, ec) && starts_with_gguf_magic(path)) {
      return Error{fmt::format("'{}' is a GGUF model file; choose another path", path)};
    }
  }
  if (std::string why = open_refusal(path, exists); !why.empty()) {
    return Error{fmt::format("cannot write '{}': {}", path, why)};
  }
  return Status::success();
}

Status prepare_output_dir(const std::string& dir) {
  if (dir.empty()) return Error{"an empty path: give a folder name"};
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return Error{fmt::format("'{}' is a file, not a folder", dir)};
  }
  fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("cannot create the folder '{}': {}", dir, ec.message())};
  if (std::string why = write_refusal(dir); !why.empty()) {
    return Error{fmt::format("cannot write in '{}': {}", dir, why)};
  }
  return Status::success();
}

}  // namespace kvscope::cli
