// The AMX tile configuration every AMX kernel of this process shares
// (packed_matmul_amx.cpp, kquant_matmul_amx.cpp), loaded once per thread:
// a thread has one configuration, so two kernels configuring tiles their own
// way would undo each other. Include only from files built with -mamx-tile.
//   tile 0: A, 16 tokens x 32 activation bytes (one block of 32)
//   tile 1: B, 8 x 64 bytes (a block's 8 weight vectors: K = 32, 16 rows)
//   tile 2: C, 16 tokens x 16 int32
//   tile 3: A half, 16 tokens x 16 bytes (half a block)
//   tile 4: B half, 4 x 64 bytes (K = 16)
//   tile 5: a second C, 16 x 16 int32
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace kvscope::detail {

struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {32, 64, 64, 16, 64, 64};
  uint8_t rows[16] = {16, 8, 16, 16, 4, 16};
};

inline void configure_amx_tiles() {
  thread_local bool configured = false;
  if (configured) return;
  static const AmxTileConfig config;
  _tile_loadconfig(&config);
  configured = true;
}

}  // namespace kvscope::detail
