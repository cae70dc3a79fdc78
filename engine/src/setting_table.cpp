// The rows of the engine's setting table (kvscope/setting_table.h) and the
// generic parse / format / check every front end uses.
//   tested by tests/engine/settings/setting_table_test.cpp
#include "kvscope/setting_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <fmt/format.h>

#include "kvscope/backend_choice.h"
#include "kvscope/engine_config.h"
#include "runtime/cascade_plan.h"

namespace kvscope {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTiB = int64_t{1} << 40;

// The GPU rows matter where a GPU may run the model: backend = cuda, or auto
// in a build with the CUDA backend (without it auto is always the CPU).
bool gpu_may_run(const EngineConfig& c) {
  return c.backend == BackendKind::Cuda || (c.backend == BackendKind::Auto && build_has_cuda());
}

// Row builders: each binds a row to one EngineConfig member, so a row is its
// key, its member and its words.
SettingSpec int_row(std::string key, int32_t EngineConfig::*member, int64_t min, int64_t max) {
  SettingSpec s;
  s.key = std::move(key);
  s.type = SettingType::Int;
  s.min = min;
  s.max = max;
  s.get = [member](const EngineConfig& c) { return SettingValue(int64_t{c.*member}); };
  // Saturate instead of wrapping: 2^32 + 16 must reach validate() as out of
  // range, not as a block size of 16.
  s.set = [member](EngineConfig& c, const SettingValue& v) {
    c.*member = static_cast<int32_t>(std::clamp<int64_t>(std::get<int64_t>(v), std::numeric_limits<int32_t>::min(),
                                                         std::numeric_limits<int32_t>::max()));
  };
  return s;
}

SettingSpec bytes_row(std::string key, int64_t EngineConfig::*member, int64_t min, int64_t max) {
  SettingSpec s;
  s.key = std::move(key);
  s.type = SettingType::Bytes;
  s.min = min;
  s.max = max;
  s.get = [member](const EngineConfig& c) { return SettingValue(c.*member); };
  s.set = [member](EngineConfig& c, const SettingValue& v) { c.*member = std::get<int64_t>(v); };
  return s;
}

SettingSpec bool_row(std::string key, bool EngineConfig::*member) {
  SettingSpec s;
  s.key = std::move(key);
  s.type = SettingType::Bool;
  s.get = [member](const EngineConfig& c) { return SettingValue(c.*member); };
  s.set = [member](EngineConfig& c, const SettingValue& v) { c.*member = std::get<bool>(v); };
  return s;
}

// An enum stored by name: choices[i] names the enumerator with value i.
template <typename Enum>
SettingSpec choice_row(std::string key, Enum EngineConfig::*member, std::vector<std::string> choices) {
  SettingSpec s;
  s.key = std::move(key);
  s.type = SettingType::Choice;
  s.choices = choices;
  s.get = [member, choices](const EngineConfig& c) {
    return SettingValue(choices.at(static_cast<size_t>(c.*member)));
  };
  s.set = [member, choices](EngineConfig& c, const SettingValue& v) {
    const auto it = std::find(choices.begin(), choices.end(), std::get<std::string>(v));
    if (it != choices.end()) c.*member = static_cast<Enum>(it - choices.begin());
  };
  return s;
}

SettingSpec path_row(std::string key, std::string EngineConfig::*member) {
  SettingSpec s;
  s.key = std::move(key);
  s.type = SettingType::Path;
  s.get = [member](const EngineConfig& c) { return SettingValue(c.*member); };
  s.set = [member](EngineConfig& c, const SettingValue& v) { c.*member = std::get<std::string>(v); };
  return s;
}

SettingSpec& words(SettingSpec& s, std::string group, std::string label, std::string unit, std::string help,
                   SettingEffect effect = SettingEffect::Reconfigure) {
  s.group = std::move(group);
  s.label = std::move(label);
  s.unit = std::move(unit);
  s.help = std::move(help);
  s.effect = effect;
  return s;
}

std::vector<SettingSpec> make_table() {
  std::vector<SettingSpec> t;
  auto add = [&t](SettingSpec s) -> SettingSpec& { return t.emplace_back(std::move(s)); };

  words(add(path_row("model_path", &EngineConfig::model_path)), "Model", "Model", "",
        "A .gguf file or a Hugging Face model directory; changing it loads the weights again.",
        SettingEffect::Reload)
      .cli_name = "model";

  SettingSpec& threads = words(add(int_row("threads", &EngineConfig::num_threads, 0, 1024)), "Compute",
                               "Threads", "threads",
                               "CPU threads for the model: more is faster until cores or memory bandwidth run "
                               "out; more than this machine's CPUs is lowered to them.");
  threads.zero_means = "one per core";
  words(add(int_row("tp", &EngineConfig::tp, 1, 8)), "Compute", "Tensor parallelism", "ranks",
        "Split each layer's heads and FFN rows between this many ranks (threads sharing the CPU threads), as "
        "multi-GPU engines do; 1 to 8 as the model's heads and FFN allow (checked when loading; 1, 2, 4 and 8 "
        "are the usual).");
  SettingSpec& tp_reduce = words(add(choice_row("tp_reduce", &EngineConfig::tp_reduce, {"fast", "deterministic"})),
                                 "Compute", "Tensor-parallel sum", "",
                                 "Fast adds each rank's partial result, so the sums round differently at each tp "
                                 "(logits move by up to about 1 and a greedy reply can take another word); "
                                 "deterministic adds fixed chunks in a fixed order, so every tp gives the same "
                                 "logits.");
  tp_reduce.choice_labels = {"Fast", "Deterministic (same bits at every tp)"};
  SettingSpec& backend = words(add(choice_row("backend", &EngineConfig::backend, {"cpu", "cuda", "auto"})),
                               "Compute", "Backend", "",
                               "What runs the model: the CPU, an NVIDIA GPU (CUDA), or auto, which takes the GPU "
                               "when this build has CUDA and a device is present, else the CPU (the status line "
                               "and model-info say which and why).");
  backend.choice_labels = {"CPU", "CUDA (NVIDIA GPU)", "Auto (GPU if present)"};
  SettingSpec& gemm = words(add(bool_row("gpu_prefill_gemm", &EngineConfig::gpu_prefill_gemm)), "Compute",
                            "Tensor-core prefill", "",
                            "On a GPU: prompts multiply through the tensor cores (bf16), many times faster, but a "
                            "prompt token's logits then depend on how the prompt was chunked or cached (the "
                            "invariance checker will show it). Off: every token through the same exact kernel.");
  gemm.applies = gpu_may_run;
  SettingSpec& gpu_sampling = words(add(bool_row("gpu_sampling", &EngineConfig::gpu_sampling)), "Compute",
                                    "Sample on the GPU", "",
                                    "On a GPU: the next token is drawn there and only its id comes back, instead of "
                                    "every row's logits; the same rule and random numbers, so the same tokens but "
                                    "for a rare near-tie. Rows that need their logits (a grammar, logprobs, "
                                    "speculative checks) always come back.");
  gpu_sampling.applies = gpu_may_run;
  gpu_sampling.cli_negation = "no-gpu-sampling";
  SettingSpec& gpu_graphs = words(add(bool_row("gpu_graphs", &EngineConfig::gpu_graphs)), "Compute",
                                  "CUDA graphs", "",
                                  "On a GPU: a step that has the shape of an earlier one (a batch of decoding "
                                  "chats, every step) replays that step's recorded kernel launches at once instead "
                                  "of launching ~210 kernels (~270 without norm fusion) one by one; the same "
                                  "kernels, so the same results.");
  gpu_graphs.applies = gpu_may_run;
  gpu_graphs.cli_negation = "no-gpu-graphs";
  // The figures are measured (docs/cuda.md), so that the trade is stated,
  // not only named; f32 stays the default, the faster for one chat.
  SettingSpec& gpu_matmul = words(add(choice_row("gpu_matmul", &EngineConfig::gpu_matmul, {"f32", "tensor_cores"})),
                                  "Compute", "GPU matmul", "",
                                  "On a GPU: how the quantised matmuls multiply. Tensor cores give more throughput "
                                  "with many sequences (on an H200 1.7x at 16, 2.4x from 64, 1.9x the prefill) but "
                                  "decode a single chat slower (636 vs 961 tok/s). Each keeps the results "
                                  "independent of batching (one math for every row), but the two round differently "
                                  "(logits about 1e-6 apart), so results under one are not bitwise those under the "
                                  "other.");
  gpu_matmul.choice_labels = {"f32 (faster for one chat)", "Tensor cores (faster for many sequences)"};
  gpu_matmul.applies = gpu_may_run;
  SettingSpec& overlap = words(add(bool_row("gpu_overlap_launches", &EngineConfig::gpu_overlap_launches)),
                               "Compute", "Overlap kernel launches", "",
                               "On a Hopper or newer GPU: each kernel of a step is scheduled while the one before "
                               "it finishes, and waits for its results before reading them, so the small kernels "
                               "of a decode step follow each other without a gap (about 5% faster for one chat; "
                               "with tensor-core matmuls at 64 sequences a decode step is 1-3% slower); the "
                               "same kernels in the same order, so the same results.");
  overlap.applies = gpu_may_run;
  overlap.cli_negation = "no-gpu-overlap";
  SettingSpec& attention_timing =
      words(add(bool_row("gpu_attention_timing", &EngineConfig::gpu_attention_timing)), "Compute",
            "Time attention on the GPU", "",
            "On a GPU: one step in 16 times each layer's attention for the inspector's attention plot, with a "
            "pair of events between its kernels (timing every step made one chat 14% slower). Off: the plot "
            "stays empty; the results are the same either way.");
  attention_timing.applies = gpu_may_run;
  attention_timing.cli_negation = "no-gpu-attention-timing";
  SettingSpec& norm_fusion =
      words(add(choice_row("gpu_norm_fusion", &EngineConfig::gpu_norm_fusion, {"auto", "on", "off"})), "Compute",
            "Fuse norms into matmuls", "",
            "On a GPU: each layer's norms are computed by the matmuls that read them, and the residual adds by "
            "the matmuls that produce them (7 kernels per layer instead of 9): one chat decodes about 18% "
            "faster (about 950 vs 807 tok/s on an H200). "
            "With tensor-core matmuls, steps of many tokens are slower fused, so auto fuses those only in "
            "steps of at most 16 tokens. The same arithmetic, so the same results.");
  norm_fusion.choice_labels = {"Auto (where faster)", "On", "Off"};
  norm_fusion.applies = gpu_may_run;

  SettingSpec& budget = words(add(bytes_row("kv_budget", &EngineConfig::kv_budget_bytes, 1, 16 * kTiB)),
                              "KV cache", "KV budget", "",
                              "Memory for the KV pool (when KV blocks is 0): more holds more and longer "
                              "conversations before preempting.");
  budget.applies = [](const EngineConfig& c) { return c.num_blocks == 0; };
  SettingSpec& gpu_memory = words(add(int_row("gpu_memory_percent", &EngineConfig::gpu_memory_percent, 0, 95)),
                                  "KV cache", "GPU memory", "%",
                                  "On a GPU: the share of its free memory (when the model loads) for the weights, "
                                  "the workspace and the KV pool, which gets the rest, instead of the KV budget; "
                                  "the CPU ignores it. A change that rebuilds the pool needs room for the new one "
                                  "beside the old.");
  gpu_memory.zero_means = "off, the KV budget sizes the pool";
  gpu_memory.applies = [](const EngineConfig& c) { return c.num_blocks == 0 && gpu_may_run(c); };
  SettingSpec& blocks = words(add(int_row("num_blocks", &EngineConfig::num_blocks, 0, 1 << 24)), "KV cache",
                              "KV blocks", "blocks",
                              "An exact number of physical KV blocks, whatever memory that takes: fewer shows "
                              "preemption sooner.");
  blocks.zero_means = "from the KV budget";
  words(add(int_row("block_size", &EngineConfig::block_size, 1, 2048)), "KV cache", "Block size", "tokens",
        "Token slots per KV block: small wastes less in partly filled blocks, large means shorter block tables.");
  SettingSpec& paged = words(add(bool_row("paged", &EngineConfig::paged)), "KV cache", "Paged attention", "",
                             "On: KV memory is taken block by block as tokens arrive; off: each request "
                             "reserves its whole maximum length up front in one piece.");
  paged.cli_name = "paging";
  paged.cli_negation = "no-paging";
  SettingSpec& kv_type = words(add(choice_row("kv_cache_type", &EngineConfig::kv_cache_type,
                                               {"f32", "f16", "bf16", "q8_0"})),
                               "KV cache", "KV cache type", "",
                               "How cached keys and values are stored: f16 and bf16 hold twice the tokens of f32 "
                               "in the same memory, q8_0 almost four times, each a little less exactly.");
  kv_type.choice_labels = {"f32 (exact)", "f16 (half the memory)", "bf16 (half the memory)",
                           "q8_0 (about a quarter)"};
  SettingSpec& prefix = words(add(bool_row("prefix_caching", &EngineConfig::prefix_caching)), "KV cache",
                              "Prefix caching", "",
                              "Reuse the KV blocks of prompts that start the same instead of computing them "
                              "again.");
  prefix.cli_name = "prefix-cache";
  prefix.cli_negation = "no-prefix-cache";
  // A contiguous request owns its run of blocks: none is shared, so none is
  // looked up by its prefix (KvCacheManager skips the hashing).
  prefix.applies = [](const EngineConfig& c) { return c.paged; };
  SettingSpec& swap = words(add(bytes_row("swap_space", &EngineConfig::swap_space_bytes, 0, 16 * kTiB)),
                            "KV cache", "Swap space", "",
                            "Host memory for KV blocks swapped out by preemption = swap: more lets more "
                            "requests wait without recomputing.");
  swap.applies = [](const EngineConfig& c) { return c.preemption == PreemptionMode::Swap; };

  SettingSpec& ctx = words(add(int_row("max_model_len", &EngineConfig::max_model_len, 0, 1 << 22)), "Batching",
                           "Max model length", "tokens",
                           "Longest prompt plus reply: shorter caps memory per request; above the model's "
                           "trained context the output degrades.");
  ctx.zero_means = "the model's context (or the KV pool's, if less)";
  ctx.cli_name = "ctx";
  SettingSpec& overflow = words(add(choice_row("context_overflow", &EngineConfig::context_overflow,
                                               {"stop", "shift", "truncate_middle"})),
                                "Batching", "When the context is full", "",
                                "Stop ends a reply at the max model length; shift drops older tokens after the "
                                "kept start and goes on (needs paged attention), and cuts a prompt that is too "
                                "long in its middle so a chat goes on; truncate_middle only cuts such prompts.");
  overflow.choice_labels = {"Stop the reply", "Shift: forget the middle, keep going",
                            "Truncate long prompts in the middle"};
  SettingSpec& keep = words(add(int_row("context_keep", &EngineConfig::context_keep, 0, 1 << 22)), "Batching",
                            "Kept start of the context", "tokens",
                            "Tokens at the start (the system prompt) that a shift or a middle truncation never "
                            "drops; at most half the context.");
  keep.applies = [](const EngineConfig& c) { return c.context_overflow != ContextOverflow::Stop; };
  words(add(int_row("max_seqs", &EngineConfig::max_seqs, 1, 4096)), "Batching", "Max sequences", "sequences",
        "Sequences batched in one step: more raises throughput but needs more KV memory.");
  words(add(int_row("max_batched_tokens", &EngineConfig::max_batched_tokens, 1, 1 << 20)), "Batching",
        "Max tokens per step", "tokens",
        "Token budget of one step; long prompts are prefilled in chunks of it: larger is faster, smaller keeps "
        "replies streaming.");
  SettingSpec& policy = words(add(choice_row("policy", &EngineConfig::policy, {"continuous", "static"})),
                              "Batching", "Scheduling", "",
                              "Continuous: requests join and leave at any step; static: a batch runs until all "
                              "of it finishes (the baseline continuous batching beats).");
  policy.choice_labels = {"Continuous batching", "Static batching"};
  SettingSpec& preempt = words(add(choice_row("preemption", &EngineConfig::preemption, {"recompute", "swap"})),
                               "Batching", "Preemption", "",
                               "When KV blocks run out: recompute frees a request's blocks (costs compute), "
                               "swap copies them to host memory (costs memory).");
  preempt.choice_labels = {"Recompute", "Swap to host memory"};

  SettingSpec& cascade = words(add(choice_row("cascade", &EngineConfig::cascade, {"off", "auto", "on"})),
                               "Attention", "Cascade attention", "",
                               fmt::format("Sequences sharing a prefix (a system prompt) attend to it in one "
                                           "pass that reads its KV once: faster with many such sequences, same "
                                           "answers either way. Auto uses it where it pays: {} or more sequences "
                                           "sharing at least {} tokens. Changing it takes effect at the next step: "
                                           "nothing is recomputed.",
                                           kAutoCascadeMinSeqs, kAutoCascadeMinSharedTokens),
                               SettingEffect::NextStep);
  cascade.choice_labels = {"Off", "Auto (where it pays)", "On (whenever a prefix is shared)"};

  const auto speculating = [](const EngineConfig& c) { return c.spec != SpecMethod::Off; };
  const auto ngram = [](const EngineConfig& c) { return c.spec == SpecMethod::Ngram; };
  SettingSpec& spec = words(add(choice_row("spec", &EngineConfig::spec, {"off", "ngram", "draft", "early_exit"})), "Speculative decoding",
                            "Speculative decoding", "",
                            "Guess a few tokens ahead and check them in one pass: the same text, faster when the "
                            "guesses hold (replies that copy from the prompt); a request whose guesses keep "
                            "failing stops guessing for a while.");
  spec.choice_labels = {"Off", "N-gram (prompt lookup)", "Draft model", "Early exit (first layers draft)"};
  SettingSpec& spec_k = words(add(int_row("spec_k", &EngineConfig::spec_k, 1, 16)), "Speculative decoding",
                              "Draft tokens", "tokens",
                              "Tokens guessed per step at most: more gains more when guesses hold and costs more "
                              "rows when they fail.");
  spec_k.applies = speculating;
  // For people studying or debugging a proposer: the pause rule hides how a
  // failing proposer's guesses fare, step after step.
  SettingSpec& never_pause = words(add(bool_row("spec_never_pause", &EngineConfig::spec_never_pause)),
                                   "Speculative decoding", "Guess in every step", "",
                                   "Never pause a request's guessing, even when its guesses keep failing: slower "
                                   "then, but every step's guess and acceptance show (for studying or debugging "
                                   "a proposer); the same text either way.");
  never_pause.applies = speculating;
  SettingSpec& ngram_min = words(add(int_row("spec_ngram_min", &EngineConfig::spec_ngram_min, 1, 16)),
                                 "Speculative decoding", "N-gram min match", "tokens",
                                 "Shortest run of recent tokens looked up earlier in the text (at most the max "
                                 "match): shorter finds more guesses, fewer of them right.");
  ngram_min.applies = ngram;
  SettingSpec& ngram_max = words(add(int_row("spec_ngram_max", &EngineConfig::spec_ngram_max, 1, 16)),
                                 "Speculative decoding", "N-gram max match", "tokens",
                                 "Longest run of recent tokens looked up (tried first): longer matches make better "
                                 "guesses.");
  ngram_max.applies = ngram;
  // Reconfigure, not Reload: a new draft model is loaded beside the running
  // model by Engine::reconfigure; the model's own weights stay.
  SettingSpec& draft = words(add(path_row("spec_draft_model", &EngineConfig::spec_draft_model)),
                             "Speculative decoding", "Draft model", "",
                             "A smaller .gguf model with the same vocabulary that guesses the tokens: pays when it "
                             "is many times faster than the model and agrees with it often.");
  draft.applies = [](const EngineConfig& c) { return c.spec == SpecMethod::Draft; };
  SettingSpec& exit_layer = words(add(int_row("spec_early_exit_layer", &EngineConfig::spec_early_exit_layer, 0,
                                              1024)),
                                  "Speculative decoding", "Early-exit layers", "layers",
                                  "Layers of the model that guess the tokens (then its final norm and head): fewer "
                                  "guess faster, more guess right more often; at most the model's layers.");
  exit_layer.zero_means = "half the model's layers";
  exit_layer.applies = [](const EngineConfig& c) { return c.spec == SpecMethod::EarlyExit; };
  return t;
}

std::string lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  return std::string(text.substr(b, e - b));
}

}  // namespace

Status problems_status(const std::vector<SettingProblem>& problems) {
  if (problems.empty()) return Status::success();
  if (problems.size() == 1) return Error{problems.front().message};
  return Error{fmt::format("{} (and {} more problem{})", problems.front().message, problems.size() - 1,
                           problems.size() == 2 ? "" : "s")};
}

const std::vector<SettingSpec>& engine_settings() {
  static const std::vector<SettingSpec> table = make_table();
  return table;
}

const SettingSpec* find_setting(std::string_view key) {
  for (const SettingSpec& s : engine_settings()) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

const SettingSpec* find_setting_by_cli_option(std::string_view option) {
  if (option.starts_with("--")) option.remove_prefix(2);
  if (option.empty()) return nullptr;
  for (const SettingSpec& s : engine_settings()) {
    if (s.cli_option() == option) return &s;
  }
  std::string key(option);
  std::replace(key.begin(), key.end(), '-', '_');
  return find_setting(key);
}

SettingValue SettingSpec::default_value() const { return get(EngineConfig{}); }

std::string SettingSpec::cli_option() const {
  if (!cli_name.empty()) return cli_name;
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

Result<SettingValue> SettingSpec::parse(std::string_view raw) const {
  const std::string text = trim(raw);
  switch (type) {
    case SettingType::Int: {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0') return Error{fmt::format("{}: '{}' is not a whole number", key, text)};
      if (errno == ERANGE) return Error{fmt::format("{}: '{}' is too large", key, text)};
      // Past int32 the row saturates, and validate() would quote the
      // saturated number, not the one typed: say the typed one here.
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        if (std::optional<SettingProblem> p = check(SettingValue(int64_t{v}))) return Error{p->message};
      }
      return SettingValue(int64_t{v});
    }
    case SettingType::Bytes: {
      if (text == "0") return SettingValue(int64_t{0});
      if (const std::optional<int64_t> v = parse_byte_size(text)) return SettingValue(*v);
      return Error{fmt::format("{}: '{}' is not a size (examples: 536870912, 512M, 2G)", key, text)};
    }
    case SettingType::Bool: {
      const std::string v = lower(text);
      if (v == "true" || v == "1" || v == "yes" || v == "on") return SettingValue(true);
      if (v == "false" || v == "0" || v == "no" || v == "off") return SettingValue(false);
      return Error{fmt::format("{}: '{}' is not true or false", key, text)};
    }
    case SettingType::Choice: {
      const std::string v = lower(text);
      for (const std::string& c : choices) {
        if (c == v) return SettingValue(c);
      }
      return Error{fmt::format("{}: '{}' is not one of {}", key, text, fmt::join(choices, ", "))};
    }
    case SettingType::Path: return SettingValue(text);
  }
  return Error{fmt::format("{}: unknown setting type", key)};
}

std::string SettingSpec::format(const SettingValue& value) const {
  switch (type) {
    case SettingType::Int: return std::to_string(std::get<int64_t>(value));
    case SettingType::Bytes: return format_byte_size(std::get<int64_t>(value));
    case SettingType::Bool: return std::get<bool>(value) ? "true" : "false";
    case SettingType::Choice:
    case SettingType::Path: return std::get<std::string>(value);
  }
  return {};
}

std::optional<SettingProblem> SettingSpec::check(const SettingValue& value) const {
  if (type != SettingType::Int && type != SettingType::Bytes) return std::nullopt;
  const int64_t v = std::get<int64_t>(value);
  if (v >= min && v <= max) return std::nullopt;
  const std::string name = label.empty() ? key : lower(label);
  if (type == SettingType::Bytes) {
    return SettingProblem{key, fmt::format("{} = {} is out of range [{}, {}]", name, format_byte_size(v),
                                           format_byte_size(min), format_byte_size(max))};
  }
  return SettingProblem{key, fmt::format("{} = {} is out of range [{}, {}]", name, v, min, max)};
}

Status set_setting(EngineConfig& config, std::string_view key, std::string_view text) {
  const SettingSpec* spec = find_setting(key);
  if (!spec) return Error{fmt::format("'{}' is not an engine setting", key)};
  Result<SettingValue> value = spec->parse(text);
  if (!value.ok()) return Error{value.error()};
  spec->set(config, *value);
  return Status::success();
}

std::string setting_text(const EngineConfig& config, std::string_view key) {
  const SettingSpec* spec = find_setting(key);
  return spec ? spec->format(spec->get(config)) : std::string();
}

std::vector<std::string> changed_settings(const EngineConfig& a, const EngineConfig& b) {
  std::vector<std::string> keys;
  for (const SettingSpec& s : engine_settings()) {
    if (s.get(a) != s.get(b)) keys.push_back(s.key);
  }
  return keys;
}

bool same_settings(const EngineConfig& a, const EngineConfig& b) { return changed_settings(a, b).empty(); }

bool needs_reload(const EngineConfig& a, const EngineConfig& b) {
  for (const std::string& key : changed_settings(a, b)) {
    if (find_setting(key)->effect == SettingEffect::Reload) return true;
  }
  return false;
}

bool applies_in_place(const EngineConfig& a, const EngineConfig& b) {
  for (const std::string& key : changed_settings(a, b)) {
    if (find_setting(key)->effect != SettingEffect::NextStep) return false;
  }
  return true;
}

std::optional<int64_t> parse_byte_size(std::string_view raw) {
  const std::string text = trim(raw);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return std::nullopt;
  std::string unit;
  for (char c : text.substr(i)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  const double bytes = std::strtod(number.c_str(), nullptr) * scale;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::string format_byte_size(int64_t bytes) {
  static const std::pair<int64_t, const char*> kUnits[] = {
      {kTiB, "T"}, {int64_t{1} << 30, "G"}, {kMiB, "M"}, {int64_t{1} << 10, "K"}};
  if (bytes > 0) {
    for (const auto& [size, suffix] : kUnits) {
      if (bytes % size == 0) return fmt::format("{}{}", bytes / size, suffix);
    }
  }
  return std::to_string(bytes);
}

}  // namespace kvscope
