// Engine: creation (model, tokenizer, backend and KV pool, scheduler), thread-safe
// submission and cancellation, and accessors. One iteration of continuous
// batching is in engine_step.cpp; the inspector's snapshot in engine_snapshot.cpp.
#include "kvscope/engine.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <new>
#include <string_view>
#include <thread>
#include <unistd.h>

#include "context_shift.h"
#include "engine_impl.h"
#include "kernels/cpu/usable_cpus.h"
#include "kv/prefix_hash.h"
#include "model/model_loader.h"
#include "parallel/rank_memory.h"
#include "spec/proposer.h"
#include "tokenizer/prompt_builder.h"

namespace kvscope {
namespace {

// Threads the kernels may really run at once (affinity and cgroup quota).
int32_t usable_cpus() { return usable_cpu_count(); }

}  // namespace

int32_t resolved_early_exit_layers(const EngineConfig& config, int32_t num_layers) {
  return config.spec_early_exit_layer > 0 ? config.spec_early_exit_layer : std::max(1, num_layers / 2);
}

std::string early_exit_problem(const EngineConfig& config, int32_t num_layers) {
  if (config.spec == SpecMethod::EarlyExit && (config.tp > 1 || config.tp_reduce != TpReduce::Fast)) {
    return "spec = early_exit drafts with the model's own runner, which needs tp = 1 and tp_reduce = fast";
  }
  return early_exit_layer_problem(config, num_layers);
}

Result<LoadedModel> load_draft_model(const std::string& draft_path, const std::string& model_path,
                                     const std::vector<std::string>& model_tokens, int32_t model_vocab_size) {
  auto draft = load_model(draft_path);
  if (!draft.ok()) return Error{fmt::format("the draft model cannot be loaded: {}", draft.error())};
  const std::vector<std::string>& a = model_tokens;
  const std::vector<std::string>& b = draft->vocab.tokens;
  if (a.size() != b.size() || draft->weights->config.vocab_size != model_vocab_size) {
    return Error{fmt::format("the draft model {} has a vocabulary of {} tokens ({} logits) but the model {} has {} "
                             "({} logits); a draft model needs the same vocabulary",
                             draft_path, b.size(), draft->weights->config.vocab_size, model_path, a.size(),
                             model_vocab_size)};
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return Error{fmt::format("the draft model {} has token {} = '{}' where the model {} has '{}'; a draft model "
                               "needs the same vocabulary",
                               draft_path, i, b[i], model_path, a[i])};
    }
  }
  return draft;
}

ModelShape Engine::Impl::plan_shape(const ModelConfig* draft) const {
  ModelShape shape = model_shape(info);
  if (draft) {
    shape.draft_num_layers = draft->num_layers;
    shape.draft_num_kv_heads = draft->num_kv_heads;
    shape.draft_head_dim = draft->head_dim;
  }
  return shape;
}

void Engine::Impl::attach_model_proposer() {
  auto* proposer = dynamic_cast<ModelProposer*>(scheduler->proposer());
  if (!proposer) return;
  if (proposer->has_own_kv()) {
    proposer->attach(*draft_backend, 0);
  } else {  // early exit: the model's own backend, first layers only (refused under tp: early_exit_problem)
    proposer->attach(*backend, resolved_early_exit_layers(config, weights->config.num_layers));
  }
  draft_s_per_token_ema = 0.0;  // a new proposer: measured again
}

int32_t Engine::Impl::thread_count(const EngineConfig& config) {
  const int32_t cpus = usable_cpus();
  return config.num_threads > 0 ? std::min(config.num_threads, cpus) : cpus;
}

std::vector<std::string> Engine::Impl::config_warnings(const EngineConfig& config, const KvPlan& plan) {
  std::vector<std::string> warnings = plan.warnings;
  if (config.num_threads > usable_cpus()) {
    warnings.push_back(fmt::format("threads = {} is more than the {} CPUs this process may use; using {}",
                                   config.num_threads, usable_cpus(), usable_cpus()));
  }
  // context_overflow = shift where no shift can happen stops like `stop`:
  // say so when the settings are applied, not after a reply ends early.
  if (config.context_overflow == ContextOverflow::Shift) {
    if (!config.paged) {
      warnings.push_back("context_overflow = shift needs paged KV blocks: with paging off, a full context stops "
                         "as with stop");
    } else if (const ContextShiftPlan shift = plan_context_shift(plan.max_model_len - 1, config.block_size,
                                                                 config.context_keep, plan.max_model_len);
               shift.drop_blocks == 0) {
      warnings.push_back(fmt::format("context_overflow = shift has nothing to drop in a context of {} tokens "
                                     "(blocks of {}, the first {} kept): a full context stops as with stop; "
                                     "lengthen the context or lower block_size or context_keep",
                                     plan.max_model_len, config.block_size,
                                     shift.keep_blocks * config.block_size));
    }
  }
  return warnings;
}

Result<ShardPlan> Engine::Impl::shard_plan(const EngineConfig& c) const {
  auto plan = plan_shards(*weights, c.tp, c.tp_reduce == TpReduce::Deterministic);
  if (!plan.ok()) return Error{fmt::format("{}: {}", weights->config.name.empty() ? "the model" : weights->config.name,
                                           plan.error())};
  return plan;
}

void Engine::Impl::update_memory_info() {
  const BackendMemory memory = backend->memory();
  info.num_kv_blocks = backend->kv_blocks().num_blocks();
  info.block_size = config.block_size;
  info.max_model_len = config.max_model_len;
  info.kv_pool_bytes = memory.kv_pool_bytes + (draft_backend ? draft_backend->kv_blocks().pool_bytes() : 0);
  info.swap_pool_bytes = kv_manager->swap_bytes();
  info.workspace_bytes = memory.workspace_bytes + logits.capacity() * sizeof(float);
  info.backend = backend_kind_name(backend->kind());
  info.backend_reason = backend_choice.reason;
  info.device_name = memory.device_name;
  info.device_total_bytes = device ? static_cast<size_t>(device->total_bytes) : 0;
  info.device_free_bytes = device ? static_cast<size_t>(device->free_bytes + device->held_bytes) : 0;
  // The CUDA backend has no runner: one rank, the whole model.
  const ShardPlan ranks = runner ? runner->plan() : ShardPlan::whole(weights->config);
  info.tensor_parallel = rank_memory(ranks, *weights, info.num_kv_blocks, info.block_size, config.kv_cache_type,
                                     config.max_batched_tokens);
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) { return create(config, {}); }

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config, const LoadProgress& progress) {
  // Each stage's share of the fraction: reading and the tokenizer are quick
  // (the file is mapped); repacking every matrix is most of the time.
  auto report = [&progress](double fraction, std::string_view stage) {
    return !progress || progress(fraction, stage);
  };
  const Error cancelled{std::string(kLoadCancelledMessage)};
  if (Status s = problems_status(config.validate()); !s.ok()) return Error{s.error()};
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->requested = config;
  if (!report(0.0, "reading model file")) return cancelled;
  auto model = load_model(config.model_path);
  if (!model.ok()) return Error{model.error()};
  impl->weights = std::move(model->weights);
  const ModelConfig& mc = impl->weights->config;
  // The shape first: plan_kv reads it (model_shape(info)) before the pool exists.
  ModelInfo& shape = impl->info;
  shape.num_layers = mc.num_layers;
  shape.hidden_size = mc.hidden_size;
  shape.ffn_size = mc.ffn_size;
  shape.num_heads = mc.num_heads;
  shape.num_kv_heads = mc.num_kv_heads;
  shape.head_dim = mc.head_dim;
  shape.vocab_size = mc.vocab_size;
  shape.context_length = mc.context_length;

  if (!report(0.04, "loading tokenizer")) return cancelled;
  auto tok = create_tokenizer(model->vocab);
  if (!tok.ok()) return Error{fmt::format("{}: {}", config.model_path, tok.error())};
  impl->tokenizer = std::move(tok).value();  // no more tokens than the embedding has rows (load_model)
  impl->chat_template = std::make_unique<ChatTemplate>(ChatTemplate::from_vocab(model->vocab, *impl->tokenizer));
  if (std::string why = early_exit_problem(config, mc.num_layers); !why.empty()) return Error{why};
  if (config.spec == SpecMethod::Draft) {
    if (!report(0.05, "reading draft model file")) return cancelled;
    auto draft = load_draft_model(config.spec_draft_model, config.model_path, model->vocab.tokens, mc.vocab_size);
    if (!draft.ok()) return Error{draft.error()};
    impl->draft_weights = std::move(draft->weights);
    impl->draft_path = config.spec_draft_model;
  }
  impl->vocab_tokens = model->vocab.tokens;
  const ModelConfig* draft_shape = impl->draft_weights ? &impl->draft_weights->config : nullptr;

  auto choice = impl->settle_backend(config);
  if (!choice.ok()) return Error{choice.error()};
  impl->backend_choice = std::move(choice).value();
  if (!report(0.07, "allocating KV pool")) return cancelled;
  impl->device = impl->device_memory(impl->backend_choice);
  const KvPlan plan = plan_kv(impl->plan_shape(draft_shape), impl->config, physical_memory_bytes(),
                              impl->device ? &*impl->device : nullptr);
  if (Status s = problems_status(plan.problems); !s.ok()) return Error{s.error()};
  impl->config.max_model_len = plan.max_model_len;
  impl->info.setting_warnings = Impl::config_warnings(config, plan);
  impl->pool = std::make_unique<ThreadPool>(Impl::thread_count(config));

  // make_kv_setup allocates the pools before the slow repacking, so that a
  // budget that cannot work fails at once.
  constexpr double kRepackStart = 0.1;
  if (!report(kRepackStart, "repacking weights")) return cancelled;
  auto setup = impl->make_kv_setup(impl->config, plan, impl->draft_weights, *impl->pool, impl->backend_choice,
                                   [&](double done) {
    return report(kRepackStart + (1.0 - kRepackStart) * done, "repacking weights");
  });
  if (!setup.ok()) return Error{setup.error()};
  auto shards = impl->shard_plan(impl->config);  // checked by make_kv_setup above
  for (const std::string& note : shards->notes) impl->info.setting_warnings.push_back(note);
  impl->set_backend(std::move(setup->backend));
  impl->draft_backend = std::move(setup->draft_backend);
  impl->release_file_pages();
  impl->kv_manager = std::move(setup->manager);
  impl->scheduler = std::move(setup->scheduler);
  impl->attach_model_proposer();
  impl->backend->reserve(impl->config.max_batched_tokens);
  impl->logits.reserve(static_cast<size_t>(logits_buffer_floats(impl->config, mc.vocab_size)));

  ModelInfo& info = impl->info;
  info.path = config.model_path;
  info.name = mc.name;
  info.architecture = model->architecture;
  info.weight_bytes = impl->weights->matrix_bytes();
  info.weight_memory_bytes = impl->weights->held_bytes();
  info.kv_bytes_per_token = static_cast<size_t>(plan.kv_bytes_per_token);
  info.chat_template_family = impl->chat_template->family_name();
  info.recommended_sampling = model->sampling;
  impl->update_memory_info();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

void Engine::Impl::release_file_pages() const {
  for (const ModelWeights* w : {weights.get(), draft_weights.get()}) {
    if (w && w->release_file_pages) w->release_file_pages();
  }
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<RequestId> Engine::submit(GenerationRequest request, SubmittedPrompt* submitted) {
  Impl& m = *impl_;
  if (Status s = request.sampling.validate(); !s.ok()) return Error{s.error()};
  if (request.n < 1 || request.n > 64) return Error{fmt::format("n = {} is out of range [1, 64]", request.n)};
  if (request.first_scored_position < 1) {
    return Error{fmt::format("first_scored_position = {} must be >= 1 (position 0 has nothing before it)",
                             request.first_scored_position)};
  }
  auto built = build_prompt(request, *m.tokenizer, *m.chat_template);
  if (!built.ok()) return Error{built.error()};
  std::vector<int32_t> prompt = std::move(built->tokens);
  for (int32_t t : prompt) {
    if (t < 0 || t >= m.weights->config.vocab_size) return Error{fmt::format("token id {} is out of range", t)};
  }
  // Under the inbox lock: reconfigure() changes the limits and block size
  // under it, so a request is checked and built against one consistent config.
  std::lock_guard lock(m.inbox_mutex);
  // Each choice is a sequence of its own, all running together once forked.
  if (request.n > m.config.max_seqs) {
    return Error{fmt::format("n = {} needs as many sequences at once, more than max_seqs = {}; raise max_seqs or "
                             "lower n",
                             request.n, m.config.max_seqs)};
  }
  const int32_t max_len = m.config.max_model_len;
  int32_t num_truncated = 0;
  // A prompt to score is scored whole: its scores would be of another text.
  const bool scored = static_cast<bool>(request.on_prompt_logits);
  // max_tokens = 0 needs no room after the prompt.
  const int32_t longest = request.sampling.max_tokens == 0 ? max_len : max_len - 1;
  // shift also cuts a prompt that does not fit: a chat's next prompt carries
  // the whole conversation, which after a shift no longer fits, and refusing
  // it would end the chat that shift exists to carry on. It keeps the start
  // and the latest turns, as a shift does, and leaves a quarter of the
  // context for the reply (a shift frees as much); a prompt that fits is
  // left whole, since the reply can shift.
  const bool shifting = m.config.context_overflow == ContextOverflow::Shift;
  const bool truncating = m.config.context_overflow == ContextOverflow::TruncateMiddle || shifting;
  const bool may_truncate = truncating && !scored && (!shifting || static_cast<int32_t>(prompt.size()) > longest);
  if (may_truncate) {
    // Room for the reply: max_tokens (shift: a quarter of the context), but
    // at most a quarter of the context, so that a huge max_tokens does not
    // eat the prompt.
    const int64_t wanted_room = shifting ? max_len / 4 : request.sampling.max_tokens;
    const int32_t room = static_cast<int32_t>(std::clamp<int64_t>(wanted_room, 1, std::max(1, max_len / 4)));
    const size_t before = prompt.size();
    prompt = truncate_middle(prompt, max_len - room, m.config.context_keep);
    num_truncated = static_cast<int32_t>(before - prompt.size());
    if (num_truncated > 0) {
      built->warnings.push_back(fmt::format("the prompt had {} tokens; {} from its middle were dropped to fit the "
                                            "context of {} (context_overflow = {})",
                                            before, num_truncated, max_len, shifting ? "shift" : "truncate_middle"));
    }
  }
  if (static_cast<int32_t>(prompt.size()) > longest) {
    const bool truncation_off = scored && truncating;
    // What to do about it: a prompt to score cannot be cut; any other can
    // (context_overflow), or the context can grow where the model and the
    // pool allow.
    const std::string fix =
        truncation_off ? "; a prompt to score is not truncated"
        : fmt::format("; context_overflow = truncate_middle (or shift) would cut its middle to fit{}",
                      max_len < m.info.context_length
                          ? fmt::format(", or a larger max_model_len (the model was trained on {}) with a KV pool "
                                        "that holds it",
                                        m.info.context_length)
                          : "");
    return Error{fmt::format("the prompt has {} token{}; the context holds {} (max model length){}{}", prompt.size(),
                             prompt.size() == 1 ? "" : "s", max_len,
                             static_cast<int32_t>(prompt.size()) == max_len ? ", with no room left for a reply" : "",
                             fix)};
  }
  auto seq = std::make_unique<Sequence>(0, 0, std::move(prompt), request.sampling, std::move(request.on_event),
                                        *m.tokenizer, m.config.block_size);
  seq->max_total_tokens = static_cast<int32_t>(
      std::min<int64_t>(max_len, static_cast<int64_t>(seq->tokens.size()) + request.sampling.max_tokens));
  seq->num_forks_pending = request.n - 1;
  seq->num_truncated_prompt_tokens = num_truncated;
  seq->on_logits = std::move(request.on_logits);
  seq->on_prompt_logits = std::move(request.on_prompt_logits);
  seq->num_scored_prompt_positions = request.first_scored_position - 1;
  seq->hash_seed = prefix_hash_seed(request.cache_salt);
  const int32_t need = seq->table.num_blocks_needed(seq->max_total_tokens);
  if (need > m.info.num_kv_blocks) {
    // The setting that sized the pool is the one to raise (kv_budget in words).
    const std::string_view sizing = pool_sizing_setting(m.config, m.device.has_value());
    const std::string_view pool_setting = sizing == "kv_budget" ? "the KV budget" : sizing;
    // A prompt that does not fit with one reply token: fewer max tokens cannot help.
    const int32_t prompt_and_one = std::min(static_cast<int32_t>(seq->tokens.size()) + 1, seq->max_total_tokens);
    const int32_t need_prompt = seq->table.num_blocks_needed(prompt_and_one);
    if (need_prompt > m.info.num_kv_blocks) {
      return Error{fmt::format("the prompt needs {} KV block{} ({} tokens with the first reply token) but the pool "
                               "has only {}; raise {} or shorten the prompt",
                               need_prompt, need_prompt == 1 ? "" : "s", prompt_and_one, m.info.num_kv_blocks,
                               pool_setting)};
    }
    return Error{fmt::format("the request needs {} KV block{} ({} tokens) but the pool has only {}; raise {} or "
                             "lower max tokens",
                             need, need == 1 ? "" : "s", seq->max_total_tokens, m.info.num_kv_blocks, pool_setting)};
  }
  if (submitted) {
    submitted->tokens = seq->tokens;
    submitted->warnings = std::move(built->warnings);
    submitted->num_dropped_tokens = num_truncated;
  }
  seq->id = m.next_id++;
  const RequestId id = seq->id;
  m.inbox.push_back(std::move(seq));
  ++m.num_pending;
  return id;
}

void Engine::cancel(RequestId id) {
  std::lock_guard lock(impl_->inbox_mutex);
  impl_->cancels.push_back(id);
}

bool Engine::has_work() const { return impl_->num_pending.load() > 0 && !impl_->interrupted.load(); }

void Engine::interrupt() { impl_->interrupted.store(true); }

void Engine::run_until_idle() {
  while (has_work()) step();
}

const ModelInfo& Engine::model_info() const { return impl_->info; }
const EngineConfig& Engine::config() const { return impl_->config; }
const EngineConfig& Engine::requested_config() const { return impl_->requested; }
const std::vector<std::string>& Engine::warnings() const { return impl_->info.setting_warnings; }
StepStats Engine::last_step_stats() const { return impl_->stats; }
KvStats Engine::kv_stats() const { return impl_->kv_stats(); }

std::shared_ptr<const EngineSnapshot> Engine::snapshot() {
  if (!impl_->last_snapshot || impl_->last_snapshot->step != impl_->num_steps) {
    impl_->last_snapshot = impl_->build_snapshot();
  }
  return impl_->last_snapshot;
}

void Engine::set_tracing(bool on) { impl_->events.set_enabled(on); }
std::vector<EngineEvent> Engine::take_events() { return impl_->events.take(); }

std::vector<int32_t> Engine::tokenize(std::string_view text, bool parse_special, std::string* warning) const {
  EncodeIssues issues;
  std::vector<int32_t> ids = impl_->tokenizer->encode(text, parse_special, warning ? &issues : nullptr);
  if (warning) *warning = issues.any() ? describe(issues) : std::string();
  return ids;
}

std::string Engine::detokenize(const std::vector<int32_t>& ids) const { return impl_->tokenizer->decode(ids); }

int32_t Engine::prompt_bos() const {
  const Tokenizer& t = *impl_->tokenizer;
  return t.add_bos() && t.bos_id() >= 0 ? t.bos_id() : -1;
}

std::string Engine::token_bytes(int32_t id, bool render_special) const {
  return impl_->tokenizer->token_bytes(id, render_special);
}

ToolCallFormat Engine::tool_call_format() const { return impl_->chat_template->tool_call_format(); }

std::string Engine::render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return impl_->chat_template->render(messages, add_generation_prompt);
}

}  // namespace kvscope
