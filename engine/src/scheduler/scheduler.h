// Scheduler: decides, each step, which sequences compute how many tokens, and
// has the KV cache manager give them the blocks for it.
//
// Continuous policy (iteration-level, vLLM): running sequences first (decode
// rows are never starved by a long prefill), then swapped-out ones coming
// back, then waiting ones in arrival order, under a token budget (prefill is
// chunked to fit) and a sequence budget. Static policy (Hugging Face
// generate): a batch is admitted together and nobody joins until all of it
// has finished. When blocks run out, the most recently admitted running
// sequence is preempted — by recompute (blocks freed, requeued first; the
// prefix cache may give its blocks back) or by swap (blocks copied to host
// swap space; recompute when the swap space is full). Nothing is dropped.
//
// Speculative decoding (with a Proposer): after every running sequence has
// its rows, decoding sequences get draft rows from what is left of the token
// budget, before swapped and waiting ones are admitted (as vLLM schedules
// them). Drafts never take a row from another sequence's decode, never cause
// a preemption (no free blocks: no drafts) and never run past what the
// request may still generate. commit() keeps the rows verification accepted
// and gives back the blocks of the rejected ones.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kvscope/engine_config.h"
#include "scheduler/sequence.h"
#include "spec/proposer.h"
#include "trace/event_log.h"

namespace kvscope {

struct ScheduledSequence {
  Sequence* seq;
  int32_t num_rows;       // query rows for it this step (num_draft of them verify seq->draft)
  int32_t num_draft = 0;  // speculative draft tokens after its last token (seq->draft.size() or 0)
};

struct SchedulerConfig {
  int32_t max_seqs = 64;
  int32_t max_batched_tokens = 512;
  SchedulingPolicy policy = SchedulingPolicy::Continuous;
  PreemptionMode preemption = PreemptionMode::Recompute;
  int32_t spec_k = 4;  // draft tokens per proposal, at most (with a proposer)
  bool spec_never_pause = false;  // EngineConfig::spec_never_pause
  // Prompt rows that need scoring (Sequence::scores_prompt) in one step, at
  // most: each one's logits come back, so this bounds a step's memory.
  int32_t max_scored_rows = 1 << 30;
};

class Scheduler {
 public:
  // `proposer`: speculative decoding's, nullptr when it is off.
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv, EventLog& events,
            std::unique_ptr<Proposer> proposer = nullptr);

  void add(std::unique_ptr<Sequence> seq);          // to the waiting queue
  void add_running(std::unique_ptr<Sequence> seq);  // a forked sibling, already holding blocks
  bool has_work() const { return !waiting_.empty() || !running_.empty() || !swapped_.empty(); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_swapped() const { return static_cast<int32_t>(swapped_.size()); }
  // Since the engine was created: a reconfigure's new scheduler starts from
  // the old one's count (carry_preemptions), the sequences' own counts going on.
  int64_t num_preemptions() const { return num_preemptions_; }
  void carry_preemptions(int64_t earlier) { num_preemptions_ += earlier; }
  // Every unfinished sequence of a request.
  std::vector<Sequence*> find(RequestId id);
  // Calls fn(const Sequence&) for waiting, running and swapped sequences.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const auto& s : waiting_) fn(*s);
    for (const auto& s : running_) fn(*s);
    for (const auto& s : swapped_) fn(*s);
  }

  // This step's work; every scheduled sequence's table covers its new rows
  // (drafts included) with blocks it owns alone.
  std::vector<ScheduledSequence> schedule();
  // After the forward pass: of w's rows, the first num_kept hold K/V that
  // stays (all of them; after a verification the last token's row and the
  // accepted drafts'). Advances num_computed by num_kept, commits their K/V
  // (fill, prefix hashes of blocks that became full: never a rejected
  // draft's), releases the blocks that held only rejected drafts, so the table
  // is what decoding token by token would have left, and clears the draft.
  // Returns the blocks released. Precondition: 1 <= num_kept <= w.num_rows,
  // and w.seq->tokens holds the tokens of the kept rows.
  int32_t commit(const ScheduledSequence& w, int32_t num_kept);
  // Seconds the proposer took in the last schedule(), and the sequences whose
  // speculation switched itself off there (SpecTracker pauses started).
  double last_propose_time_s() const { return propose_time_s_; }
  // The proposer (nullptr: speculation off). A model proposer
  // (needs_forward()) drafts in the engine step, for the rows reserved here.
  Proposer* proposer() const { return proposer_.get(); }
  // A model proposer's drafting cost per draft token, in target rows
  // (SpecTracker::required_acceptance), measured by the engine; 0 for n-gram.
  void set_draft_cost_in_rows(double rows) { draft_cost_in_rows_ = rows; }
  int32_t last_num_spec_pauses() const { return num_spec_pauses_; }
  // Preempts the most recently admitted unfinished running sequence that
  // `may_preempt` allows, as running out of blocks in schedule() would
  // (recompute or swap). For a context shift that needs free blocks for its
  // copies of shared blocks (Engine's shift_full_contexts). Returns the
  // sequence preempted; nullptr when none is allowed.
  Sequence* preempt_youngest(const std::function<bool(const Sequence&)>& may_preempt);
  // Releases the blocks of running sequences that finished since the last
  // reap (they stay until reap_finished removes them). Returns how many
  // sequences gave blocks back.
  int32_t release_finished_blocks();
  // Removes finished sequences, releasing their blocks.
  std::vector<std::unique_ptr<Sequence>> reap_finished();
  // Removes every sequence as a recompute preemption would (blocks, device or
  // swap, released and counted as a preemption of the sequence and of this
  // scheduler; nothing computed; Waiting), running ones first in admission
  // order, then swapped, then waiting ones in queue order. For
  // Engine::reconfigure, which hands them to a new scheduler and KV pool.
  std::vector<std::unique_ptr<Sequence>> take_all_for_recompute();

 private:
  void schedule_running(std::vector<ScheduledSequence>& out, int32_t& budget, bool& preempted);
  void swap_in(std::vector<ScheduledSequence>& out, int32_t& budget);
  void admit(std::vector<ScheduledSequence>& out, int32_t& budget);
  // Adds draft rows to the decoding sequences in `out` (speculative decoding).
  void propose_drafts(std::vector<ScheduledSequence>& out, int32_t& budget);
  // How many of s's uncomputed rows this step may give it, with `budget`
  // rows left and scored_budget_ rows to score; a caller that schedules
  // them takes its rows to score out of scored_budget_.
  int32_t rows_for(const Sequence& s, int32_t budget) const;
  // Whether `s` may join the running sequences under max_seqs, counting the
  // parallel-sampling siblings each will fork at its first token (n > 1):
  // they run beside it, so they take their slots from admission on.
  bool has_slots_for(const Sequence& s) const;
  void preempt(Sequence& victim);
  void release_blocks(Sequence& s);
  // The recompute half of preemption: blocks released, tokens to compute again.
  void release_for_recompute(Sequence& s);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  EventLog& events_;
  std::unique_ptr<Proposer> proposer_;  // nullptr: speculative decoding off
  double propose_time_s_ = 0.0;
  double draft_cost_in_rows_ = 0.0;
  int32_t num_spec_pauses_ = 0;
  int32_t scored_budget_ = 0;  // this step's rows to score still allowed
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
  std::deque<std::unique_ptr<Sequence>> swapped_;
  int64_t num_preemptions_ = 0;
};

}  // namespace kvscope
