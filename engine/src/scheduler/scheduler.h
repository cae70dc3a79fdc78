// Scheduler: decides, each step, which sequences compute how many tokens, and
// gives them the KV blocks for it. Running sequences go first (decode rows are
// never starved by a long prefill), then waiting ones in arrival order, under
// a token budget (prefill is chunked to fit) and a sequence budget.
//
// Admission reserves: a waiting sequence is admitted only when the blocks for
// its whole maximum length fit beside what running sequences may still grow
// to, so a running sequence never runs out of blocks mid-generation.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "kv/block_pool.h"
#include "scheduler/sequence.h"

namespace kvscope {

struct ScheduledSequence {
  Sequence* seq;
  int32_t num_rows;  // tokens computed for it this step
};

class Scheduler {
 public:
  Scheduler(int32_t max_seqs, int32_t max_batched_tokens, BlockPool& pool);

  void add(std::unique_ptr<Sequence> seq);
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  Sequence* find(RequestId id);

  // This step's work; every scheduled sequence's table covers its new rows.
  std::vector<ScheduledSequence> schedule();
  // Removes sequences marked Finished, releasing their blocks.
  std::vector<std::unique_ptr<Sequence>> reap_finished();

 private:
  int32_t blocks_still_reserved() const;

  int32_t max_seqs_;
  int32_t max_batched_tokens_;
  BlockPool& pool_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
};

}  // namespace kvscope
