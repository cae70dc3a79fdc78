#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace kvscope {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{fmt::format("{}: not a regular file", path)};
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* m = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Error{fmt::format("{}: cannot map {} bytes: {}", path, file->size_, std::strerror(err))};
    }
    file->mapping_ = m;
  }
  ::close(fd);
  return file;
}

void MappedFile::release_resident_pages() const {
  if (mapping_ != nullptr) madvise(mapping_, size_, MADV_DONTNEED);  // advice: a failure changes nothing
}

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) munmap(mapping_, size_);
}

}  // namespace kvscope
