// kernels/cuda/dequantize_bf16: Q4_1 / Q8_0 weight tiles and f32 activations
// to bf16, exact bits against the reference dequantisation
// (kernels/reference/dequantize.h) rounded by the reference f32_to_bf16
// (round to nearest even). The output buffer is poisoned and one row longer
// than the tile, so an element never written, or written past the tile,
// fails.
#include "kernels/cuda/dequantize_bf16.cuh"

#include <cstring>
#include <limits>

#include "kernels/reference/dequantize.h"
#include "kernels/reference/half.h"
#include "cuda_test_util.h"
#include "quant_blocks.h"

namespace kvscope {
namespace {

using cuda_test::DeviceBuffer;

TEST(CudaDequantizeBf16, WeightTilesAreExact) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(90);
  for (TensorType type : {TensorType::Q4_1, TensorType::Q8_0}) {
    for (int64_t row_len : {int64_t{32}, int64_t{32 * 37}, int64_t{576}}) {
      for (int64_t num_rows : cuda_test::kOddSizes) {
        const std::vector<uint8_t> w = cuda_test::random_quant_rows(type, num_rows, row_len, rng);
        const size_t row_bytes = w.size() / static_cast<size_t>(num_rows);
        DeviceBuffer<uint8_t> dw(w);
        // Tiles: the whole matrix, and rows [first, first + count) from the middle.
        const int64_t first = num_rows / 3;
        for (const auto& [tile_first, tile_rows] :
             std::vector<std::pair<int64_t, int64_t>>{{0, num_rows}, {first, num_rows - first}, {first, 1}}) {
          SCOPED_TRACE(testing::Message() << traits_of(type).name << " len=" << row_len << " rows=" << num_rows
                                          << " tile " << tile_first << "+" << tile_rows);
          std::vector<uint16_t> want(static_cast<size_t>((tile_rows + 1) * row_len), 0xffff);
          std::vector<float> row(static_cast<size_t>(row_len));
          for (int64_t r = 0; r < tile_rows; ++r) {
            dequantize_row_ref(type, &w[static_cast<size_t>(tile_first + r) * row_bytes], row.data(), row_len);
            for (int64_t c = 0; c < row_len; ++c) want[static_cast<size_t>(r * row_len + c)] = f32_to_bf16(row[c]);
          }
          DeviceBuffer<uint16_t> dout(want.size());
          CUDA_OK(dout.poison());
          LAUNCH_OK(cuda::dequantize_rows_bf16(type, dw.get(), row_len, tile_first, tile_rows, dout.get(), nullptr));
          EXPECT_TRUE(dout.download() == want);
        }
      }
    }
  }
}

TEST(CudaDequantizeBf16, ActivationsRoundToNearestEven) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(91);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{54}, int64_t{97}, int64_t{300 * 576}}) {
    std::vector<float> x = cuda_test::random_floats(static_cast<size_t>(n), rng, -3.0f, 3.0f);
    // Halfway cases (ties go to even), infinities, signed zero, a subnormal, the largest float.
    const uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u,
                                 0x7f7fffffu};
    for (size_t i = 0; i < std::size(specials) && i < x.size(); ++i) std::memcpy(&x[i], &specials[i], 4);
    std::vector<uint16_t> want(x.size() + 1, 0xffff);
    for (size_t i = 0; i < x.size(); ++i) want[i] = f32_to_bf16(x[i]);
    DeviceBuffer<float> dx(x);
    DeviceBuffer<uint16_t> dout(want.size());
    CUDA_OK(dout.poison());
    LAUNCH_OK(cuda::f32_to_bf16(dx.get(), n, dout.get(), nullptr));
    EXPECT_TRUE(dout.download() == want) << "n=" << n;
  }
}

}  // namespace
}  // namespace kvscope
