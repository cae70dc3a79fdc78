// Engine::reconfigure(): new settings without reloading the model. The KV
// pool, its manager and the scheduler are built new (make_kv_setup, as in
// create); every unfinished sequence leaves the old scheduler as a recompute
// preemption would (Scheduler::take_all_for_recompute) and joins the new one's
// waiting queue with its tokens, sampler, detokeniser and stop matcher intact.
// Settings that each step reads afresh (SettingEffect::NextStep: cascade;
// and record_snapshots) change in place: nothing is rebuilt, no request
// recomputes, the prefix cache stays.
// The weights stay repacked in the backend, which is handed the new pool
// (Backend::use_kv_pool); a new tp split builds a new backend.
#include <algorithm>
#include <fmt/format.h>

#include "engine_impl.h"
#include "kvscope/setting_table.h"

namespace kvscope {
namespace {

// Why `s` cannot run under `c` with a pool of num_blocks blocks; empty when it can.
std::string why_it_does_not_fit(const Sequence& s, const EngineConfig& c, int32_t num_blocks) {
  const int32_t num_tokens = static_cast<int32_t>(s.tokens.size());
  if (num_tokens >= c.max_model_len) {
    return fmt::format("after reconfiguring, the request has {} tokens but the max model length is {}",
                       num_tokens, c.max_model_len);
  }
  // Its parallel-sampling siblings still to fork run beside it: with more
  // than max_seqs it could never be admitted, and would hold the queue.
  if (1 + s.num_forks_pending > c.max_seqs) {
    return fmt::format("after reconfiguring, the request's {} choices need {} sequences at once, more than max_seqs "
                       "= {}",
                       1 + s.num_forks_pending, 1 + s.num_forks_pending, c.max_seqs);
  }
  const int32_t need = s.table.num_blocks_needed(s.max_total_tokens);
  if (need > num_blocks) {
    return fmt::format("after reconfiguring, the request needs {} KV blocks ({} tokens) but the pool has only {}",
                       need, s.max_total_tokens, num_blocks);
  }
  return {};
}

}  // namespace

Status Engine::reconfigure(const EngineConfig& config) {
  Impl& m = *impl_;
  if (Status s = problems_status(config.validate()); !s.ok()) return s;
  if (applies_in_place(m.requested, config)) {
    // Settings each step reads (SettingEffect::NextStep), and record_snapshots.
    std::lock_guard lock(m.inbox_mutex);  // submit() reads the config under it
    for (const std::string& key : changed_settings(m.requested, config)) {
      const SettingSpec* row = find_setting(key);
      row->set(m.config, row->get(config));
    }
    m.config.record_snapshots = config.record_snapshots;
    m.requested = config;
    if (!config.record_snapshots) m.last_snapshot = nullptr;
    return Status::success();
  }
  if (config.model_path != m.config.model_path) {
    return Error{fmt::format("the engine runs {}; a different model ({}) needs Engine::create",
                             m.config.model_path, config.model_path)};
  }
  // Everything that can fail comes first, so that a failure changes nothing.
  if (std::string why = early_exit_problem(config, m.weights->config.num_layers); !why.empty()) return Error{why};
  auto choice = m.settle_backend(config);
  if (!choice.ok()) return Error{choice.error()};
  // A draft model is loaded beside the model when it is new (the model's weights stay).
  std::shared_ptr<const ModelWeights> draft_weights;
  if (config.spec == SpecMethod::Draft) {
    if (m.draft_weights && m.draft_path == config.spec_draft_model) {
      draft_weights = m.draft_weights;
    } else {
      auto draft = load_draft_model(config.spec_draft_model, config.model_path, m.vocab_tokens,
                                    m.weights->config.vocab_size);
      if (!draft.ok()) return Error{draft.error()};
      draft_weights = std::move(draft->weights);
    }
  }
  const ModelConfig* draft_shape = draft_weights ? &draft_weights->config : nullptr;
  const std::optional<DeviceMemory> device = m.device_memory(*choice);
  const KvPlan plan = plan_kv(m.plan_shape(draft_shape), config, physical_memory_bytes(), device ? &*device : nullptr);
  if (Status s = problems_status(plan.problems); !s.ok()) return s;
  EngineConfig resolved = config;
  resolved.max_model_len = plan.max_model_len;
  std::unique_ptr<ThreadPool> threads;
  if (Impl::thread_count(resolved) != m.pool->num_threads()) {
    threads = std::make_unique<ThreadPool>(Impl::thread_count(resolved));
  }
  // New pools for the running backends, or a new backend where the split
  // (tp, tp_reduce) changed (its weights repacked into new shards) or the
  // draft model is new.
  auto setup = m.make_kv_setup(resolved, plan, draft_weights, threads ? *threads : *m.pool, *choice);
  if (!setup.ok()) return Error{setup.error()};
  auto shards = m.shard_plan(resolved);  // checked by make_kv_setup
  if (!shards.ok()) return Error{shards.error()};

  // Requests submitted and cancelled so far reach the old scheduler; the
  // finished ones leave it. The rest come out holding no blocks.
  m.drain_inbox();
  m.num_pending -= static_cast<int32_t>(m.scheduler->reap_finished().size());
  std::vector<std::unique_ptr<Sequence>> seqs = m.scheduler->take_all_for_recompute();
  const int64_t preemptions = m.scheduler->num_preemptions();  // theirs included
  {
    // submit() reads the config and info under this lock; requests it queued
    // since the drain above were built against the old block size.
    std::lock_guard lock(m.inbox_mutex);
    for (auto& s : m.inbox) seqs.push_back(std::move(s));
    m.inbox.clear();
    m.config = resolved;
    m.info.setting_warnings = Impl::config_warnings(config, plan);
    for (const std::string& note : shards->notes) m.info.setting_warnings.push_back(note);
    // The old scheduler refers to the old manager, which refers to the old pools: replace in that order.
    m.scheduler = std::move(setup->scheduler);
    m.scheduler->carry_preemptions(preemptions);
    m.kv_manager = std::move(setup->manager);
    m.recent_shifts.clear();  // their block ids were the old pool's
    if (threads) m.pool = std::move(threads);
    const bool new_backends = setup->backend || setup->draft_backend;
    if (setup->backend) {
      m.set_backend(std::move(setup->backend));
    } else {
      m.backend->use_kv_pool(std::move(setup->kv));
    }
    m.backend->set_thread_pool(*m.pool);
    m.backend_choice = std::move(choice).value();
    m.device = device;
    if (setup->draft_backend) {
      m.draft_backend = std::move(setup->draft_backend);
    } else if (setup->draft_kv) {
      m.draft_backend->use_kv_pool(std::move(setup->draft_kv));
    }
    if (!draft_weights) m.draft_backend.reset();
    if (m.draft_backend) m.draft_backend->set_thread_pool(*m.pool);
    m.draft_weights = draft_weights;
    m.draft_path = draft_weights ? config.spec_draft_model : std::string();
    m.attach_model_proposer();
    if (new_backends) m.release_file_pages();  // their repacking read the files again
    m.backend->reserve(resolved.max_batched_tokens);
    std::vector<float>().swap(m.logits);  // reserve() alone never shrinks
    m.logits.reserve(static_cast<size_t>(logits_buffer_floats(resolved, m.weights->config.vocab_size)));
    m.update_memory_info();
  }

  for (auto& s : seqs) {
    s->table = BlockTable(resolved.block_size);
    s->max_total_tokens = static_cast<int32_t>(std::min<int64_t>(
        resolved.max_model_len, static_cast<int64_t>(s->num_prompt_tokens) + s->sampler.params().max_tokens));
    if (std::string why = why_it_does_not_fit(*s, resolved, m.info.num_kv_blocks); !why.empty()) {
      m.finish(*s, FinishReason::Error, std::move(why));
      --m.num_pending;
      continue;
    }
    m.scheduler->add(std::move(s));
  }
  m.requested = config;
  m.last_snapshot = resolved.record_snapshots ? m.build_snapshot() : nullptr;
  return Status::success();
}

}  // namespace kvscope
