// Host side of the CUDA paged-attention tests: a decode problem (one query
// per sequence, K/V as the cache type stores them, the f64 reference output)
// and its K/V paged into a pool of shuffled blocks, laid out as the CPU
// storage lays them (slot = block * block_size + offset, rows of
// kv_row_bytes). paged_attention_test.cpp feeds the same pool to the CUDA
// kernel and, without a device, to the CPU kernel, which checks this harness.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/reference/attention.h"
#include "cuda_test_util.h"

namespace kvscope::cuda_test {

struct DecodeProblem {
  AttentionShape shape;
  KvCacheType type = KvCacheType::F32;
  std::vector<int32_t> positions;        // [num_seqs]
  std::vector<float> q;                  // [num_seqs][num_heads * head_dim]
  std::vector<std::vector<float>> k, v;  // per sequence [pos + 1][num_kv_heads * head_dim], as stored
  std::vector<float> ref;                // [num_seqs][num_heads * head_dim]
};

inline DecodeProblem make_decode_problem(AttentionShape shape, KvCacheType type, std::vector<int32_t> positions,
                                         std::mt19937& rng) {
  DecodeProblem p;
  p.shape = shape;
  p.type = type;
  p.positions = std::move(positions);
  const size_t q_row = static_cast<size_t>(shape.num_heads) * shape.head_dim;
  const int32_t kv_row = shape.num_kv_heads * shape.head_dim;
  p.q = random_floats(p.positions.size() * q_row, rng, -2.0f, 2.0f);
  p.ref.assign(p.q.size(), 0.0f);
  std::vector<uint8_t> stored(kv_row_bytes(type, kv_row));
  for (size_t s = 0; s < p.positions.size(); ++s) {
    const int32_t n = p.positions[s] + 1;
    for (auto* kv : {&p.k, &p.v}) {
      std::vector<float> rows = random_floats(static_cast<size_t>(n) * kv_row, rng, -2.0f, 2.0f);
      for (int32_t i = 0; i < n; ++i) {  // round trip through the cache type
        store_kv_row(type, &rows[static_cast<size_t>(i) * kv_row], kv_row, stored.data());
        load_kv_row(type, stored.data(), kv_row, &rows[static_cast<size_t>(i) * kv_row]);
      }
      kv->push_back(std::move(rows));
    }
    attention_ref(&p.q[s * q_row], &p.positions[s], 1, p.k[s].data(), p.v[s].data(), shape.num_heads,
                  shape.num_kv_heads, shape.head_dim, shape.scale, shape.sliding_window, &p.ref[s * q_row],
                  shape.softcap);
  }
  return p;
}

struct PagedPool {
  int32_t block_size = 0;
  std::vector<uint8_t> k, v;          // [num_blocks][block_size][kv_row_bytes]; unused slots 0xff
  std::vector<int32_t> table_start;   // [num_seqs + 1]
  std::vector<int32_t> block_ids;     // [table_start.back()], distinct, shuffled
};

inline PagedPool page_problem(const DecodeProblem& p, int32_t block_size, std::mt19937& rng) {
  PagedPool pool;
  pool.block_size = block_size;
  const int32_t kv_row = p.shape.num_kv_heads * p.shape.head_dim;
  const size_t slot_bytes = kv_row_bytes(p.type, kv_row);
  pool.table_start = {0};
  for (int32_t pos : p.positions) pool.table_start.push_back(pool.table_start.back() + pos / block_size + 1);
  const int32_t num_blocks = pool.table_start.back() + 3;  // a few blocks nobody uses
  std::vector<int32_t> order(static_cast<size_t>(num_blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  pool.block_ids.assign(order.begin(), order.begin() + pool.table_start.back());
  pool.k.assign(static_cast<size_t>(num_blocks) * block_size * slot_bytes, 0xff);
  pool.v = pool.k;
  for (size_t s = 0; s < p.positions.size(); ++s) {
    for (int32_t i = 0; i <= p.positions[s]; ++i) {
      const size_t slot =
          static_cast<size_t>(pool.block_ids[pool.table_start[s] + i / block_size]) * block_size + i % block_size;
      store_kv_row(p.type, &p.k[s][static_cast<size_t>(i) * kv_row], kv_row, &pool.k[slot * slot_bytes]);
      store_kv_row(p.type, &p.v[s][static_cast<size_t>(i) * kv_row], kv_row, &pool.v[slot * slot_bytes]);
    }
  }
  return pool;
}

inline AttentionShape decode_shape(int32_t num_heads, int32_t num_kv_heads, int32_t head_dim, int32_t window = 0,
                                   float softcap = 0.0f) {
  return AttentionShape{num_heads, num_kv_heads, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim)), window,
                        softcap};
}

}  // namespace kvscope::cuda_test
