// SafetensorsFile: a read-only, validated view of one .safetensors file, and
// SafetensorsCheckpoint: the tensors of a Hugging Face model directory, which
// may be one model.safetensors or several shards listed in
// model.safetensors.index.json.
//
// Format (huggingface/safetensors): u64 little-endian header length N, then N
// bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end)}, and
// optionally "__metadata__": {string: string}}, then the data section; offsets
// are relative to the data section. Everything is checked while opening (header
// inside the file, offsets inside the data section and of the size shape x dtype
// implies, no overlaps, no unindexed bytes, known dtype), so tensor data of an
// opened file is always safe to read. Errors name the file and the tensor.
//
// Tests: tests/engine/model/hf_model_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvscope/result.h"

namespace kvscope {

class MappedFile;

// Every dtype the safetensors format defines. kvscope computes with F32, F16
// and BF16; the others are accepted in a file (a checkpoint may carry integer
// buffers) but refused by the model loader if a weight has one.
enum class SafetensorsDtype {
  BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2,
};

std::string_view safetensors_dtype_name(SafetensorsDtype dtype);
size_t safetensors_dtype_size(SafetensorsDtype dtype);  // bytes per element

struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;     // outermost first; the last dim is contiguous (row-major)
  const uint8_t* data = nullptr;  // points into the mapping (any alignment)
  size_t num_bytes = 0;

  int64_t num_elements() const;
};

class SafetensorsFile {
 public:
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Maps `path` read-only and validates it.
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // MappedFile::release_resident_pages of the file open() mapped (none: nothing).
  void release_resident_pages() const;
  // Parses a buffer the caller keeps alive (tests); `name` is used in messages.
  static Result<std::unique_ptr<SafetensorsFile>> from_memory(const uint8_t* data, size_t size,
                                                              std::string name);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // header order
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  Status parse();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> mapping_;  // set when open() mapped the file
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> tensors_ index
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory, across shards.
class SafetensorsCheckpoint {
 public:
  // Opens dir/model.safetensors.index.json and every shard it names, or else
  // dir/model.safetensors. Shard names must be plain file names in `dir`; a
  // tensor the index names must be in its shard, and no tensor may be in two.
  static Result<std::unique_ptr<SafetensorsCheckpoint>> open_dir(const std::string& dir);

  const SafetensorsTensor* find(std::string_view name) const;
  // The shard a tensor came from (for messages); "" if unknown.
  std::string file_of(std::string_view name) const;
  size_t num_tensors() const { return index_.size(); }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<size_t, const SafetensorsTensor*>, std::less<>> index_;  // name -> (file, tensor)
};

}  // namespace kvscope
