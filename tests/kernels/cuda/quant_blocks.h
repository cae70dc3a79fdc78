// Random rows of GGUF Q8_0 / Q4_1 blocks for the CUDA weight-kernel tests:
// scales drawn like real weights' (small positive d, Q4_1 min below zero),
// quants uniformly random, so every nibble and int8 value occurs.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/reference/half.h"
#include "kernels/tensor_type.h"

namespace kvscope::cuda_test {

// num_rows rows of row_len elements (a multiple of 32) in `type` (Q8_0 or Q4_1).
inline std::vector<uint8_t> random_quant_rows(TensorType type, int64_t num_rows, int64_t row_len, std::mt19937& rng) {
  const int64_t block_bytes = type == TensorType::Q8_0 ? 34 : 20;
  const int64_t num_blocks = num_rows * (row_len / 32);
  std::vector<uint8_t> bytes(static_cast<size_t>(num_blocks * block_bytes));
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  std::uniform_real_distribution<float> min(-0.15f, 0.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t b = 0; b < num_blocks; ++b) {
    uint8_t* block = &bytes[static_cast<size_t>(b * block_bytes)];
    const uint16_t d = f32_to_fp16(scale(rng));
    std::memcpy(block, &d, 2);
    int64_t first_quant = 2;
    if (type == TensorType::Q4_1) {
      const uint16_t m = f32_to_fp16(min(rng));
      std::memcpy(block + 2, &m, 2);
      first_quant = 4;
    }
    for (int64_t i = first_quant; i < block_bytes; ++i) block[i] = static_cast<uint8_t>(byte(rng));
  }
  return bytes;
}

}  // namespace kvscope::cuda_test
