#include "scheduler/scheduler.h"

#include <algorithm>
#include <cassert>
#include <chrono>

namespace kvscope {

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv, EventLog& events,
                     std::unique_ptr<Proposer> proposer)
    : config_(config), kv_(kv), events_(events), proposer_(std::move(proposer)) {}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::Waiting;
  waiting_.push_back(std::move(seq));
}

void Scheduler::add_running(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::Running;
  running_.push_back(std::move(seq));
}

std::vector<Sequence*> Scheduler::find(RequestId id) {
  std::vector<Sequence*> out;
  auto scan = [&](auto& queue) {
    for (auto& s : queue) {
      if (s->id == id && !s->finished()) out.push_back(s.get());
    }
  };
  scan(waiting_);
  scan(running_);
  scan(swapped_);
  return out;
}

std::vector<ScheduledSequence> Scheduler::schedule() {
  std::vector<ScheduledSequence> out;
  int32_t budget = config_.max_batched_tokens;
  scored_budget_ = config_.max_scored_rows;
  bool preempted = false;
  schedule_running(out, budget, preempted);
  propose_time_s_ = 0.0;
  num_spec_pauses_ = 0;
  // Under memory pressure guesses wait: the blocks are better spent on real rows.
  if (proposer_ && !preempted) propose_drafts(out, budget);
  if (!preempted) swap_in(out, budget);
  // New requests wait while preempted ones are out: those come back first.
  if (!preempted && swapped_.empty()) admit(out, budget);
  return out;
}

void Scheduler::schedule_running(std::vector<ScheduledSequence>& out, int32_t& budget, bool& preempted) {
  for (size_t i = 0; i < running_.size();) {
    Sequence& s = *running_[i];
    const int32_t rows = s.finished() ? 0 : rows_for(s, budget);
    if (rows == 0) {
      ++i;
      continue;
    }
    bool scheduled = false;
    for (;;) {
      if (kv_.can_write(s.table, s.num_computed, s.num_computed + rows)) {
        kv_.prepare_write(s.table, s.num_computed, s.num_computed + rows, s.id, s.index);
        out.push_back({&s, rows});
        budget -= rows;
        scored_budget_ -= s.num_rows_to_score(rows);
        scheduled = true;
        break;
      }
      // Out of blocks: preempt the most recently admitted unfinished sequence,
      // which may be s itself.
      auto victim = std::find_if(running_.rbegin(), running_.rend(),
                                 [](const std::unique_ptr<Sequence>& v) { return !v->finished(); });
      assert(victim != running_.rend());
      Sequence* v = victim->get();
      preempt(*v);
      preempted = true;
      if (v == &s) break;
    }
    if (scheduled) ++i;
  }
}

int32_t Scheduler::rows_for(const Sequence& s, int32_t budget) const {
  const int32_t rows = std::min(s.num_uncomputed(), budget);
  // Over the step's bound: the chunk ends after the last row it may score.
  if (s.num_rows_to_score(rows) > scored_budget_) return s.first_row_to_score() + scored_budget_ - s.num_computed;
  return rows;
}

void Scheduler::propose_drafts(std::vector<ScheduledSequence>& out, int32_t& budget) {
  const auto start = std::chrono::steady_clock::now();
  // Rows already in the step (every running sequence's): what a draft row's
  // cost is weighed against (spec/spec_tracker.h). The same for every
  // sequence, whatever order they are visited in.
  const int32_t num_rows = config_.max_batched_tokens - budget;
  const bool model_proposer = proposer_->needs_forward();
  for (ScheduledSequence& w : out) {
    if (budget <= 0) break;
    Sequence& s = *w.seq;
    // Decoding: its one row is the last sampled token (the prompt is done and
    // parallel-sampling siblings, forked at the first token, exist).
    if (w.num_rows != 1 || s.num_uncomputed() != 1 || s.num_generated() == 0) continue;
    // Grammar-constrained requests do not speculate: proposers draft without
    // the grammar, so most drafts would be rejected rows for nothing.
    if (s.sampler.constrained()) continue;
    // Verification emits up to drafts + 1 tokens; more drafts than the
    // request may still generate would be rows for nothing.
    const int32_t room = s.max_total_tokens - static_cast<int32_t>(s.tokens.size()) - 1;
    const int32_t k = std::min({config_.spec_k, budget, room});
    if (k <= 0) continue;
    const int32_t pauses_before = s.spec.num_pauses();
    const bool may = config_.spec_never_pause || s.spec.may_propose(num_rows, draft_cost_in_rows_);
    num_spec_pauses_ += s.spec.num_pauses() - pauses_before;
    if (!may) continue;
    const int32_t limit = config_.spec_never_pause ? k : s.spec.draft_limit(k);
    // A model proposer always drafts `limit` tokens; the engine step fills
    // s.draft with them after schedule() (spec/model_proposer.h).
    std::vector<int32_t> draft = model_proposer ? std::vector<int32_t>{} : proposer_->propose(s.tokens, limit);
    if (!model_proposer && draft.empty()) continue;
    if (static_cast<int32_t>(draft.size()) > limit) draft.resize(static_cast<size_t>(limit));
    const int32_t num_draft = model_proposer ? limit : static_cast<int32_t>(draft.size());
    const int32_t first = s.num_computed + 1;  // the last token's row was prepared by schedule_running
    if (!kv_.can_write(s.table, first, first + num_draft)) continue;  // a guess never preempts anyone
    kv_.prepare_write(s.table, first, first + num_draft, s.id, s.index);
    s.draft = std::move(draft);
    w.num_rows += num_draft;
    w.num_draft = num_draft;
    budget -= num_draft;
  }
  propose_time_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool Scheduler::has_slots_for(const Sequence& s) const {
  int32_t taken = static_cast<int32_t>(running_.size());
  for (const auto& r : running_) taken += r->num_forks_pending;
  return taken + 1 + s.num_forks_pending <= config_.max_seqs;
}

void Scheduler::swap_in(std::vector<ScheduledSequence>& out, int32_t& budget) {
  while (!swapped_.empty() && has_slots_for(*swapped_.front())) {
    Sequence& s = *swapped_.front();
    // Room for its blocks plus the next rows, so it does not bounce straight back out.
    const int32_t rows = rows_for(s, budget);
    if (!kv_.pool().can_allocate(s.table.num_blocks() + s.table.num_blocks_needed(s.num_computed + rows) + 1)) break;
    kv_.swap_in(s.table, s.id, s.index);
    s.state = SequenceState::Running;
    if (rows > 0) {
      kv_.prepare_write(s.table, s.num_computed, s.num_computed + rows, s.id, s.index);
      out.push_back({&s, rows});
      budget -= rows;
      scored_budget_ -= s.num_rows_to_score(rows);
    }
    running_.push_back(std::move(swapped_.front()));
    swapped_.pop_front();
  }
}

void Scheduler::admit(std::vector<ScheduledSequence>& out, int32_t& budget) {
  const bool is_static = config_.policy == SchedulingPolicy::Static;
  if (is_static && !running_.empty()) return;  // a static batch runs to the end
  const bool contiguous = kv_.config().contiguous;
  while (!waiting_.empty() && has_slots_for(*waiting_.front()) &&
         (budget > 0 || is_static)) {
    Sequence& s = *waiting_.front();
    // A prompt to score waits for a step with scoring room: admitted now it
    // would get no rows and hold a sequence slot.
    if (s.scores_prompt() && rows_for(s, budget) == 0) break;
    const int32_t known = static_cast<int32_t>(s.tokens.size());
    if (contiguous) {
      // Paged attention off: the whole maximum length, in one run, now.
      if (!kv_.reserve_contiguous(s.table, s.max_total_tokens)) break;
    } else {
      // Room for every known token (prompt, plus generated ones after a
      // recompute preemption) so that admission does not thrash.
      if (!kv_.pool().can_allocate(s.table.num_blocks_needed(known))) break;
      // A sequence scoring its prompt computes every prompt row itself:
      // a cached block's rows were never scored.
      const int32_t cached = s.scores_prompt() ? 0 : kv_.acquire_cached_prefix(s.table, s.tokens, s.hash_seed, s.id);
      s.num_computed = cached;
      // A cached block's draft-model K/V was written with its tokens (the
      // draft runs over every row the target computes).
      s.draft_num_computed = cached;
      if (s.num_preemptions == 0) s.num_cached_tokens = cached;
    }
    const int32_t rows = rows_for(s, budget);
    if (rows > 0) {
      kv_.prepare_write(s.table, s.num_computed, s.num_computed + rows, s.id, s.index);
      out.push_back({&s, rows});
      budget -= rows;
      scored_budget_ -= s.num_rows_to_score(rows);
    }
    s.state = SequenceState::Running;
    events_.record(EngineEventType::Admit, s.id, s.index, s.num_prompt_tokens);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

void Scheduler::preempt(Sequence& victim) {
  auto it = std::find_if(running_.begin(), running_.end(),
                         [&](const std::unique_ptr<Sequence>& s) { return s.get() == &victim; });
  assert(it != running_.end());
  std::unique_ptr<Sequence> owned = std::move(*it);
  running_.erase(it);
  ++victim.num_preemptions;
  ++num_preemptions_;
  const bool swap = config_.preemption == PreemptionMode::Swap && kv_.can_swap_out(victim.table);
  events_.record(EngineEventType::Preempt, victim.id, victim.index, swap ? 1 : 0);
  if (swap) {
    kv_.swap_out(victim.table, victim.id, victim.index);
    victim.draft_num_computed = 0;  // the draft model's K/V is not swapped: recomputed after swap-in
    victim.state = SequenceState::Swapped;
    swapped_.push_back(std::move(owned));
  } else {
    release_for_recompute(victim);
    waiting_.push_front(std::move(owned));
  }
}

Sequence* Scheduler::preempt_youngest(const std::function<bool(const Sequence&)>& may_preempt) {
  auto victim = std::find_if(running_.rbegin(), running_.rend(), [&](const std::unique_ptr<Sequence>& v) {
    return !v->finished() && may_preempt(*v);
  });
  if (victim == running_.rend()) return nullptr;
  Sequence* v = victim->get();
  preempt(*v);
  return v;
}

void Scheduler::release_for_recompute(Sequence& s) {
  release_blocks(s);
  s.num_computed = 0;
  s.draft_num_computed = 0;
  s.state = SequenceState::Waiting;
}

int32_t Scheduler::commit(const ScheduledSequence& w, int32_t num_kept) {
  assert(num_kept >= 1 && num_kept <= w.num_rows && "commit: kept rows out of range");
  Sequence& s = *w.seq;
  const int32_t first = s.num_computed;
  s.num_computed += num_kept;
  assert(s.num_computed <= static_cast<int32_t>(s.tokens.size()) && "commit: kept rows without their tokens");
  kv_.commit(s.table, s.tokens, first, s.num_computed, s.hash_seed);
  s.draft.clear();
  return num_kept < w.num_rows ? kv_.truncate(s.table, s.num_computed) : 0;
}

void Scheduler::release_blocks(Sequence& s) {
  if (s.table.num_blocks() == 0) return;
  // Whether the table holds device or swap ids is not in its state field
  // (a sequence can be cancelled while swapped out), so check the queue.
  const bool in_swap = std::any_of(swapped_.begin(), swapped_.end(),
                                   [&](const std::unique_ptr<Sequence>& p) { return p.get() == &s; });
  if (in_swap) {
    kv_.release_swapped(s.table);
  } else {
    kv_.release(s.table);
  }
}

int32_t Scheduler::release_finished_blocks() {
  int32_t released = 0;
  for (const auto& s : running_) {
    if (!s->finished() || s->table.num_blocks() == 0) continue;
    release_blocks(*s);
    ++released;
  }
  return released;
}

std::vector<std::unique_ptr<Sequence>> Scheduler::reap_finished() {
  std::vector<std::unique_ptr<Sequence>> done;
  auto take = [&](auto& queue) {
    for (auto it = queue.begin(); it != queue.end();) {
      if ((*it)->finished()) {
        release_blocks(**it);
        done.push_back(std::move(*it));
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
  };
  take(running_);
  take(waiting_);
  take(swapped_);
  return done;
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_all_for_recompute() {
  std::vector<std::unique_ptr<Sequence>> out;
  auto take = [&](auto& queue) {
    for (auto& s : queue) {
      if (s->table.num_blocks() > 0) {  // its KV is dropped: a preemption, as preempt() counts it
        ++s->num_preemptions;
        ++num_preemptions_;
        events_.record(EngineEventType::Preempt, s->id, s->index, 0);
      }
      release_for_recompute(*s);  // before it leaves the queue: release_blocks looks for it in swapped_
      out.push_back(std::move(s));
    }
  };
  take(running_);
  take(swapped_);
  take(waiting_);
  running_.clear();
  swapped_.clear();
  waiting_.clear();
  return out;
}

}  // namespace kvscope
