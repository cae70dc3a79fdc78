// Host side of the CUDA prefill and cascade attention tests: a mixed batch of
// sequences (each with a context of stored K/V and its last num_rows
// positions as query rows: a decode row, a prefill chunk or a whole prompt),
// the f64 reference output, the K/V paged into shuffled blocks with the
// shared prefixes of cascade groups in the same physical blocks, and the
// cascade groups the engine's planner would form for them.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/reference/attention.h"
#include "cuda_test_util.h"
#include "paged_problem.h"

namespace kvscope::cuda_test {

struct SeqSpec {
  int32_t context = 0;           // positions [0, context) are stored
  int32_t num_rows = 0;          // query rows at positions [context - num_rows, context)
  int32_t shares_from = -1;      // an earlier sequence whose first shared_positions K/V this one holds
  int32_t shared_positions = 0;  // (same values; whole blocks of them in the same physical blocks)
};

struct PrefillProblem {
  AttentionShape shape;
  KvCacheType type = KvCacheType::F32;
  std::vector<SeqSpec> seqs;
  std::vector<int32_t> query_start;      // [num_seqs + 1]
  std::vector<int32_t> positions;        // [num_tokens]
  std::vector<float> q;                  // [num_tokens][num_heads * head_dim]
  std::vector<std::vector<float>> k, v;  // per sequence [context][num_kv_heads * head_dim], as stored
  std::vector<float> ref;                // [num_tokens][num_heads * head_dim]

  size_t row_floats() const { return static_cast<size_t>(shape.num_heads) * shape.head_dim; }
  int32_t num_tokens() const { return query_start.back(); }
};

inline PrefillProblem make_prefill_problem(AttentionShape shape, KvCacheType type, std::vector<SeqSpec> seqs,
                                           std::mt19937& rng) {
  PrefillProblem p;
  p.shape = shape;
  p.type = type;
  p.seqs = std::move(seqs);
  const int32_t kv_row = shape.num_kv_heads * shape.head_dim;
  std::vector<uint8_t> stored(kv_row_bytes(type, kv_row));
  p.query_start = {0};
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const SeqSpec& spec = p.seqs[s];
    for (int32_t i = spec.context - spec.num_rows; i < spec.context; ++i) p.positions.push_back(i);
    p.query_start.push_back(static_cast<int32_t>(p.positions.size()));
    for (auto* kv : {&p.k, &p.v}) {
      std::vector<float> rows = random_floats(static_cast<size_t>(spec.context) * kv_row, rng, -2.0f, 2.0f);
      for (int32_t i = 0; i < spec.context; ++i) {  // round trip through the cache type
        store_kv_row(type, &rows[static_cast<size_t>(i) * kv_row], kv_row, stored.data());
        load_kv_row(type, stored.data(), kv_row, &rows[static_cast<size_t>(i) * kv_row]);
      }
      if (spec.shares_from >= 0) {  // the shared prefix: the leader's values
        const std::vector<float>& lead = (*kv)[static_cast<size_t>(spec.shares_from)];
        std::copy(lead.begin(), lead.begin() + static_cast<size_t>(spec.shared_positions) * kv_row, rows.begin());
      }
      kv->push_back(std::move(rows));
    }
  }
  p.q = random_floats(p.positions.size() * p.row_floats(), rng, -2.0f, 2.0f);
  p.ref.assign(p.q.size(), 0.0f);
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const size_t at = static_cast<size_t>(p.query_start[s]) * p.row_floats();
    attention_ref(&p.q[at], &p.positions[static_cast<size_t>(p.query_start[s])], p.seqs[s].num_rows,
                  p.k[s].data(), p.v[s].data(), shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.scale,
                  shape.sliding_window, &p.ref[at], shape.softcap);
  }
  return p;
}

// Rows [first, first + count) of sequence s's rows, with only `context`
// positions stored: a chunk of a prefill, or a row taken out of its batch.
struct RowSlice {
  int32_t seq, first, count, context;
};

inline PrefillProblem sub_problem(const PrefillProblem& p, const std::vector<RowSlice>& slices) {
  PrefillProblem out;
  out.shape = p.shape;
  out.type = p.type;
  out.query_start = {0};
  const size_t kv_row = static_cast<size_t>(p.shape.num_kv_heads) * p.shape.head_dim;
  for (const RowSlice& sl : slices) {
    const size_t t0 = static_cast<size_t>(p.query_start[sl.seq] + sl.first);
    out.seqs.push_back(SeqSpec{sl.context, sl.count, -1, 0});
    out.positions.insert(out.positions.end(), p.positions.begin() + t0, p.positions.begin() + t0 + sl.count);
    out.query_start.push_back(static_cast<int32_t>(out.positions.size()));
    const auto rows = [&](const std::vector<float>& v, size_t t) { return v.begin() + t * p.row_floats(); };
    out.q.insert(out.q.end(), rows(p.q, t0), rows(p.q, t0 + sl.count));
    out.ref.insert(out.ref.end(), rows(p.ref, t0), rows(p.ref, t0 + sl.count));
    out.k.emplace_back(p.k[sl.seq].begin(), p.k[sl.seq].begin() + sl.context * kv_row);
    out.v.emplace_back(p.v[sl.seq].begin(), p.v[sl.seq].begin() + sl.context * kv_row);
  }
  return out;
}

// Pages the K/V into shuffled blocks of block_size slots (unused slots 0xff).
// A sequence sharing a leader's prefix uses the leader's physical blocks for
// the whole blocks of its shared positions.
inline PagedPool page_prefill_problem(const PrefillProblem& p, int32_t block_size, std::mt19937& rng) {
  PagedPool pool;
  pool.block_size = block_size;
  const int32_t kv_row = p.shape.num_kv_heads * p.shape.head_dim;
  const size_t slot_bytes = kv_row_bytes(p.type, kv_row);
  std::vector<std::vector<int32_t>> tables(p.seqs.size());  // logical ids first, mapped below
  int32_t next = 0;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    const SeqSpec& spec = p.seqs[s];
    const int32_t num_blocks = (spec.context + block_size - 1) / block_size;
    const int32_t shared = spec.shares_from >= 0 ? spec.shared_positions / block_size : 0;
    for (int32_t b = 0; b < num_blocks; ++b) {
      tables[s].push_back(b < shared ? tables[static_cast<size_t>(spec.shares_from)][b] : next++);
    }
  }
  const int32_t num_blocks = next + 3;  // a few blocks nobody uses
  std::vector<int32_t> physical(static_cast<size_t>(num_blocks));
  std::iota(physical.begin(), physical.end(), 0);
  std::shuffle(physical.begin(), physical.end(), rng);
  pool.table_start = {0};
  for (const std::vector<int32_t>& table : tables) {
    for (int32_t logical : table) pool.block_ids.push_back(physical[static_cast<size_t>(logical)]);
    pool.table_start.push_back(static_cast<int32_t>(pool.block_ids.size()));
  }
  pool.k.assign(static_cast<size_t>(num_blocks) * block_size * slot_bytes, 0xff);
  pool.v = pool.k;
  for (size_t s = 0; s < p.seqs.size(); ++s) {
    for (int32_t i = 0; i < p.seqs[s].context; ++i) {
      const size_t slot =
          static_cast<size_t>(pool.block_ids[pool.table_start[s] + i / block_size]) * block_size + i % block_size;
      store_kv_row(p.type, &p.k[s][static_cast<size_t>(i) * kv_row], kv_row, &pool.k[slot * slot_bytes]);
      store_kv_row(p.type, &p.v[s][static_cast<size_t>(i) * kv_row], kv_row, &pool.v[slot * slot_bytes]);
    }
  }
  return pool;
}

// Cascade groups, CSR, as StepBatch carries them (host arrays).
struct Groups {
  std::vector<int32_t> prefix_len, seq_start{0}, seqs;
  CascadeGroups view() const {
    return CascadeGroups{static_cast<int32_t>(prefix_len.size()), prefix_len.data(), seq_start.data(), seqs.data()};
  }
};

// One group per leader with followers: the prefix is the physically shared
// whole blocks, cut to the earliest row of the group, rounded down to a tile.
inline Groups cascade_groups(const PrefillProblem& p, int32_t block_size) {
  Groups groups;
  for (int32_t lead = 0; lead < static_cast<int32_t>(p.seqs.size()); ++lead) {
    std::vector<int32_t> members = {lead};
    int32_t prefix = p.seqs[lead].context - p.seqs[lead].num_rows;
    for (int32_t s = lead + 1; s < static_cast<int32_t>(p.seqs.size()); ++s) {
      if (p.seqs[s].shares_from != lead) continue;
      members.push_back(s);
      prefix = std::min({prefix, p.seqs[s].shared_positions / block_size * block_size,
                         p.seqs[s].context - p.seqs[s].num_rows});
    }
    prefix = prefix / kAttentionTile * kAttentionTile;
    if (members.size() < 2 || prefix <= 0) continue;
    groups.prefix_len.push_back(prefix);
    groups.seqs.insert(groups.seqs.end(), members.begin(), members.end());
    groups.seq_start.push_back(static_cast<int32_t>(groups.seqs.size()));
  }
  return groups;
}

}  // namespace kvscope::cuda_test
