// MappedFile: a regular file mapped read-only into memory, unmapped on
// destruction. The model readers (GGUF, safetensors) parse the bytes in place
// and hand out pointers into the mapping, so weights are never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kvscope/result.h"

namespace kvscope {

class MappedFile {
 public:
  // Errors name the file: cannot open, not a regular file, cannot map.
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(mapping_); }
  size_t size() const { return size_; }
  // Drops the pages of the mapping this process holds (madvise DONTNEED):
  // the bytes stay readable, read again from the file if touched. For after
  // the weights were copied where they are used, so that the file's pages
  // do not count twice in the process's memory.
  void release_resident_pages() const;

 private:
  MappedFile() = default;
  void* mapping_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

}  // namespace kvscope
