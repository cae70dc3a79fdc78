// Engine::step(): one iteration of continuous batching.
//   drain inbox -> schedule (+ blocks, + speculative drafts) -> StepBatch ->
//   forward -> commit K/V -> sample (forking parallel samples; verifying
//   drafts, then committing the accepted rows) -> publish -> release finished.
#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "context_shift.h"
#include "engine_impl.h"
#include "runtime/cascade_plan.h"
#include "runtime/sampler.h"
#include "runtime/token_draw.h"

namespace kvscope {
namespace {

double seconds_between(Sequence::Clock::time_point a, Sequence::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Tensor parallelism: each rank's part of the forward pass into the step's
// stats and, with tp > 1, one RankForward event per rank (the Chrome trace's
// rank lanes), recorded in order of begin time so the log's times never run
// backwards (every earlier event of the step was recorded before the pass).
void note_rank_timings(const TensorParallelRunner& runner, EventLog& events, StepStats& stats) {
  static_assert(kDownChunks <= StepStats::kMaxRanks, "StepStats must hold every rank tp allows");
  const std::vector<TensorParallelRunner::RankTiming>& timings = runner.last_rank_timings();
  stats.num_ranks = static_cast<int32_t>(std::min<size_t>(timings.size(), StepStats::kMaxRanks));
  for (int32_t r = 0; r < stats.num_ranks; ++r) {
    stats.rank_forward_s[static_cast<size_t>(r)] = timings[static_cast<size_t>(r)].seconds();
  }
  if (timings.size() < 2 || !events.enabled()) return;
  std::vector<int32_t> order(timings.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int32_t>(r);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return timings[static_cast<size_t>(a)].begin < timings[static_cast<size_t>(b)].begin;
  });
  for (int32_t r : order) {
    const TensorParallelRunner::RankTiming& t = timings[static_cast<size_t>(r)];
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.end - t.begin).count();
    events.record_at(events.seconds_at(t.begin), EngineEventType::RankForward, 0, 0, r, ns);
  }
}

}  // namespace

void Engine::Impl::drain_inbox() {
  std::vector<std::unique_ptr<Sequence>> arrived;
  std::vector<RequestId> cancelled;
  {
    std::lock_guard lock(inbox_mutex);
    arrived.swap(inbox);
    cancelled.swap(cancels);
  }
  for (auto& s : arrived) scheduler->add(std::move(s));
  for (RequestId id : cancelled) {
    for (Sequence* s : scheduler->find(id)) finish(*s, FinishReason::Cancelled);
  }
}

void Engine::Impl::finish(Sequence& s, FinishReason reason, std::string error) {
  TokenEvent ev;
  ev.id = s.id;
  ev.index = s.index;
  ev.finish = reason;
  ev.error = std::move(error);
  if (reason != FinishReason::Cancelled && reason != FinishReason::Error) {
    // Whatever the detokeniser still holds (an incomplete character) and text
    // held back as a possible stop-string start belong to the reply.
    ev.text = s.stop.push(s.detokenizer.flush());
    ev.text += s.stop.flush();
  }
  const auto now = Sequence::Clock::now();
  RequestStats& st = ev.stats;
  st.num_prompt_tokens = s.num_prompt_tokens;
  st.num_generated_tokens = s.num_generated();
  st.num_cached_prompt_tokens = s.num_cached_tokens;
  st.num_preemptions = s.num_preemptions;
  st.seed = s.sampler.seed();
  st.num_drafts = s.spec.num_drafts();
  st.num_draft_tokens = s.spec.num_draft_tokens();
  st.num_accepted_tokens = s.spec.num_accepted_tokens();
  st.num_spec_pauses = s.spec.num_pauses();
  st.num_context_shifts = s.num_context_shifts;
  st.num_dropped_tokens = s.num_shifted_out_tokens + s.num_truncated_prompt_tokens;
  st.num_context_tokens = static_cast<int32_t>(s.tokens.size());
  if (config.spec != SpecMethod::Off) st.spec_method = spec_method_name(config.spec);
  st.spec_speedup_estimate = spec_speedup_estimate(s);
  st.total_time_s = seconds_between(s.submitted_at, now);
  if (s.num_generated() > 0) {
    st.time_to_first_token_s = seconds_between(s.submitted_at, s.first_token_at);
    const double decode_time = seconds_between(s.first_token_at, now);
    if (s.num_generated() > 1 && decode_time > 0) st.decode_tokens_per_s = (s.num_generated() - 1) / decode_time;
  }
  s.state = SequenceState::Finished;
  events.record(EngineEventType::Finish, s.id, s.index, static_cast<int64_t>(reason));
  if (s.on_event) s.on_event(ev);
}

std::vector<Sequence*> Engine::Impl::fork_siblings(Sequence& s) {
  std::vector<Sequence*> siblings;
  SamplingParams params = s.sampler.params();
  for (int32_t i = 1; i <= s.num_forks_pending; ++i) {
    // Each sibling draws from its own stream: the request's seed plus its
    // index (seed 2^64 - 1, a client's -1, wraps to 0, which means random).
    params.seed = s.sampler.seed() + static_cast<uint64_t>(i);
    if (params.seed == 0) params.seed = kSeedStandingForZero;
    std::vector<int32_t> tokens(s.tokens.begin(), s.tokens.begin() + s.num_prompt_tokens);
    auto child = std::make_unique<Sequence>(s.id, i, std::move(tokens), params, s.on_event, *tokenizer,
                                            config.block_size);
    child->num_computed = s.num_computed;
    child->draft_num_computed = s.draft_num_computed;  // the same blocks, so the same draft-model K/V
    child->max_total_tokens = s.max_total_tokens;
    child->num_cached_tokens = s.num_cached_tokens;
    child->hash_seed = s.hash_seed;
    child->on_logits = s.on_logits;
    child->submitted_at = s.submitted_at;
    kv_manager->fork(s.table, child->table);
    siblings.push_back(child.get());
    scheduler->add_running(std::move(child));
    ++num_pending;
  }
  s.num_forks_pending = 0;
  return siblings;
}

std::pair<int32_t, FinishReason> Engine::Impl::sample_token(Sequence& s, const float* row, int32_t draft_token) {
  const int32_t vocab = weights->config.vocab_size;
  if (logits_not_finite(row, vocab)) return {-1, FinishReason::Error};
  // Grammar-constrained decoding: this sequence's own mask (so greedy output
  // does not depend on what else is in the batch), applied before anything
  // reads the row, so on_logits (the server's logprobs) and the sampler see
  // the constrained distribution.
  TokenConstraint* constraint = s.sampler.constraint();
  if (constraint) row = constraint->mask_logits(row, vocab, constraint_trie());
  if (s.on_logits) s.on_logits(s.index, static_cast<int32_t>(s.tokens.size()), row, vocab);
  const int32_t token = s.sampler.sample(row, vocab, s.tokens);
  if (constraint) constraint->accept(token, constraint_trie());
  return publish_token(s, token, draft_token);
}

bool Engine::Impl::backend_may_draw(const Sequence& s) const {
  return config.gpu_sampling && !s.sampler.constrained() && !s.on_logits && s.num_forks_pending == 0;
}

void Engine::Impl::add_draw(Sequence& s, int32_t logits_row) {
  const SamplingParams& params = s.sampler.params();
  const double uniform = params.temperature == 0.0f ? 0.0 : s.sampler.take_uniform();
  append_token_draw(batch, logits_row, params, s.tokens, weights->config.vocab_size, uniform);
}

std::pair<int32_t, FinishReason> Engine::Impl::publish_token(Sequence& s, int32_t token, int32_t draft_token) {
  s.tokens.push_back(token);
  if (s.num_generated() == 1) s.first_token_at = Sequence::Clock::now();
  const SamplingParams& p = s.sampler.params();
  if (tokenizer->is_eog(token) && !p.ignore_eos) return {token, FinishReason::Stop};  // no token event
  TokenEvent ev;
  ev.id = s.id;
  ev.index = s.index;
  ev.token = token;
  ev.from_draft = token == draft_token;
  ev.num_dropped_tokens = std::exchange(s.pending_shift_dropped, 0);
  ev.dropped_from = std::exchange(s.pending_shift_from, 0);
  ev.text_offset = static_cast<int32_t>(s.detokenizer.num_chars_returned());
  ev.text = s.stop.push(s.detokenizer.push(token));
  if (s.on_event) s.on_event(ev);
  if (s.stop.stopped()) return {token, FinishReason::Stop};
  if (s.num_generated() >= p.max_tokens) return {token, FinishReason::Length};
  if (static_cast<int32_t>(s.tokens.size()) >= config.max_model_len) {
    // Shifted after this step's commits (shift_full_contexts); paged
    // attention off keeps one contiguous run per sequence, which a shift
    // would break, so it stops there as with `stop`.
    if (config.context_overflow != ContextOverflow::Shift || !config.paged) return {token, FinishReason::ContextFull};
    full_contexts.push_back(&s);
  }
  return {token, FinishReason::None};
}

void Engine::Impl::shift_full_contexts() {
  for (Sequence* s : full_contexts) {
    // Finished meanwhile, listed twice (shifted already), or preempted for
    // another's shift below: it shifts when it has run again and is full
    // once more (its last token's position is still inside the context).
    if (s->state != SequenceState::Running || static_cast<int32_t>(s->tokens.size()) < config.max_model_len) continue;
    const ContextShiftPlan plan =
        plan_context_shift(s->num_computed, config.block_size, config.context_keep, config.max_model_len);
    if (plan.drop_blocks == 0) {
      finish(*s, FinishReason::ContextFull);  // context_keep leaves nothing to drop
      continue;
    }
    ContextShiftSnapshot shift;
    bool shifted = false;
    bool released_finished = false;
    for (;;) {
      shifted = shift_context(*s, plan, *kv_manager, backend->kv_blocks(), &shift) > 0;
      if (shifted) break;
      // No free block for the copies of the shared blocks that move. First
      // the blocks of sequences that ended this step (reaped only after it):
      // often the sibling that shared the moved blocks.
      if (!released_finished) {
        released_finished = true;
        if (scheduler->release_finished_blocks() > 0) continue;
      }
      // Then make room as schedule() does when a row finds none, by
      // preempting the youngest other sequence whose preemption helps (it
      // holds a block no one else does, or shares a moved one). This one
      // keeps its K/V. Those whose numbers a preemption keeps come first:
      // not one that is full (it would shift one position later than it
      // would have), nor one that has shifted unless it is swapped (a
      // recompute prefills its kept tokens without the dropped middle).
      const Sequence* shifting = s;
      const bool swaps = config.preemption == PreemptionMode::Swap;
      const std::vector<int32_t> moved(s->table.blocks().begin() + plan.keep_blocks + plan.drop_blocks,
                                       s->table.blocks().end());
      const BlockPool& pool = kv_manager->pool();
      const auto helps = [&](const Sequence& v) {
        for (const int32_t b : v.table.blocks()) {
          if (pool.ref_count(b) == 1 || std::find(moved.begin(), moved.end(), b) != moved.end()) return true;
        }
        return false;
      };
      const int32_t full = config.max_model_len;
      const auto keeps_numbers = [&](const Sequence& v) {
        if (static_cast<int32_t>(v.tokens.size()) >= full) return false;
        return v.num_context_shifts == 0 || (swaps && kv_manager->can_swap_out(v.table));
      };
      if (scheduler->preempt_youngest(
              [&](const Sequence& v) { return &v != shifting && keeps_numbers(v) && helps(v); })) {
        continue;
      }
      if (!scheduler->preempt_youngest([&](const Sequence& v) { return &v != shifting && helps(v); })) break;
    }
    if (!shifted) {
      finish(*s, FinishReason::ContextFull);  // no preemption frees a block for the copies
      continue;
    }
    // For the snapshot's block map (EngineSnapshot::recent_shifts), bounded.
    shift.step = num_steps;
    shift.time_s = now_s();
    if (recent_shifts.size() >= EngineSnapshot::kMaxRecentShifts) recent_shifts.erase(recent_shifts.begin());
    recent_shifts.push_back(std::move(shift));
  }
  full_contexts.clear();
}

const TokenTrie& Engine::Impl::constraint_trie() {
  if (!token_trie) {
    const int32_t vocab = weights->config.vocab_size;
    std::vector<std::string> bytes(static_cast<size_t>(vocab));
    std::vector<int32_t> eog;
    for (int32_t id = 0; id < vocab; ++id) {
      bytes[static_cast<size_t>(id)] = tokenizer->token_bytes(id);  // control tokens: "" (never allowed)
      if (tokenizer->is_eog(id)) eog.push_back(id);
    }
    token_trie = std::make_shared<const TokenTrie>(std::move(bytes), std::move(eog));
  }
  return *token_trie;
}

void Engine::Impl::finish_not_finite(Sequence& s, int32_t position) {
  finish(s, FinishReason::Error,
         fmt::format("the model's logits for the token at position {} are not finite (NaN or infinite): its weights "
                     "hold NaN, or its arithmetic overflowed; the model file may be damaged",
                     position >= 0 ? position : static_cast<int32_t>(s.tokens.size())));
}

void Engine::Impl::sample_and_publish(Sequence& s, const float* row) {
  const auto [token, reason] = sample_token(s, row);
  if (reason == FinishReason::Error && token < 0) {
    finish_not_finite(s);
  } else if (reason != FinishReason::None) {
    finish(s, reason);
  }
}

int32_t Engine::Impl::verify_and_publish(Sequence& s, const float* rows, StepStats& stats) {
  const size_t vocab = static_cast<size_t>(weights->config.vocab_size);
  const int32_t num_draft = static_cast<int32_t>(s.draft.size());
  int32_t num_emitted = 0, num_accepted = 0;
  FinishReason reason = FinishReason::None;
  for (int32_t j = 0; j <= num_draft; ++j) {
    // The exact rule for a deterministic proposer (spec/rejection_sampler.h,
    // verify_deterministic_draft): the token plain decoding would draw here
    // (same row, same penalties over the tokens so far, same random number),
    // and the draft is accepted when it is that token. Greedy: the argmax.
    const int32_t draft_token = j < num_draft ? s.draft[static_cast<size_t>(j)] : -1;
    const auto [token, why] = sample_token(s, rows + static_cast<size_t>(j) * vocab, draft_token);
    reason = why;
    if (token < 0) break;  // a row that is not finite: nothing published
    ++num_emitted;
    const bool accepted = token == draft_token;
    if (accepted) ++num_accepted;
    if (reason != FinishReason::None || !accepted) break;  // after the bonus row (j == num_draft) too
  }
  // Positions judged: up to the first rejection, or where the request ended.
  const int32_t num_judged = std::min(num_draft, num_emitted);
  if (static_cast<int32_t>(spec_totals.num_judged_at.size()) < num_draft) {
    spec_totals.num_judged_at.resize(static_cast<size_t>(num_draft), 0);
    spec_totals.num_accepted_at.resize(static_cast<size_t>(num_draft), 0);
  }
  for (int32_t j = 0; j < num_judged; ++j) ++spec_totals.num_judged_at[static_cast<size_t>(j)];
  for (int32_t j = 0; j < num_accepted; ++j) ++spec_totals.num_accepted_at[static_cast<size_t>(j)];
  s.spec.record(num_draft, num_accepted);
  ++spec_totals.num_drafts;
  spec_totals.num_draft_tokens += num_draft;
  spec_totals.num_accepted_tokens += num_accepted;
  s.num_spec_tokens += num_emitted;
  ++stats.num_spec_seqs;
  stats.num_accepted_tokens += num_accepted;
  events.record(EngineEventType::Verify, s.id, s.index, num_accepted, num_draft);
  // Last, so that the finishing event's RequestStats count this verification.
  if (reason == FinishReason::Error) {
    finish_not_finite(s);
    return num_emitted + 1;  // the rows up to the one that was not finite hold valid K/V (commit needs >= 1)
  }
  if (reason != FinishReason::None) finish(s, reason);
  return num_emitted;
}

void Engine::Impl::note_forward_time(const std::vector<ScheduledSequence>& work, const StepStats& stats,
                                     double forward_s) {
  for (const ScheduledSequence& w : work) {
    Sequence& s = *w.seq;
    if (w.num_draft > 0) {
      // A model proposer's draft passes are part of what its tokens cost.
      s.spec_forward_time_s += forward_s + stats.propose_time_s;
    } else if (w.num_rows == 1 && s.prompt_computed()) {
      s.plain_forward_time_s += forward_s;
      ++s.num_plain_decode_steps;
    }
  }
  if (stats.num_prefill_tokens == 0 && stats.num_draft_tokens == 0 && stats.num_decode_tokens > 0) {
    constexpr double kWeight = 0.1;  // about the last ten plain steps
    plain_decode_forward_ema_s = plain_decode_forward_ema_s == 0.0
                                     ? forward_s
                                     : (1.0 - kWeight) * plain_decode_forward_ema_s + kWeight * forward_s;
  }
}

double Engine::Impl::spec_speedup_estimate(const Sequence& s) const {
  if (s.num_spec_tokens == 0 || s.spec_forward_time_s <= 0.0) return 0.0;
  const double plain_step_s = s.num_plain_decode_steps > 0 ? s.plain_forward_time_s / s.num_plain_decode_steps
                                                           : plain_decode_forward_ema_s;
  if (plain_step_s <= 0.0) return 0.0;
  const double without = (s.num_spec_tokens + s.num_plain_decode_steps) * plain_step_s;
  return without / (s.spec_forward_time_s + s.plain_forward_time_s);
}

bool Engine::Impl::draft_with_model(const std::vector<ScheduledSequence>& work, StepStats& stats) {
  auto* proposer = dynamic_cast<ModelProposer*>(scheduler->proposer());
  draft_fed_end.assign(work.size(), -1);
  if (!proposer) return true;
  const bool own_kv = proposer->has_own_kv();
  draft_seqs.clear();
  int32_t num_draft_tokens = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    const ScheduledSequence& w = work[i];
    Sequence& s = *w.seq;
    // Early exit drafts only; a draft model also keeps its K/V up with
    // every row the target computes.
    if (w.num_draft == 0 && !own_kv) continue;
    DraftSequence d;
    d.tokens = s.tokens;
    d.table = &s.table;
    d.num_draft = w.num_draft;
    d.draft = &s.draft;
    d.end_row = s.num_computed + (w.num_rows - w.num_draft);
    d.first_row = own_kv ? std::min(s.draft_num_computed, s.num_computed) : d.end_row - 1;
    if (d.first_row >= d.end_row) continue;
    draft_fed_end[i] = d.end_row + std::max(0, d.num_draft - 1);
    num_draft_tokens += d.num_draft;
    draft_seqs.push_back(d);
  }
  if (draft_seqs.empty()) return true;
  const auto start = Clock::now();
  if (!proposer->draft(draft_seqs, &interrupted)) return false;
  const double draft_s = std::chrono::duration<double>(Clock::now() - start).count();
  stats.propose_time_s += draft_s;
  stats.num_draft_forwards = proposer->last_num_forwards();
  stats.num_draft_forward_rows = proposer->last_num_rows();
  if (num_draft_tokens > 0) {
    constexpr double kWeight = 0.1;
    const double per_token = draft_s / num_draft_tokens;
    draft_s_per_token_ema =
        draft_s_per_token_ema == 0.0 ? per_token : (1.0 - kWeight) * draft_s_per_token_ema + kWeight * per_token;
  }
  return true;
}

void Engine::Impl::note_draft_kv(const std::vector<ScheduledSequence>& work) {
  for (size_t i = 0; i < work.size(); ++i) {
    Sequence& s = *work[i].seq;
    // Rejected drafts' rows are beyond num_computed; a fully accepted
    // draft's last token was never fed (the draft model catches up on it
    // next step, from draft_num_computed).
    if (draft_fed_end[i] >= 0) s.draft_num_computed = std::min(s.num_computed, draft_fed_end[i]);
  }
}

void Engine::Impl::plan_cascade_groups(const std::vector<ScheduledSequence>& work, StepStats& stats) {
  plan_cascade(batch, config.cascade, config.block_size);
  last_cascade.clear();
  for (int32_t g = 0; g < batch.num_cascade_groups(); ++g) {
    CascadeGroupSnapshot group;
    group.num_shared_tokens = batch.cascade_prefix_len[static_cast<size_t>(g)];
    for (int32_t i = batch.cascade_seq_start[static_cast<size_t>(g)]; i < batch.cascade_seq_start[g + 1]; ++i) {
      const Sequence& s = *work[static_cast<size_t>(batch.cascade_seqs[static_cast<size_t>(i)])].seq;
      group.request_ids.push_back(s.id);
      group.indices.push_back(s.index);
      events.record(EngineEventType::Cascade, s.id, s.index, group.num_shared_tokens,
                    batch.cascade_seq_start[g + 1] - batch.cascade_seq_start[static_cast<size_t>(g)]);
      if (group.blocks.empty()) {
        const int32_t num_blocks = (group.num_shared_tokens + config.block_size - 1) / config.block_size;
        group.blocks.assign(s.table.blocks().begin(), s.table.blocks().begin() + num_blocks);
      }
    }
    stats.num_cascade_seqs += static_cast<int32_t>(group.request_ids.size());
    stats.num_cascade_tokens += group.num_shared_tokens;
    last_cascade.push_back(std::move(group));
  }
  stats.num_cascade_groups = batch.num_cascade_groups();
}

void Engine::step() {
  Impl& m = *impl_;
  if (m.interrupted.load()) return;
  const auto start = Sequence::Clock::now();
  m.events.record(EngineEventType::StepBegin, 0, 0, static_cast<int64_t>(m.num_steps));
  m.drain_inbox();
  const std::vector<ScheduledSequence> work = m.scheduler->schedule();
  StepStats stats;
  stats.step = m.num_steps;
  stats.propose_time_s = m.scheduler->last_propose_time_s();
  // A model proposer fills the drafts the scheduler reserved rows for.
  // Interrupted: left half done, as a forward pass is (below).
  if (!work.empty() && !m.draft_with_model(work, stats)) return;
  if (!work.empty()) {
    m.batch.clear();
    std::vector<char> wants_logits;
    std::vector<char> ends_prompt_only;  // [work] max_tokens = 0 and its prompt is done with this step
    std::vector<int32_t> num_scored_rows;  // [work] prompt rows whose logits score the next prompt token
    std::vector<int32_t> draw_of;  // [work] the sequence's draw in m.batch.draws, or -1
    for (const ScheduledSequence& w : work) {
      Sequence& s = *w.seq;
      m.slots.resize(static_cast<size_t>(w.num_rows));
      for (int32_t i = 0; i < w.num_rows; ++i) m.slots[static_cast<size_t>(i)] = s.table.slot(s.num_computed + i);
      // Rows for the known tokens, then (speculative verification) the draft's.
      const int32_t num_known_rows = w.num_rows - w.num_draft;
      const bool at_end = s.num_computed + num_known_rows == static_cast<int32_t>(s.tokens.size());
      // Prompt scoring: rows [first unscored, last prompt row) of this
      // chunk. They run to its end or to the row that wants the next token's
      // logits, so with it they are the chunk's last rows (a sequence scores
      // its prompt before it samples, and so before it verifies drafts).
      const int32_t scored = s.num_rows_to_score(num_known_rows);
      num_scored_rows.push_back(scored);
      // max_tokens = 0: nothing is sampled, so its last row needs no logits;
      // after scored rows they come back all the same (logits rows are a
      // chunk's last rows), unused.
      const bool prompt_only = s.sampler.params().max_tokens == 0;
      const bool want = at_end && (!prompt_only || scored > 0);
      ends_prompt_only.push_back(at_end && prompt_only);
      const int32_t* row_tokens = s.tokens.data() + s.num_computed;
      if (w.num_draft > 0) {
        m.row_tokens.assign(row_tokens, row_tokens + num_known_rows);
        m.row_tokens.insert(m.row_tokens.end(), s.draft.begin(), s.draft.end());
        row_tokens = m.row_tokens.data();
      }
      m.batch.add_sequence(row_tokens, w.num_rows, s.num_computed, m.slots.data(), s.table.blocks(),
                           scored + (want ? 1 + w.num_draft : 0));
      wants_logits.push_back(want);
      // Only its token needed: the backend draws it (StepBatch::draws).
      const bool draw = want && scored == 0 && w.num_draft == 0 && m.backend_may_draw(s);
      draw_of.push_back(draw ? m.batch.num_draws() : -1);
      if (draw) m.add_draw(s, static_cast<int32_t>(m.batch.logits_rows.size()) - 1);
      const bool decode = num_known_rows == 1 && s.prompt_computed();
      (decode ? stats.num_decode_tokens : stats.num_prefill_tokens) += num_known_rows;
      if (w.num_draft > 0) {
        stats.num_draft_tokens += w.num_draft;
        stats.num_verify_rows += w.num_rows;
      }
      m.events.record(EngineEventType::Schedule, s.id, s.index, w.num_rows);
    }
    stats.num_backend_draws = m.batch.num_draws();
    stats.num_spec_pauses = m.scheduler->last_num_spec_pauses();
    m.spec_totals.num_pauses += stats.num_spec_pauses;
    m.plan_cascade_groups(work, stats);
    // Interrupted: the engine is about to be destroyed, so the half-done
    // step (blocks allocated, nothing computed committed) is left as it is.
    const auto forward_start = Sequence::Clock::now();
    if (!m.backend->forward(m.batch, m.logits, &m.interrupted)) return;
    if (m.runner) note_rank_timings(*m.runner, m.events, stats);  // the CPU backend's ranks
    const double forward_s = std::chrono::duration<double>(Sequence::Clock::now() - forward_start).count();
    stats.forward_time_s = forward_s;
    stats.graph_replayed = m.backend->last_forward_graphed();
    stats.device_time_s = m.backend->last_device_time_s();
    m.note_forward_time(work, stats, forward_s);
    if (m.draft_s_per_token_ema > 0.0) {
      // A draft token's cost in target rows, for the auto-disable rule.
      constexpr double kWeight = 0.1;
      const double per_row = forward_s / (m.batch.num_tokens + SpecTracker::kFixedCostInRows);
      m.target_s_per_row_ema =
          m.target_s_per_row_ema == 0.0 ? per_row : (1.0 - kWeight) * m.target_s_per_row_ema + kWeight * per_row;
      m.scheduler->set_draft_cost_in_rows(m.draft_s_per_token_ema / m.target_s_per_row_ema);
    }
    // Rows of verifying sequences are committed once verification says which stay.
    for (const ScheduledSequence& w : work) {
      if (w.num_draft == 0) m.scheduler->commit(w, w.num_rows);
    }
    const auto sample_start = Sequence::Clock::now();
    const size_t vocab = static_cast<size_t>(m.weights->config.vocab_size);
    size_t row = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      Sequence& s = *work[i].seq;
      int32_t not_finite_at = -1;  // the first scored position whose row is not finite
      for (int32_t r = 0; r < num_scored_rows[i]; ++r, ++row) {
        // The row at position p scores the token at p + 1.
        const int32_t position = m.batch.positions[static_cast<size_t>(m.batch.logits_rows[row])] + 1;
        const float* scored = m.logits.data() + row * vocab;
        if (not_finite_at >= 0) continue;
        if (logits_not_finite(scored, static_cast<int32_t>(vocab))) {
          not_finite_at = position;
          continue;
        }
        s.on_prompt_logits(position, s.tokens[static_cast<size_t>(position)], scored, static_cast<int32_t>(vocab));
        s.num_scored_prompt_positions = position;
      }
      if (not_finite_at >= 0) {
        if (wants_logits[i]) row += static_cast<size_t>(1 + work[i].num_draft);  // its rows after the scored ones
        const std::vector<Sequence*> siblings = s.num_forks_pending > 0 ? m.fork_siblings(s) : std::vector<Sequence*>{};
        m.finish_not_finite(s, not_finite_at);
        for (Sequence* sib : siblings) m.finish_not_finite(*sib, not_finite_at);
        continue;
      }
      if (ends_prompt_only[i]) {
        if (wants_logits[i]) ++row;  // the unused row after scored ones
        // Every completion of the request ends here, with no token.
        const std::vector<Sequence*> siblings = s.num_forks_pending > 0 ? m.fork_siblings(s) : std::vector<Sequence*>{};
        m.finish(s, FinishReason::Length);
        for (Sequence* sib : siblings) m.finish(*sib, FinishReason::Length);
        continue;
      }
      if (!wants_logits[i]) continue;
      if (work[i].num_draft > 0) {
        const int32_t num_kept = m.verify_and_publish(s, m.logits.data() + row * vocab, stats);
        row += static_cast<size_t>(1 + work[i].num_draft);
        stats.num_rolled_back_blocks += m.scheduler->commit(work[i], num_kept);
        continue;
      }
      const float* logits = m.logits.data() + row++ * vocab;
      if (draw_of[i] >= 0) {
        const int32_t token = m.backend->drawn_tokens()[static_cast<size_t>(draw_of[i])];
        if (token < 0) {  // its row was not finite (Backend::drawn_tokens)
          m.finish_not_finite(s);
          continue;
        }
        const FinishReason reason = m.publish_token(s, token).second;
        if (reason != FinishReason::None) m.finish(s, reason);
        continue;
      }
      // Parallel sampling: siblings appear when the prompt is done and draw
      // their first token from the same logits.
      const std::vector<Sequence*> siblings = s.num_forks_pending > 0 ? m.fork_siblings(s) : std::vector<Sequence*>{};
      m.sample_and_publish(s, logits);
      for (Sequence* sib : siblings) m.sample_and_publish(*sib, logits);
    }
    stats.sample_time_s = std::chrono::duration<double>(Sequence::Clock::now() - sample_start).count();
    m.note_draft_kv(work);
    m.shift_full_contexts();
    stats.num_seqs = static_cast<int32_t>(work.size());
    const BackendAttentionStats attention = m.backend->last_attention_stats();
    stats.attention_time_s = attention.time_s;
    stats.cascade_kv_bytes_saved = attention.cascade_kv_bytes_saved;
  } else {
    m.last_cascade.clear();
  }
  m.num_pending -= static_cast<int32_t>(m.scheduler->reap_finished().size());
  const BlockPool& blocks = m.kv_manager->pool();
  stats.num_used_blocks = blocks.num_used_blocks();
  stats.num_total_blocks = blocks.num_blocks();
  stats.step_time_s = std::chrono::duration<double>(Sequence::Clock::now() - start).count();
  m.stats = stats;
  // Bounded when nobody asks for snapshots: the oldest half goes at once.
  if (m.steps_since_snapshot.size() >= EngineSnapshot::kMaxRecentSteps)
    m.steps_since_snapshot.erase(m.steps_since_snapshot.begin(),
                                 m.steps_since_snapshot.begin() + EngineSnapshot::kMaxRecentSteps / 2);
  m.steps_since_snapshot.push_back(stats);
  ++m.num_steps;
  m.events.record(EngineEventType::StepEnd, 0, 0, stats.num_batch_tokens(), stats.num_seqs);
  m.events.record(EngineEventType::KvUsage, 0, 0, blocks.num_used_blocks(), blocks.num_cached_free_blocks());
  if (m.config.record_snapshots) m.last_snapshot = m.build_snapshot();
}

}  // namespace kvscope
