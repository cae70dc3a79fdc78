#include "kernels/tensor_type.h"

#include <array>
#include <cassert>

namespace kvscope {
namespace {

struct Entry {
  uint32_t id;
  TensorTypeTraits traits;
};

constexpr std::array<Entry, 15> kTypes = {{
    {0, {"F32", 1, 4}},
    {1, {"F16", 1, 2}},
    {2, {"Q4_0", 32, 18}},
    {3, {"Q4_1", 32, 20}},
    {6, {"Q5_0", 32, 22}},
    {7, {"Q5_1", 32, 24}},
    {8, {"Q8_0", 32, 34}},
    {9, {"Q8_1", 32, 36}},
    {10, {"Q2_K", 256, 84}},
    {11, {"Q3_K", 256, 110}},
    {12, {"Q4_K", 256, 144}},
    {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},
    {15, {"Q8_K", 256, 292}},
    {30, {"BF16", 1, 2}},
}};

}  // namespace

std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id) {
  for (const Entry& e : kTypes) {
    if (e.id == type_id) return e.traits;
  }
  return std::nullopt;
}

const TensorTypeTraits& traits_of(TensorType type) {
  for (const Entry& e : kTypes) {
    if (e.id == static_cast<uint32_t>(type)) return e.traits;
  }
  assert(false && "traits_of: unknown tensor type");
  return kTypes[0].traits;
}

bool is_supported_weight_type(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

}  // namespace kvscope
