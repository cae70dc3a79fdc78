// Hand-made snapshots (see test_snapshots.h).
#include "test_snapshots.h"

#include <array>
#include <cassert>
#include <map>

namespace kvscope::test {

std::shared_ptr<const EngineSnapshot> makeSnapshot(int num_seqs, int blocks_per_seq, int shared_blocks,
                                                   int num_blocks, int block_size) {
  auto s = std::make_shared<EngineSnapshot>();
  s->block_size = block_size;
  s->step = static_cast<uint64_t>(num_seqs * 10 + blocks_per_seq);
  s->blocks.resize(static_cast<size_t>(num_blocks));
  std::map<int32_t, std::vector<RequestId>> owners;
  int next = 0;
  std::vector<int32_t> shared;
  for (int b = 0; b < shared_blocks; ++b) shared.push_back(next++);
  for (int i = 0; i < num_seqs; ++i) {
    SequenceSnapshot seq;
    seq.id = 100 + static_cast<RequestId>(i);
    seq.state = SequenceState::Running;
    seq.num_prompt_tokens = blocks_per_seq * block_size - block_size / 2;
    seq.num_computed_tokens = seq.num_prompt_tokens;
    seq.num_cached_tokens = i > 0 ? shared_blocks * block_size : 0;
    seq.tokens.assign(static_cast<size_t>(seq.num_prompt_tokens), 7);
    for (int b = 0; b < blocks_per_seq; ++b) {
      const int32_t id = b < shared_blocks ? shared[static_cast<size_t>(b)] : next++;
      assert(id < num_blocks - 1);
      seq.block_table.push_back(id);
      owners[id].push_back(seq.id);
      BlockSnapshot& blk = s->blocks[static_cast<size_t>(id)];
      blk.state = BlockState::Used;
      blk.fill = b + 1 == blocks_per_seq ? block_size / 2 : block_size;
      blk.hash = blk.fill == block_size ? 0x1000u + static_cast<uint64_t>(id) : 0;
    }
    s->sequences.push_back(std::move(seq));
  }
  for (auto& [id, ids] : owners) {
    BlockSnapshot& blk = s->blocks[static_cast<size_t>(id)];
    blk.ref_count = static_cast<int32_t>(ids.size());
    blk.owners_begin = static_cast<int32_t>(s->block_owners.size());
    s->block_owners.insert(s->block_owners.end(), ids.begin(), ids.end());
    blk.owners_end = static_cast<int32_t>(s->block_owners.size());
  }
  BlockSnapshot& cached = s->blocks.back();
  cached.state = BlockState::CachedFree;
  cached.fill = block_size;
  cached.hash = 0xabcdef;
  s->num_running = num_seqs;
  s->kv.num_blocks = num_blocks;
  s->kv.num_used_blocks = static_cast<int32_t>(owners.size());
  s->kv.num_cached_free_blocks = 1;
  s->kv.num_free_blocks = num_blocks - s->kv.num_used_blocks;
  s->last_step.num_decode_tokens = num_seqs;
  return s;
}

std::shared_ptr<const EngineSnapshot> makeCascadeSnapshot(int num_seqs, int blocks_per_seq, int shared_blocks,
                                                          double attention_ms) {
  auto s = std::make_shared<EngineSnapshot>(*makeSnapshot(num_seqs, blocks_per_seq, shared_blocks));
  CascadeGroupSnapshot group;
  group.num_shared_tokens = shared_blocks * s->block_size;
  for (int b = 0; b < shared_blocks; ++b) group.blocks.push_back(b);  // makeSnapshot puts the shared blocks first
  for (const SequenceSnapshot& seq : s->sequences) {
    group.request_ids.push_back(seq.id);
    group.indices.push_back(seq.index);
  }
  StepStats& st = s->last_step;
  st.attention_time_s = attention_ms / 1000.0;
  st.num_cascade_groups = 1;
  st.num_cascade_seqs = num_seqs;
  st.num_cascade_tokens = group.num_shared_tokens;
  st.cascade_kv_bytes_saved = int64_t{num_seqs - 1} * group.num_shared_tokens * kSmolKvBytesPerToken;
  s->cascade_groups.push_back(std::move(group));
  return s;
}

TensorParallelMemory smolRanks(int tp, int64_t kv_pool_bytes) {
  assert(tp == 2 || tp == 4);
  TensorParallelMemory m;
  m.tp = tp;
  m.num_kv_heads = 3;
  m.num_kv_head_slots = tp == 2 ? 3 : 4;
  m.kv_heads_replicated = tp == 4;
  // {query head begin, count, KV head begin, count}
  const std::vector<std::array<int32_t, 4>> heads =
      tp == 2 ? std::vector<std::array<int32_t, 4>>{{0, 3, 0, 1}, {3, 6, 1, 2}}
              : std::vector<std::array<int32_t, 4>>{{0, 3, 0, 1}, {3, 3, 1, 1}, {6, 1, 2, 1}, {7, 2, 2, 1}};
  for (int r = 0; r < tp; ++r) {
    RankMemory rank;
    rank.rank = r;
    rank.q_head_begin = heads[static_cast<size_t>(r)][0];
    rank.num_q_heads = heads[static_cast<size_t>(r)][1];
    rank.kv_head_begin = heads[static_cast<size_t>(r)][2];
    rank.num_kv_heads = heads[static_cast<size_t>(r)][3];
    rank.weight_bytes = (int64_t{80} << 20) * rank.num_q_heads / 9;  // 80 MiB of weights by query heads
    rank.kv_bytes = kv_pool_bytes / m.num_kv_head_slots * rank.num_kv_heads;
    // Activations of 512 rows (rank_memory): x, h, o of 576; Q|K|V, q, attn
    // of its heads (64 wide); gate|up, act of its 1536 / tp FFN rows.
    const int64_t floats_per_row = 3 * 576 + 3 * int64_t{rank.num_q_heads} * 64 + 2 * int64_t{rank.num_kv_heads} * 64 +
                                   3 * 1536 / tp;
    rank.workspace_bytes = 512 * floats_per_row * 4;
    m.ranks.push_back(rank);
  }
  return m;
}

std::shared_ptr<const EngineSnapshot> withRanks(const std::shared_ptr<const EngineSnapshot>& snapshot,
                                                const TensorParallelMemory& tp) {
  auto s = std::make_shared<EngineSnapshot>(*snapshot);
  s->tensor_parallel = tp;
  return s;
}

}  // namespace kvscope::test
