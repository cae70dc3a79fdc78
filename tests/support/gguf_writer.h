// GgufWriter: builds small GGUF files in memory for tests — valid ones (round
// trips, random tiny models) and, through the raw_* calls and byte helpers,
// malformed ones for the reader's error paths. Test-only: no validation beyond
// asserts on programmer errors in the typed calls.
//
//   GgufWriter w;
//   w.set_string("general.architecture", "llama");
//   w.set_u32("llama.block_count", 2);
//   w.add_f32_tensor("token_embd.weight", {8, 16}, values);
//   std::vector<uint8_t> bytes = w.build();   // or w.write(path)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/tensor_type.h"
#include "kvscope/result.h"
#include "model/gguf_file.h"

namespace kvscope::test {

// Little-endian byte appenders, for hand-made payloads.
void append_u8(std::vector<uint8_t>& out, uint8_t v);
void append_u32(std::vector<uint8_t>& out, uint32_t v);
void append_u64(std::vector<uint8_t>& out, uint64_t v);
void append_f32(std::vector<uint8_t>& out, float v);
void append_string(std::vector<uint8_t>& out, std::string_view s);  // u64 length + bytes

// A metadata value as it appears in a file: the type id, then `payload` (the
// bytes after the type id). Arrays of arrays nest these: an element's payload
// is written without its type id, as GGUF does.
struct GgufEncodedValue {
  uint32_t type = 0;
  std::vector<uint8_t> payload;
};

GgufEncodedValue gguf_scalar_u32(uint32_t v);
GgufEncodedValue gguf_string(std::string_view s);
GgufEncodedValue gguf_i32_array(std::span<const int32_t> v);
GgufEncodedValue gguf_string_array(std::span<const std::string> v);
// An array whose elements all have `element_type` (each element's type must match).
GgufEncodedValue gguf_array(GgufValueType element_type, std::span<const GgufEncodedValue> elements);

class GgufWriter {
 public:
  // Typed setters replace an existing key's value in place, else append.
  void set_u8(std::string_view key, uint8_t v);
  void set_i8(std::string_view key, int8_t v);
  void set_u16(std::string_view key, uint16_t v);
  void set_i16(std::string_view key, int16_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_string_array(std::string_view key, std::span<const std::string> v);
  void set_f32_array(std::string_view key, std::span<const float> v);
  void set_i32_array(std::string_view key, std::span<const int32_t> v);
  void set_u32_array(std::string_view key, std::span<const uint32_t> v);
  void set_value(std::string_view key, GgufEncodedValue v);
  // Appends a key/value with any type id and payload, duplicates included.
  void raw_kv(std::string_view key, uint32_t type, std::vector<uint8_t> payload);

  // A tensor of a known type; `bytes` must hold exactly its row_bytes * rows.
  void add_tensor(std::string_view name, TensorType type, std::vector<int64_t> dims,
                  std::vector<uint8_t> bytes);
  void add_f32_tensor(std::string_view name, std::vector<int64_t> dims, std::span<const float> values);
  // Anything at all: unknown type ids, bad dims, a forced offset (else placed
  // after the previous tensor). `bytes` is written as given.
  void raw_tensor(std::string_view name, uint32_t type_id, std::vector<uint64_t> dims,
                  std::vector<uint8_t> bytes, std::optional<uint64_t> offset = std::nullopt);

  // Header overrides for malformed files.
  void set_magic(std::string_view four_bytes) { magic_ = std::string(four_bytes); }
  void set_version(uint32_t v) { version_ = v; }
  void override_counts(std::optional<uint64_t> num_tensors, std::optional<uint64_t> num_kv) {
    num_tensors_override_ = num_tensors;
    num_kv_override_ = num_kv;
  }

  // The whole file. Tensors are laid out in order, each padded to `alignment`;
  // an alignment other than 32 also writes general.alignment (unless set).
  std::vector<uint8_t> build(size_t alignment = 32) const;
  Status write(const std::string& path, size_t alignment = 32) const;

  // Offsets in the last build() output, for patching bytes.
  size_t data_offset() const { return data_offset_; }
  size_t tensor_info_offset(size_t i) const { return tensor_info_offsets_.at(i); }

 private:
  struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> payload;
  };
  struct Tensor {
    std::string name;
    uint32_t type_id;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> bytes;
    std::optional<uint64_t> offset;
  };
  void set_encoded(std::string_view key, uint32_t type, std::vector<uint8_t> payload);

  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  std::string magic_ = "GGUF";
  uint32_t version_ = 3;
  std::optional<uint64_t> num_tensors_override_;
  std::optional<uint64_t> num_kv_override_;
  mutable size_t data_offset_ = 0;
  mutable std::vector<size_t> tensor_info_offsets_;
};

}  // namespace kvscope::test
