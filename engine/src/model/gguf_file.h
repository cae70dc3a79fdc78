// GgufFile: a read-only, validated view of a GGUF v2/v3 model file.
//
// The file is memory-mapped; metadata is parsed into GgufValues, tensor data is
// never copied (GgufTensorInfo::data points into the mapping). Every structural
// rule in docs/model-formats.md ("GGUF container") is checked while parsing,
// so a GgufFile that opened is safe to read: every tensor's bytes lie inside the
// file, have the size its type and dims imply, and are aligned. Bad input returns
// an Error naming the file, the key or tensor, and what was expected.
//
// Tests: tests/engine/model/gguf_file_test.cpp; fuzzing: scripts/run_fuzz.sh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/tensor_type.h"
#include "kvscope/result.h"

namespace kvscope {

class MappedFile;

enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u8", "string", "array", ...; "type 99" style text is the caller's job.
std::string_view gguf_value_type_name(GgufValueType type);
// Bytes per element of a fixed-size type (0 for String and Array).
size_t gguf_value_type_size(GgufValueType type);

namespace detail {
// One little-endian scalar of fixed-size type `t`, in GgufValue's bit
// convention: signed integers sign-extended, unsigned zero-extended, floats
// raw. Shared by the parser (gguf_file.cpp) and GgufValue (gguf_value.cpp).
uint64_t gguf_decode_scalar_bits(GgufValueType t, const uint8_t* p);
}  // namespace detail

// One metadata value: a scalar, a string, or an array. Arrays are stored by
// element kind so that big vocabularies stay compact: numbers and bools as their
// packed little-endian bytes, strings as one vector<string>, nested arrays as a
// vector<GgufValue>.
class GgufValue {
 public:
  GgufValueType type() const { return type_; }
  bool is_array() const { return type_ == GgufValueType::Array; }
  bool is_integer() const;  // a scalar of any integer type (not bool)

  // Scalars. Each returns nullopt / nullptr when the value is not of a fitting type.
  std::optional<int64_t> as_int() const;    // any integer type (u64 above INT64_MAX: nullopt)
  std::optional<uint64_t> as_uint() const;  // any non-negative integer
  std::optional<double> as_float() const;   // f32, f64, or any integer
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;

  // Arrays (all return 0 / nullptr / nullopt on a non-array).
  GgufValueType element_type() const { return element_type_; }
  size_t array_size() const { return count_; }
  const std::vector<std::string>* strings() const;    // element type String
  const std::vector<GgufValue>* arrays() const;       // element type Array
  // Raw little-endian bytes of a numeric or bool array: [array_size() * element size].
  const std::vector<uint8_t>* packed() const;
  std::optional<int64_t> int_at(size_t i) const;     // integer element i
  std::optional<double> float_at(size_t i) const;    // numeric element i
  std::optional<std::vector<int64_t>> to_int_vector() const;  // integer arrays
  std::optional<std::vector<float>> to_float_vector() const;  // numeric arrays

  // Short rendering: "u32 30", "string \"llama\"", "array[string; 49152]".
  std::string describe() const;

 private:
  friend class GgufParser;
  GgufValueType type_ = GgufValueType::U8;
  GgufValueType element_type_ = GgufValueType::U8;  // arrays only
  size_t count_ = 0;                                // arrays only
  uint64_t bits_ = 0;  // scalar: zero-extended unsigned, or sign-extended signed, or the float's bits
  std::string string_;
  std::vector<uint8_t> packed_;        // [count_ * element size]: numeric / bool arrays
  std::vector<std::string> strings_;   // [count_]: string arrays
  std::vector<GgufValue> arrays_;      // [count_]: arrays of arrays
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // [n_dims], dims[0] is the contiguous row length
  TensorType type = TensorType::F32;
  uint64_t offset = 0;          // from the start of the data section
  const uint8_t* data = nullptr;  // points into the mapping
  size_t num_bytes = 0;

  int64_t num_elements() const;
  int64_t num_rows() const;  // product of dims[1..]
};

class GgufFile {
 public:
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // Maps `path` read-only and parses it.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // MappedFile::release_resident_pages of the file open() mapped (none: nothing).
  void release_resident_pages() const;
  // Parses a buffer the caller keeps alive (fuzzing, tests); `name` is used in messages.
  static Result<std::unique_ptr<GgufFile>> from_memory(const uint8_t* data, size_t size,
                                                       std::string name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  size_t data_offset() const { return data_offset_; }  // start of the tensor data section
  // Accepted oddities (e.g. tensor names of 64 bytes or more), for `model-info`.
  const std::vector<std::string>& warnings() const { return warnings_; }

  const GgufValue* find(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;   // any integer type
  std::optional<double> get_float(std::string_view key) const;  // f32/f64, or an integer
  std::optional<bool> get_bool(std::string_view key) const;
  // nullptr if absent or not an array of strings.
  const std::vector<std::string>* get_string_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

  size_t num_metadata() const { return metadata_.size(); }
  // Key and value pairs in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  // Key and a short rendering of the value, in file order, for `model-info`.
  std::vector<std::pair<std::string, std::string>> describe_metadata() const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> mapping_;  // set when open() mapped the file

  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::string> warnings_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;  // file order
  std::map<std::string, size_t, std::less<>> key_index_;     // key -> metadata_ index
  std::vector<GgufTensorInfo> tensors_;                      // file order
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> tensors_ index
};

}  // namespace kvscope
