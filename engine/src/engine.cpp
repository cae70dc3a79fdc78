// Engine::Impl: owns the model, the KV pool, the scheduler and the runner, and
// runs one continuous-batching iteration per step():
//   drain inbox -> schedule (+ allocate blocks) -> build StepBatch -> forward
//   -> sample -> publish -> release finished sequences.
#include "kvscope/engine.h"

#include <algorithm>
#include <atomic>
#include <fmt/format.h>
#include <mutex>
#include <new>
#include <thread>
#include <unistd.h>

#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "model/hf_model_loader.h"
#include "runtime/model_runner.h"
#include "scheduler/scheduler.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/read_vocab.h"

namespace kvscope {
namespace {

double seconds_between(Sequence::Clock::time_point a, Sequence::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

const char* architecture_name(Architecture a) { return a == Architecture::Gemma3 ? "gemma3" : "llama"; }

// What Engine::create needs from a model, whatever its format.
struct LoadedModel {
  std::shared_ptr<const ModelWeights> weights;  // keeps its file(s) alive
  VocabData vocab;
  std::string architecture;  // for ModelInfo: "llama", "qwen2", "gemma3", ...
};

// A Hugging Face directory (config.json + safetensors) or a GGUF file.
Result<LoadedModel> load_model(const std::string& path) {
  if (is_hf_directory(path)) {
    auto hf = load_hf_directory(path);
    if (!hf.ok()) return Error{hf.error()};
    return LoadedModel{std::move(hf->weights), std::move(hf->vocab), std::move(hf->architecture)};
  }
  auto opened = GgufFile::open(path);
  if (!opened.ok()) return Error{opened.error()};
  std::shared_ptr<const GgufFile> file = std::move(opened).value();
  auto weights = load_gguf_weights(file);
  if (!weights.ok()) return Error{weights.error()};
  auto vocab = read_vocab(*file);
  if (!vocab.ok()) return Error{vocab.error()};
  LoadedModel m{std::move(weights).value(), std::move(vocab).value(), {}};
  m.architecture = file->get_string("general.architecture").value_or(architecture_name(m.weights->config.arch));
  return m;
}

}  // namespace

struct Engine::Impl {
  EngineConfig config;
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> chat_template;
  ModelInfo info;

  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<BlockPool> blocks;
  std::unique_ptr<KvStorage> kv;
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<Scheduler> scheduler;

  std::mutex inbox_mutex;
  std::vector<std::unique_ptr<Sequence>> inbox;  // submitted, not yet seen by step()
  std::vector<RequestId> cancels;
  std::atomic<RequestId> next_id{1};
  std::atomic<int32_t> num_pending{0};  // in inbox or scheduler

  StepBatch batch;
  std::vector<float> logits;
  std::vector<int64_t> slots;
  StepStats stats;

  void drain_inbox();
  void finish(Sequence& s, FinishReason reason, std::string error = {});
  void after_token(Sequence& s, int32_t token);
};

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  if (Status s = config.validate(); !s.ok()) return Error{s.error()};
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  auto model = load_model(config.model_path);
  if (!model.ok()) return Error{model.error()};
  impl->weights = model->weights;
  const ModelConfig& mc = impl->weights->config;
  const VocabData& vocab = model->vocab;

  auto tok = create_tokenizer(vocab);
  if (!tok.ok()) return Error{tok.error()};
  impl->tokenizer = std::move(tok).value();
  if (impl->tokenizer->vocab_size() > mc.vocab_size) {
    return Error{fmt::format("{}: the vocabulary has {} tokens but the embedding only {} rows",
                             config.model_path, impl->tokenizer->vocab_size(), mc.vocab_size)};
  }
  impl->chat_template = std::make_unique<ChatTemplate>(
      ChatTemplate::from_vocab(vocab, *impl->tokenizer));

  if (impl->config.max_model_len == 0) impl->config.max_model_len = mc.context_length;
  const int32_t bs = config.block_size;
  const size_t per_block = KvStorage::bytes_per_block(mc.num_layers, bs, mc.kv_size());
  int64_t num_blocks = config.num_blocks > 0 ? config.num_blocks
                                             : config.kv_budget_bytes / static_cast<int64_t>(per_block);
  if (num_blocks < 1) {
    return Error{fmt::format("the KV budget of {} bytes holds no block of {} tokens ({} bytes each); "
                             "raise the budget or lower the block size", config.kv_budget_bytes, bs, per_block)};
  }
  const int32_t threads = config.num_threads > 0 ? config.num_threads
                                                 : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  impl->pool = std::make_unique<ThreadPool>(threads);
  impl->blocks = std::make_unique<BlockPool>(static_cast<int32_t>(num_blocks));
  // Pages are committed lazily, so an oversized pool would only fail later, as
  // an out-of-memory kill mid-generation. Refuse it now instead.
  const size_t kv_bytes = per_block * static_cast<size_t>(num_blocks);
  const size_t phys_bytes = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  if (phys_bytes > 0 && kv_bytes > phys_bytes / 10 * 9) {
    return Error{fmt::format("a KV pool of {} MiB does not fit in this machine's {} MiB of memory; "
                             "lower the KV budget", kv_bytes >> 20, phys_bytes >> 20)};
  }
  try {
    impl->kv = std::make_unique<KvStorage>(mc.num_layers, static_cast<int32_t>(num_blocks), bs, mc.kv_size());
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("cannot reserve {} MiB for {} KV blocks; lower the KV budget",
                             kv_bytes >> 20, num_blocks)};
  }
  impl->runner = std::make_unique<ModelRunner>(impl->weights, *impl->kv, *impl->pool);
  impl->scheduler = std::make_unique<Scheduler>(config.max_seqs, config.max_batched_tokens, *impl->blocks);

  ModelInfo& info = impl->info;
  info.path = config.model_path;
  info.name = mc.name;
  info.architecture = model->architecture;
  info.num_layers = mc.num_layers;
  info.hidden_size = mc.hidden_size;
  info.num_heads = mc.num_heads;
  info.num_kv_heads = mc.num_kv_heads;
  info.head_dim = mc.head_dim;
  info.vocab_size = mc.vocab_size;
  info.context_length = mc.context_length;
  info.weight_bytes = impl->weights->matrix_bytes();
  info.kv_bytes_per_token = per_block / static_cast<size_t>(bs);
  info.num_kv_blocks = static_cast<int32_t>(num_blocks);
  info.block_size = bs;
  info.chat_template_family = impl->chat_template->family_name();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<RequestId> Engine::submit(GenerationRequest request) {
  Impl& m = *impl_;
  if (Status s = request.sampling.validate(); !s.ok()) return Error{s.error()};
  std::vector<int32_t> prompt = std::move(request.prompt_tokens);
  if (prompt.empty()) {
    const std::string text = request.messages.empty() ? request.prompt : render_chat(request.messages, true);
    if (m.tokenizer->add_bos() && m.tokenizer->bos_id() >= 0 && !m.chat_template->renders_bos(text)) {
      prompt.push_back(m.tokenizer->bos_id());
    }
    const std::vector<int32_t> ids = m.tokenizer->encode(text, /*parse_special=*/true);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  if (prompt.empty()) return Error{"the prompt is empty"};
  for (int32_t t : prompt) {
    if (t < 0 || t >= m.weights->config.vocab_size) return Error{fmt::format("token id {} is out of range", t)};
  }
  const int32_t max_len = m.config.max_model_len;
  if (static_cast<int32_t>(prompt.size()) >= max_len) {
    return Error{fmt::format("the prompt has {} tokens; the context holds {} (max model length)",
                             prompt.size(), max_len)};
  }
  const RequestId id = m.next_id++;
  auto seq = std::make_unique<Sequence>(id, std::move(prompt), request.sampling, std::move(request.on_event),
                                        *m.tokenizer, m.config.block_size);
  seq->max_total_tokens = static_cast<int32_t>(
      std::min<int64_t>(max_len, static_cast<int64_t>(seq->tokens.size()) + request.sampling.max_tokens));
  const int32_t need = seq->table.num_blocks_needed(seq->max_total_tokens);
  if (need > m.blocks->num_blocks()) {
    return Error{fmt::format("the request needs {} KV blocks ({} tokens) but the pool has only {}; "
                             "raise the KV budget or lower max tokens", need, seq->max_total_tokens,
                             m.blocks->num_blocks())};
  }
  std::lock_guard lock(m.inbox_mutex);
  m.inbox.push_back(std::move(seq));
  ++m.num_pending;
  return id;
}

void Engine::cancel(RequestId id) {
  std::lock_guard lock(impl_->inbox_mutex);
  impl_->cancels.push_back(id);
}

bool Engine::has_work() const { return impl_->num_pending.load() > 0; }

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
    if (Sequence* s = scheduler->find(id); s && s->state != SequenceState::Finished) {
      finish(*s, FinishReason::Cancelled);
    }
  }
}

void Engine::Impl::finish(Sequence& s, FinishReason reason, std::string error) {
  TokenEvent ev;
  ev.id = s.id;
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
  st.seed = s.sampler.seed();
  st.total_time_s = seconds_between(s.submitted_at, now);
  if (s.num_generated() > 0) {
    st.time_to_first_token_s = seconds_between(s.submitted_at, s.first_token_at);
    const double decode_time = seconds_between(s.first_token_at, now);
    if (s.num_generated() > 1 && decode_time > 0) st.decode_tokens_per_s = (s.num_generated() - 1) / decode_time;
  }
  s.state = SequenceState::Finished;
  if (s.on_event) s.on_event(ev);
}

void Engine::Impl::after_token(Sequence& s, int32_t token) {
  s.tokens.push_back(token);
  if (s.num_generated() == 1) s.first_token_at = Sequence::Clock::now();
  const SamplingParams& p = s.sampler.params();
  if (tokenizer->is_eog(token) && !p.ignore_eos) {
    finish(s, FinishReason::Stop);
    return;
  }
  TokenEvent ev;
  ev.id = s.id;
  ev.token = token;
  ev.text = s.stop.push(s.detokenizer.push(token));
  if (s.on_event) s.on_event(ev);
  if (s.stop.stopped()) {
    finish(s, FinishReason::Stop);
  } else if (s.num_generated() >= p.max_tokens) {
    finish(s, FinishReason::Length);
  } else if (static_cast<int32_t>(s.tokens.size()) >= config.max_model_len) {
    finish(s, FinishReason::ContextFull);
  }
}

void Engine::step() {
  Impl& m = *impl_;
  const auto start = Sequence::Clock::now();
  m.drain_inbox();
  const std::vector<ScheduledSequence> work = m.scheduler->schedule();
  StepStats stats;
  if (!work.empty()) {
    m.batch.clear();
    std::vector<bool> wants_logits;
    for (const ScheduledSequence& w : work) {
      Sequence& s = *w.seq;
      m.slots.resize(static_cast<size_t>(w.num_rows));
      for (int32_t i = 0; i < w.num_rows; ++i) m.slots[static_cast<size_t>(i)] = s.table.slot(s.num_computed + i);
      const bool want = s.num_computed + w.num_rows == static_cast<int32_t>(s.tokens.size());
      m.batch.add_sequence(s.tokens.data() + s.num_computed, w.num_rows, s.num_computed, m.slots.data(),
                           s.table.blocks(), want);
      wants_logits.push_back(want);
      (s.num_computed == 0 || w.num_rows > 1 ? stats.num_prefill_tokens : stats.num_decode_tokens) += w.num_rows;
    }
    m.runner->forward(m.batch, m.logits);
    const int32_t vocab = m.weights->config.vocab_size;
    size_t row = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      Sequence& s = *work[i].seq;
      s.num_computed += work[i].num_rows;
      if (!wants_logits[i]) continue;
      const float* lg = m.logits.data() + row++ * static_cast<size_t>(vocab);
      m.after_token(s, s.sampler.sample(lg, vocab, s.tokens));
    }
    stats.num_seqs = static_cast<int32_t>(work.size());
  }
  m.num_pending -= static_cast<int32_t>(m.scheduler->reap_finished().size());
  stats.num_used_blocks = m.blocks->num_used_blocks();
  stats.num_total_blocks = m.blocks->num_blocks();
  stats.step_time_s = seconds_between(start, Sequence::Clock::now());
  m.stats = stats;
}

void Engine::run_until_idle() {
  while (has_work()) step();
}

const ModelInfo& Engine::model_info() const { return impl_->info; }
const EngineConfig& Engine::config() const { return impl_->config; }
StepStats Engine::last_step_stats() const { return impl_->stats; }

std::vector<int32_t> Engine::tokenize(std::string_view text, bool parse_special) const {
  return impl_->tokenizer->encode(text, parse_special);
}

std::string Engine::detokenize(const std::vector<int32_t>& ids) const { return impl_->tokenizer->decode(ids); }

std::string Engine::render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return impl_->chat_template->render(messages, add_generation_prompt);
}

}  // namespace kvscope
