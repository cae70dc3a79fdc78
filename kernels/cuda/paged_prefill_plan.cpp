// Host-side planning of the GPU prefill attention (paged_prefill.cuh): records
// each row's cascade prefix, splits each cascade group's rows and each
// sequence's rows into blocks of rows_per_block rows, except decode rows
// (a sequence's only row, without a prefix), which are cut into their
// partitions (paged_prefill.cuh's boundaries). Plain C++ (no device code); runs
// once per step, a few integers per row and per decode partition.
#include <algorithm>
#include <numeric>

#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/paged_prefill.cuh"

namespace kvscope::cuda {
namespace {

// A block holds rows_per_block * group warps: up to 16 warps (512 threads),
// enough rows to reuse each K/V tile from shared memory. Groups above 16
// query heads per KV head are refused, as the CPU kernel's kMaxGroup does.
constexpr int32_t kTargetWarps = 16;
constexpr int32_t kMaxGroup = 16;

}  // namespace

cudaError_t plan_paged_prefill(const AttentionShape& shape, const PagedAttentionBatch& host_batch,
                               const CascadeGroups& host_cascade, PrefillPlan* plan) {
  const char* op = "plan_paged_prefill";
  KVSCOPE_CUDA_REQUIRE(op, plan != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads > 0 && shape.num_kv_heads > 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads % shape.num_kv_heads == 0);
  KVSCOPE_CUDA_REQUIRE(op, shape.num_heads / shape.num_kv_heads <= kMaxGroup);
  KVSCOPE_CUDA_REQUIRE(op, host_batch.num_seqs >= 0);
  KVSCOPE_CUDA_REQUIRE(op, host_batch.num_seqs == 0 || (host_batch.query_start != nullptr &&
                                                        host_batch.positions != nullptr));
  KVSCOPE_CUDA_REQUIRE(op, host_cascade.num_groups >= 0);
  const int32_t num_seqs = host_batch.num_seqs;
  const int32_t* qs = host_batch.query_start;
  const int32_t num_tokens = num_seqs > 0 ? qs[num_seqs] : 0;
  for (int32_t s = 0; s < num_seqs; ++s) KVSCOPE_CUDA_REQUIRE(op, qs[s] >= 0 && qs[s] <= qs[s + 1]);
  for (int32_t t = 0; t < num_tokens; ++t) KVSCOPE_CUDA_REQUIRE(op, host_batch.positions[t] >= 0);

  const int32_t group = shape.num_heads / shape.num_kv_heads;
  PrefillPlan p;
  p.num_tokens = num_tokens;
  p.rows_per_block = std::max(1, kTargetWarps / group);

  std::vector<int32_t> items, shared_items, rows(static_cast<size_t>(num_tokens));
  std::vector<int32_t> row_prefix(static_cast<size_t>(num_tokens), 0);
  std::vector<int32_t> partition_items, combine_rows;
  std::iota(rows.begin(), rows.end(), 0);  // the flat pass's rows: every row, in order
  if (host_cascade.num_groups > 0 && shape.sliding_window == 0) {
    KVSCOPE_CUDA_REQUIRE(op, host_cascade.prefix_len != nullptr && host_cascade.seq_start != nullptr &&
                                 host_cascade.seqs != nullptr);
    std::vector<char> in_group(static_cast<size_t>(num_seqs), 0);
    for (int32_t g = 0; g < host_cascade.num_groups; ++g) {
      const int32_t prefix = host_cascade.prefix_len[g];
      KVSCOPE_CUDA_REQUIRE(op, prefix > 0 && prefix % kAttentionTile == 0);
      const int32_t begin = host_cascade.seq_start[g];
      const int32_t end = host_cascade.seq_start[g + 1];
      KVSCOPE_CUDA_REQUIRE(op, 0 <= begin && begin < end);
      const int32_t group_first = static_cast<int32_t>(rows.size());
      for (int32_t i = begin; i < end; ++i) {
        const int32_t s = host_cascade.seqs[i];
        KVSCOPE_CUDA_REQUIRE(op, s >= 0 && s < num_seqs);
        KVSCOPE_CUDA_REQUIRE(op, !in_group[static_cast<size_t>(s)]);  // a sequence in one group at most
        in_group[static_cast<size_t>(s)] = 1;
        for (int32_t t = qs[s]; t < qs[s + 1]; ++t) {
          KVSCOPE_CUDA_REQUIRE(op, host_batch.positions[t] >= prefix);  // all of the prefix is visible
          rows.push_back(t);
          row_prefix[static_cast<size_t>(t)] = prefix;
        }
      }
      const int32_t group_end = static_cast<int32_t>(rows.size());
      const int32_t table_seq = host_cascade.seqs[begin];  // members share the prefix's blocks
      for (int32_t first = group_first; first < group_end; first += p.rows_per_block) {
        shared_items.insert(shared_items.end(),
                            {table_seq, prefix, first, std::min(first + p.rows_per_block, group_end)});
      }
    }
  }
  for (int32_t s = 0; s < num_seqs; ++s) {
    const bool decode_row = qs[s + 1] - qs[s] == 1 && row_prefix[static_cast<size_t>(qs[s])] == 0;
    if (!decode_row) {
      for (int32_t first = qs[s]; first < qs[s + 1]; first += p.rows_per_block) {
        items.insert(items.end(), {s, first, std::min(first + p.rows_per_block, qs[s + 1])});
      }
      continue;
    }
    // Keys [begin, pos] cut at the partition boundaries, as the flat pass folds them.
    const int32_t t = qs[s];
    const int32_t pos = host_batch.positions[t];
    const int32_t begin = shape.sliding_window > 0 ? std::max(0, pos - shape.sliding_window + 1) : 0;
    const bool one_partition = partition_start(begin) == partition_start(pos);
    const int32_t first_item = static_cast<int32_t>(partition_items.size() / 5);
    int32_t num_parts = 0;
    for (int32_t at = begin; at <= pos; at = partition_end(at)) {
      partition_items.insert(partition_items.end(),
                             {s, t, at, std::min(pos + 1, partition_end(at)), one_partition ? 1 : 0});
      ++num_parts;
    }
    if (!one_partition) combine_rows.insert(combine_rows.end(), {t, first_item, num_parts});
  }
  p.num_items = static_cast<int32_t>(items.size() / 3);
  p.num_shared_items = static_cast<int32_t>(shared_items.size() / 4);
  p.num_partition_items = static_cast<int32_t>(partition_items.size() / 5);
  p.num_combine_rows = static_cast<int32_t>(combine_rows.size() / 3);
  p.items_at = 0;
  p.shared_at = static_cast<int32_t>(items.size());
  p.rows_at = p.shared_at + static_cast<int32_t>(shared_items.size());
  p.row_prefix_at = p.rows_at + static_cast<int32_t>(rows.size());
  p.partition_at = p.row_prefix_at + static_cast<int32_t>(row_prefix.size());
  p.combine_at = p.partition_at + static_cast<int32_t>(partition_items.size());
  p.data = std::move(items);
  p.data.reserve(static_cast<size_t>(p.combine_at) + combine_rows.size());
  for (const std::vector<int32_t>* part : {&shared_items, &rows, &row_prefix, &partition_items, &combine_rows}) {
    p.data.insert(p.data.end(), part->begin(), part->end());
  }
  *plan = std::move(p);
  return cudaSuccess;
}

size_t paged_prefill_workspace_floats(const PrefillPlan& plan, const AttentionShape& shape) {
  if (shape.num_heads <= 0 || shape.head_dim <= 0) return 0;
  const size_t state_floats = 2 + static_cast<size_t>(shape.head_dim);  // max, sum, o[head_dim]
  const size_t cascade_states = plan.num_shared_items > 0 ? 2 * static_cast<size_t>(plan.num_tokens) : 0;
  return (cascade_states + static_cast<size_t>(plan.num_partition_items)) * shape.num_heads * state_floats;
}

}  // namespace kvscope::cuda
