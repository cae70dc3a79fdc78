// Tensor element types as GGUF numbers them, with their block geometry.
// Shared by the model loader (to validate tensor tables) and the kernels (to
// pick a dequantiser / dot product). Ids and sizes: docs/model-formats.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvscope {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct TensorTypeTraits {
  std::string_view name;
  int64_t block_elems;  // elements per block (1 for plain floats)
  int64_t block_bytes;  // bytes per block
};

// Traits for a GGUF type id, or nullopt when kvscope does not know the id.
std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id);

// Traits of a known type (asserts it is known).
const TensorTypeTraits& traits_of(TensorType type);

// Bytes taken by one row of `num_elems` elements; num_elems must be a multiple
// of the type's block size.
inline size_t row_bytes(TensorType type, int64_t num_elems) {
  const TensorTypeTraits& t = traits_of(type);
  return static_cast<size_t>(num_elems / t.block_elems * t.block_bytes);
}

// Whether the CPU kernels can multiply with weights of this type.
bool is_supported_weight_type(TensorType type);

}  // namespace kvscope
