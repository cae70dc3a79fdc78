// Loading the K/V tiles of paged attention into shared memory
// (paged_prefill.cu). A block walks tiles of kAttentionTile absolute positions
// of one KV head in position order; each tile's rows become f32 in
// k_s / v_s [kAttentionTile][head_dim + 1], which attend_tile
// (attention_tile.cuh) reads. The values are the exact conversions of the
// stored elements whichever way they travel, so how a tile is loaded changes
// no bit of the result.
//
// Why it is built this way: the first loader (an H200 profile: one decode row
// at ~190 positions took 31 us per layer) was latency bound. Per element it
// read the block table, divided a 64-bit position by the block size and
// loaded one scalar through a type switch, in ~5 dependent rounds per tile,
// and nothing was in flight while the warps attended. Now
//   - each key's byte offset is computed once per tile, by one lane of warp 0,
//     into shared memory, and the block-table entry it needs is read while
//     that warp attends the tile before (it is needed two tiles ahead);
//   - F32 / F16 / BF16 rows whose bytes are 16-byte aligned are copied raw
//     with cp.async, 16 bytes a copy, into a staging buffer one tile ahead:
//     tile i + 1's bytes are in flight while the block converts and attends
//     tile i. The conversion then runs in shared memory, a warp per key row
//     and lanes over d (no bank conflicts on either side);
//   - other rows (Q8_0, odd head dims, unaligned pools) are read element by
//     element from global memory through the same precomputed offsets.
//
// Barriers of one tile step (every thread of the block runs every step; the
// tile range is the same for the whole block):
//   wait for my copies of tile i  |  A  |  issue tile i + 1, convert tile i
//   | B | read tile i + 2's table entries, attend tile i, write their offsets.
// A orders the attends of tile i - 1 before k_s / v_s are overwritten and
// makes tile i's staged bytes (and offsets of tile i + 1) visible; B
// publishes k_s / v_s. Offsets and staging buffers alternate between two
// stages, and each stage is rewritten only after a barrier that follows its
// last read (the comments at each step say which).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/paged_attention.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/device_util.cuh"

namespace kvscope::cuda {

inline constexpr int32_t kCopyBytes = 16;  // one cp.async

// Where one KV head's rows of one sequence are: position p's K row at
// k + offset(p), its V row at v + offset(p).
struct KvHeadView {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  const int32_t* table = nullptr;  // the sequence's block ids, [positions / block_size]
  int32_t block_size = 0;
  int64_t slot_bytes = 0;  // a slot: every KV head's row of one position
  int64_t head_bytes = 0;  // this head's row within a slot
  int32_t row_bytes = 0;   // this head's row: head_dim elements
  int32_t head_dim = 0;
  KvCacheType type = KvCacheType::F32;
};

// The shared-memory buffers of the walk.
struct KvTileBuffers {
  float* k_s = nullptr;              // [kAttentionTile][head_dim + 1], f32
  float* v_s = nullptr;              // [kAttentionTile][head_dim + 1], f32
  uint8_t* staging = nullptr;        // vector path: [2 stages][K, V][kAttentionTile][row_bytes], 16-byte aligned
  int64_t* key_offsets_s = nullptr;  // [2 stages][kAttentionTile] byte offset of each key's row, -1 if not loaded
};

// Bytes of the staging buffer: two tiles (the one converted, the one in flight) of K and V rows.
__host__ __device__ inline size_t kv_staging_bytes(int64_t row_bytes) {
  return static_cast<size_t>(2 * 2 * kAttentionTile * row_bytes);
}

// Host: whether a layer's rows of head_dim elements can be copied 16 bytes at
// a time: a 16-bit or f32 type whose head rows are whole copies (so every
// slot and head offset is too) in pools that start 16-byte aligned.
inline bool kv_rows_copy_aligned(const PagedKvLayer& kv, int32_t head_dim) {
  if (kv.type != KvCacheType::F32 && kv.type != KvCacheType::F16 && kv.type != KvCacheType::BF16) return false;
  const size_t row_bytes = kv_row_bytes(kv.type, head_dim);
  return row_bytes % kCopyBytes == 0 && reinterpret_cast<uintptr_t>(kv.k) % kCopyBytes == 0 &&
         reinterpret_cast<uintptr_t>(kv.v) % kCopyBytes == 0;
}

__device__ inline KvHeadView kv_head_view(const PagedKvLayer& kv, const int32_t* table, int32_t num_kv_heads,
                                          int32_t kv_head, int32_t head_dim) {
  KvHeadView view;
  view.k = static_cast<const uint8_t*>(kv.k);
  view.v = static_cast<const uint8_t*>(kv.v);
  view.table = table;
  view.block_size = kv.block_size;
  view.slot_bytes = kv_bytes(kv.type, static_cast<int64_t>(num_kv_heads) * head_dim);
  view.head_bytes = kv_bytes(kv.type, static_cast<int64_t>(kv_head) * head_dim);
  view.row_bytes = static_cast<int32_t>(kv_bytes(kv.type, head_dim));
  view.head_dim = head_dim;
  view.type = kv.type;
  return view;
}

// slot = block_id * block_size + p % block_size; the row at slot * slot_bytes + head_bytes.
__device__ inline int64_t key_row_offset(const KvHeadView& src, int32_t block_id, int32_t p) {
  const int64_t slot = static_cast<int64_t>(block_id) * src.block_size + p % src.block_size;
  return slot * src.slot_bytes + src.head_bytes;
}

// cp.async (sm_80 and later): a 16-byte copy global -> shared that does not
// hold the thread; cp_async_wait_all waits for all of the thread's copies.
// Older architectures copy synchronously.
__device__ inline void cp_async_16(void* shared_dst, const void* global_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(global_src) : "memory");
#else
  *static_cast<uint4*>(shared_dst) = *static_cast<const uint4*>(global_src);
#endif
}

__device__ inline void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Starts the copies of a tile's K and V rows [row_lo, row_hi) (row j = key
// tile_start + j) into staging stage `stage`; the offsets of that tile are
// in key_offsets_s[stage]. Consecutive threads copy consecutive 16 bytes of
// a row (coalesced).
__device__ inline void issue_tile_copies(const KvHeadView& src, const KvTileBuffers& buf, int stage, int32_t row_lo,
                                         int32_t row_hi) {
  const int32_t row_bytes = src.row_bytes;
  const int32_t copies_per_row = row_bytes / kCopyBytes;
  const int64_t* offsets = buf.key_offsets_s + stage * kAttentionTile;
  uint8_t* k_dst = buf.staging + static_cast<size_t>(stage) * 2 * kAttentionTile * row_bytes;
  uint8_t* v_dst = k_dst + static_cast<size_t>(kAttentionTile) * row_bytes;
  for (int32_t e = row_lo * copies_per_row + static_cast<int32_t>(threadIdx.x); e < row_hi * copies_per_row;
       e += static_cast<int32_t>(blockDim.x)) {
    const int32_t j = e / copies_per_row;
    const int32_t at = e * kCopyBytes;                   // = j * row_bytes + (byte of the row)
    const int64_t from = offsets[j] + (at - j * row_bytes);
    cp_async_16(k_dst + at, src.k + from);
    cp_async_16(v_dst + at, src.v + from);
  }
}

// Rows [row_lo, row_hi) of staging stage `stage` -> f32 in k_s / v_s (exact widening).
template <typename Element, typename Widen>
__device__ inline void widen_staged_rows(const KvHeadView& src, const KvTileBuffers& buf, int stage, int32_t row_lo,
                                         int32_t row_hi, Widen widen) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  const int32_t hd = src.head_dim;
  const int32_t stride = tile_row_stride(hd);
  const uint8_t* k_raw = buf.staging + static_cast<size_t>(stage) * 2 * kAttentionTile * src.row_bytes;
  const uint8_t* v_raw = k_raw + static_cast<size_t>(kAttentionTile) * src.row_bytes;
  for (int32_t j = row_lo + warp; j < row_hi; j += num_warps) {
    const Element* k_row = reinterpret_cast<const Element*>(k_raw + static_cast<size_t>(j) * src.row_bytes);
    const Element* v_row = reinterpret_cast<const Element*>(v_raw + static_cast<size_t>(j) * src.row_bytes);
    for (int32_t d = lane; d < hd; d += kWarpSize) {
      buf.k_s[j * stride + d] = widen(k_row[d]);
      buf.v_s[j * stride + d] = widen(v_row[d]);
    }
  }
}

__device__ inline void convert_staged_rows(const KvHeadView& src, const KvTileBuffers& buf, int stage, int32_t row_lo,
                                           int32_t row_hi) {
  switch (src.type) {
    case KvCacheType::F32:
      widen_staged_rows<float>(src, buf, stage, row_lo, row_hi, [](float x) { return x; });
      break;
    case KvCacheType::F16:
      widen_staged_rows<uint16_t>(src, buf, stage, row_lo, row_hi, [](uint16_t x) { return f16_bits_to_f32(x); });
      break;
    case KvCacheType::BF16:
      widen_staged_rows<uint16_t>(src, buf, stage, row_lo, row_hi, [](uint16_t x) { return bf16_bits_to_f32(x); });
      break;
    case KvCacheType::Q8_0:  // never staged (kv_rows_copy_aligned)
      break;
  }
}

// The generic path: rows [row_lo, row_hi) element by element from the pool,
// through the offsets of stage `stage`.
__device__ inline void load_rows_from_pool(const KvHeadView& src, const KvTileBuffers& buf, int stage, int32_t row_lo,
                                           int32_t row_hi) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  const int32_t hd = src.head_dim;
  const int32_t stride = tile_row_stride(hd);
  const int64_t* offsets = buf.key_offsets_s + stage * kAttentionTile;
  for (int32_t j = row_lo + warp; j < row_hi; j += num_warps) {
    const uint8_t* k_row = src.k + offsets[j];
    const uint8_t* v_row = src.v + offsets[j];
    for (int32_t d = lane; d < hd; d += kWarpSize) {
      buf.k_s[j * stride + d] = load_kv_element(src.type, k_row, d);
      buf.v_s[j * stride + d] = load_kv_element(src.type, v_row, d);
    }
  }
}

// Warp 0, lane j: the offset of key tile_start + j if it is in [begin, stop), else -1.
__device__ inline void write_key_offsets(const KvHeadView& src, const KvTileBuffers& buf, int stage, int32_t tile_start,
                                         int32_t begin, int32_t stop) {
  const int32_t p = tile_start + static_cast<int32_t>(threadIdx.x);
  buf.key_offsets_s[stage * kAttentionTile + threadIdx.x] =
      p >= begin && p < stop ? key_row_offset(src, src.table[p / src.block_size], p) : -1;
}

// Walks the tiles covering keys [begin, stop) of one KV head in position
// order (tile starts at multiples of kAttentionTile) and calls
// attend(tile_start) with the tile's rows [max(tile_start, begin),
// min(tile_start + kAttentionTile, stop)) in buf.k_s / buf.v_s, row
// p - tile_start. Every thread of the block must call it with the same
// begin < stop; attend must not synchronise the block. Every key of [begin,
// stop) must be stored (it is read).
template <bool kVectorLoads, typename Attend>
__device__ inline void for_each_kv_tile(const KvHeadView& src, const KvTileBuffers& buf, int32_t begin, int32_t stop,
                                        Attend&& attend) {
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int32_t first_tile = begin - begin % kAttentionTile;
  // Prologue: the offsets of the first two tiles; then the first tile's copies.
  if (warp == 0) {
    write_key_offsets(src, buf, 0, first_tile, begin, stop);
    write_key_offsets(src, buf, 1, first_tile + kAttentionTile, begin, stop);
  }
  __syncthreads();
  if constexpr (kVectorLoads) {
    issue_tile_copies(src, buf, 0, max(first_tile, begin) - first_tile, min(first_tile + kAttentionTile, stop) - first_tile);
  }
  int stage = 0;  // tile i's offsets and staged bytes are in stage i % 2
  for (int32_t tile = first_tile; tile < stop; tile += kAttentionTile, stage ^= 1) {
    const int32_t row_lo = max(tile, begin) - tile;
    const int32_t row_hi = min(tile + kAttentionTile, stop) - tile;
    const int32_t next = tile + kAttentionTile;
    if constexpr (kVectorLoads) cp_async_wait_all();  // my copies of this tile have landed
    // A: every warp is done attending the previous tile (k_s / v_s are free);
    // every thread's copies of this tile are visible; the offsets written
    // after the previous tile's attend (next tile's) are visible.
    __syncthreads();
    if constexpr (kVectorLoads) {
      // staging[stage ^ 1] was last read converting the previous tile, before the previous B.
      if (next < stop) issue_tile_copies(src, buf, stage ^ 1, 0, min(next + kAttentionTile, stop) - next);
      convert_staged_rows(src, buf, stage, row_lo, row_hi);
    } else {
      load_rows_from_pool(src, buf, stage, row_lo, row_hi);
    }
    __syncthreads();  // B: the tile is in k_s / v_s
    // Warp 0 prepares the tile after next: its block-table entries are read
    // now, in flight during the attend; its offsets go to this stage, whose
    // last reader (this tile's copies or loads) ran before B.
    const int32_t ahead = tile + 2 * kAttentionTile + lane;
    const bool ahead_stored = warp == 0 && ahead >= begin && ahead < stop;
    const int32_t ahead_block = ahead_stored ? src.table[ahead / src.block_size] : 0;
    attend(tile);
    if (warp == 0) buf.key_offsets_s[stage * kAttentionTile + lane] = ahead_stored ? key_row_offset(src, ahead_block, ahead) : -1;
  }
}

}  // namespace kvscope::cuda
