// `kvscope-cli model-info`: what a GGUF file holds, without loading it into an
// engine: metadata (long arrays and strings summarised), the tensor table,
// totals by type, parameter count, and the engine's memory plan (plan_kv) for
// the engine options given (the same options as generate: --kv-budget,
// --block-size, --ctx, ...), so the sizes shown are the ones Engine::create
// would allocate, and the backend it would run on (--backend) and why.
//
//   kvscope-cli model-info                       # the default model
//   kvscope-cli model-info --model x.gguf --json
//   kvscope-cli model-info --kv-budget 2G --block-size 32
//   kvscope-cli model-info --tp 4    # and each rank's heads, weights and KV
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common_options.h"
#include "kvscope/backend_choice.h"
#include "kvscope/rank_memory.h"
#include "snapshot_json.h"

namespace kvscope::cli {
namespace {

struct ModelInfoOptions {
  EngineOptions engine;  // --model is one of them
  bool json = false;
};

nlohmann::ordered_json plan_json(const KvPlan& p, const EngineConfig& c) {
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const SettingProblem& problem : p.problems) problems.push_back({{"field", problem.field}, {"message", problem.message}});
  return {{"ok", p.ok()},
          {"problems", problems},
          {"warnings", p.warnings},
          {"max_model_len", p.max_model_len},
          {"kv_bytes_per_token", p.kv_bytes_per_token},
          {"kv_cache_type", kv_cache_type_name(c.kv_cache_type)},
          {"bytes_per_block", p.bytes_per_block},
          {"draft_bytes_per_block", p.draft_bytes_per_block},
          {"num_blocks", p.num_blocks},
          {"num_swap_blocks", p.num_swap_blocks},
          {"pool_bytes", p.pool_bytes},
          {"swap_bytes", p.swap_bytes},
          {"workspace_bytes", p.workspace_bytes}};
}

// `model_context`: the model's trained context, which an unset max model
// length follows unless the pool holds less.
std::string plan_text(const KvPlan& p, const EngineConfig& c, int32_t model_context) {
  std::string out;
  for (const SettingProblem& problem : p.problems) out += fmt::format("KV plan     does not fit: {}\n", problem.message);
  if (!p.ok()) return out;
  const bool pool_caps = c.max_model_len == 0 && p.max_model_len < model_context;
  out += fmt::format("KV plan     {} block{} of {} tokens ({} each) = {}, {} tokens; max model length {}{}\n",
                     p.num_blocks, p.num_blocks == 1 ? "" : "s", c.block_size, human_bytes(static_cast<uint64_t>(p.bytes_per_block)),
                     human_bytes(static_cast<uint64_t>(p.pool_bytes)), p.num_blocks * c.block_size, p.max_model_len,
                     pool_caps ? fmt::format(" (what the pool holds; the model's context is {})", model_context)
                               : std::string());
  out += fmt::format("KV type     {}: {} per token\n", kv_cache_type_name(c.kv_cache_type),
                     human_bytes(static_cast<uint64_t>(p.kv_bytes_per_token)));
  if (p.draft_bytes_per_block > 0)
    out += fmt::format("draft KV    {} of each block (the draft model's K/V, spec = draft)\n",
                       human_bytes(static_cast<uint64_t>(p.draft_bytes_per_block)));
  if (p.num_swap_blocks > 0)
    out += fmt::format("swap        {} blocks = {}\n", p.num_swap_blocks, human_bytes(static_cast<uint64_t>(p.swap_bytes)));
  out += fmt::format("workspace   {} ({} tokens per step, {} sequences)\n",
                     human_bytes(static_cast<uint64_t>(p.workspace_bytes)), c.max_batched_tokens, c.max_seqs);
  for (const std::string& w : p.warnings) out += fmt::format("warning     {}\n", w);
  return out;
}

std::string heads_text(int32_t begin, int32_t num) {
  return num <= 1 ? fmt::format("{}", begin) : fmt::format("{}-{}", begin, begin + num - 1);
}

std::string ranks_text(const TensorParallelMemory& m) {
  std::string out = fmt::format("ranks       tp = {} (tp_reduce = {}): {} KV heads stored", m.tp,
                                m.deterministic ? "deterministic" : "fast", m.num_kv_head_slots);
  out += m.kv_heads_replicated
             ? fmt::format(" for the model's {}: ranks that share a KV head each keep a copy\n", m.num_kv_heads)
             : std::string("; one block table serves every rank\n");
  out += fmt::format("  {:<4}  {:>11}  {:>8}  {:>10}  {:>10}  {:>10}\n", "rank", "query heads", "KV heads", "weights",
                     "KV", "workspace");
  for (const RankMemory& r : m.ranks) {
    out += fmt::format("  {:<4}  {:>11}  {:>8}  {:>10}  {:>10}  {:>10}\n", r.rank,
                       heads_text(r.q_head_begin, r.num_q_heads), heads_text(r.kv_head_begin, r.num_kv_heads),
                       human_bytes(static_cast<uint64_t>(r.weight_bytes)), human_bytes(static_cast<uint64_t>(r.kv_bytes)),
                       human_bytes(static_cast<uint64_t>(r.workspace_bytes)));
  }
  return out;
}

std::string dims_text(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

std::string count_text(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.1f} M", static_cast<double>(n) / 1e6);
  return fmt::format("{}", n);
}

// The key present with a non-empty string (metadata values are shown as
// `string "..."`); an empty template is none, as the loader takes it.
bool has_chat_template(const ModelFileSummary& s) {
  return std::any_of(s.metadata.begin(), s.metadata.end(), [](const auto& kv) {
    return kv.first == "tokenizer.chat_template" && kv.second != "string \"\"";
  });
}

nlohmann::ordered_json summary_json(const ModelFileSummary& s) {
  nlohmann::ordered_json metadata = nlohmann::ordered_json::array();
  for (const auto& [key, value] : s.metadata) metadata.push_back({{"key", key}, {"value", value}});
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorSummary& t : s.tensors) {
    tensors.push_back({{"name", t.name}, {"type", t.type}, {"dims", t.dims},
                       {"num_elements", t.num_elements}, {"num_bytes", t.num_bytes}});
  }
  nlohmann::ordered_json totals = nlohmann::ordered_json::array();
  for (const TensorTypeTotal& t : s.totals_by_type) {
    totals.push_back({{"type", t.type}, {"num_tensors", t.num_tensors},
                      {"num_elements", t.num_elements}, {"num_bytes", t.num_bytes}});
  }
  nlohmann::ordered_json config = nullptr;
  if (s.config) {
    const ModelFileConfig& c = *s.config;
    config = {{"architecture", c.architecture}, {"name", c.name}, {"num_layers", c.num_layers},
              {"hidden_size", c.hidden_size}, {"ffn_size", c.ffn_size}, {"num_heads", c.num_heads},
              {"num_kv_heads", c.num_kv_heads}, {"head_dim", c.head_dim}, {"vocab_size", c.vocab_size},
              {"context_length", c.context_length}};
  }
  return {
      {"path", s.path},
      {"format", s.format},
      {"gguf_version", s.gguf_version},
      {"num_files", s.num_files},
      {"file_size", s.file_size},
      {"config", config},
      {"config_error", s.config_error},
      {"load_error", s.load_error},
      {"has_chat_template", s.gguf_version > 0 ? nlohmann::ordered_json(has_chat_template(s)) : nullptr},
      {"num_parameters", s.num_parameters},
      {"weight_bytes", s.weight_bytes},
      {"kv_bytes_per_token", s.kv_bytes_per_token},
      {"memory_bytes_full_context", s.memory_bytes_full_context},
      {"num_tensors", s.tensors.size()},
      {"totals_by_type", totals},
      {"metadata", metadata},
      {"warnings", s.warnings},
      {"tensors", tensors},
  };
}

// With spec = draft the draft model's weights and K/V are held beside the
// model's: the memory figures count them.
struct DraftMemory {
  uint64_t weight_bytes = 0;
  uint64_t kv_bytes_per_token = 0;
};

// Weights plus K/V for `tokens` tokens, the draft model's included: the
// memory lines of the text and the JSON.
uint64_t memory_at(uint64_t weight_bytes, uint64_t kv_bytes_per_token, const std::optional<DraftMemory>& draft,
                   uint64_t tokens) {
  const uint64_t weights = weight_bytes + (draft ? draft->weight_bytes : 0);
  const uint64_t per_token = kv_bytes_per_token + (draft ? draft->kv_bytes_per_token : 0);
  return weights + per_token * tokens;
}

// `kv_type` and `kv_bytes_per_token`: the KV cache type in force and its
// bytes per token (the summary's own figure is for f32).
std::string summary_text(const ModelFileSummary& s, std::string_view kv_type, uint64_t kv_bytes_per_token,
                         const std::optional<DraftMemory>& draft) {
  std::string out =
      s.gguf_version > 0
          ? fmt::format("file        {} (GGUF v{}, {})\n", s.path, s.gguf_version, human_bytes(s.file_size))
          : fmt::format("directory   {} ({}, {} file{}, {})\n", s.path, s.format, s.num_files,
                        s.num_files == 1 ? "" : "s", human_bytes(s.file_size));
  if (s.config) {
    const ModelFileConfig& c = *s.config;
    out += fmt::format("model       {} ({}): {} layers, hidden {}, ffn {}, {} heads ({} KV), head dim {}, "
                       "vocab {}, context {}\n",
                       escape_line(c.name), c.architecture, c.num_layers, c.hidden_size, c.ffn_size,
                       c.num_heads, c.num_kv_heads, c.head_dim, c.vocab_size, c.context_length);
  } else {
    out += fmt::format("model       not runnable by kvscope: {}\n", s.config_error);
  }
  if (!s.load_error.empty()) out += fmt::format("model       does not load: {}\n", s.load_error);
  // Chat prompts are rendered with the file's template, or without one in
  // a built-in format: say which, as nothing else does before a chat.
  if (s.gguf_version > 0 && s.config) {
    out += has_chat_template(s) ? "chat        the file's chat template (Jinja)\n"
                                : "chat        no chat template in the file: chat prompts use a built-in format "
                                  "(ChatML, Gemma, Llama 2, Llama 3 or Mistral, picked by its special tokens)\n";
  }
  out += fmt::format("parameters  {} ({} tensors)\n", count_text(s.num_parameters), s.tensors.size());
  out += fmt::format("weights     {}\n", human_bytes(s.weight_bytes));
  if (s.config) {
    const auto ctx = static_cast<uint64_t>(s.config->context_length);
    const uint64_t per_token = kv_bytes_per_token + (draft ? draft->kv_bytes_per_token : 0);
    out += fmt::format("KV cache    {} per token ({} K and V){}, {} at {} tokens\n", human_bytes(kv_bytes_per_token),
                       kv_type,
                       draft ? fmt::format(" + {} the draft model's", human_bytes(draft->kv_bytes_per_token)) : "",
                       human_bytes(per_token * ctx), ctx);
    out += fmt::format("memory      {} for weights + KV at full context ({} at 4096 tokens){}\n",
                       human_bytes(memory_at(s.weight_bytes, kv_bytes_per_token, draft, ctx)),
                       human_bytes(memory_at(s.weight_bytes, kv_bytes_per_token, draft, 4096)),
                       draft ? ", with the draft model's" : "");
  }
  for (const std::string& w : s.warnings) out += fmt::format("warning     {}\n", w);

  size_t key_width = 0;
  for (const auto& [key, value] : s.metadata) key_width = std::max(key_width, key.size());
  // Both forms start "\nmetadata (": run_model_info inserts the plan before it.
  out += fmt::format("\nmetadata ({}{} keys)\n", s.gguf_version > 0 ? "" : "config.json, ", s.metadata.size());
  for (const auto& [key, value] : s.metadata) out += fmt::format("  {:<{}}  {}\n", key, key_width, value);

  size_t name_width = 4;
  for (const TensorSummary& t : s.tensors) name_width = std::max(name_width, t.name.size());
  out += fmt::format("\ntensors ({})\n  {:<{}}  {:<6}  {:<16}  {:>12}\n", s.tensors.size(), "name", name_width,
                     "type", "dims", "bytes");
  for (const TensorSummary& t : s.tensors) {
    out += fmt::format("  {:<{}}  {:<6}  {:<16}  {:>12}\n", t.name, name_width, t.type, dims_text(t.dims),
                       t.num_bytes);
  }
  out += fmt::format("\ntotals by type\n  {:<6}  {:>7}  {:>12}  {:>12}\n", "type", "tensors", "parameters", "bytes");
  for (const TensorTypeTotal& t : s.totals_by_type) {
    out += fmt::format("  {:<6}  {:>7}  {:>12}  {:>12}  ({})\n", t.type, t.num_tensors, t.num_elements,
                       t.num_bytes, human_bytes(t.num_bytes));
  }
  return out;
}

int run_model_info(const ModelInfoOptions& o) {
  Result<EngineConfig> config = engine_config_from(o.engine);
  if (!config.ok()) {
    print_error(config.error());
    return kExitUsage;
  }
  const auto model = o.engine.given.find("model_path");
  const std::optional<std::string> path = resolve_model_path(model != o.engine.given.end() ? model->second : "");
  if (!path) return kExitRuntime;
  auto summary = inspect_model_file(*path);
  if (!summary.ok()) {
    print_error(summary.error());
    return kExitRuntime;
  }
  std::optional<KvPlan> plan;
  std::optional<DraftMemory> draft_memory;
  ModelShape summary_shape;
  if (summary->config) {
    summary_shape = summary->config->shape();
    ModelShape& shape = summary_shape;
    // spec = draft: the draft model's K/V share every block.
    if (config->spec == SpecMethod::Draft && !config->spec_draft_model.empty()) {
      auto draft = inspect_model_file(config->spec_draft_model);
      if (!draft.ok() || !draft->config) {
        print_error(fmt::format("the draft model cannot be read: {}",
                                draft.ok() ? "no model configuration" : draft.error()));
        return kExitRuntime;
      }
      const ModelShape d = draft->config->shape();
      // What Engine::create checks in full (token by token); the sizes
      // alone already tell most mismatches, before any load.
      if (d.vocab_size != shape.vocab_size) {
        print_error(fmt::format("the draft model {} has {} logits but the model {} has {}; a draft model needs the "
                                "same vocabulary",
                                config->spec_draft_model, d.vocab_size, *path, shape.vocab_size));
        return kExitRuntime;
      }
      shape.draft_num_layers = d.num_layers;
      shape.draft_num_kv_heads = d.num_kv_heads;
      shape.draft_head_dim = d.head_dim;
      draft_memory = DraftMemory{draft->weight_bytes, 0};
    }
  }
  // What Engine::create would run the model on (--backend), and why; on a
  // GPU the pool is planned against its free memory.
  const Result<BackendChoice> backend = choose_backend_for_model(*config, *path);
  std::optional<DeviceMemory> device;
  if (summary->config) {
    if (backend.ok()) device = probe_device_memory(*backend, static_cast<int64_t>(summary->weight_bytes));
    plan = plan_kv(summary_shape, *config, physical_memory_bytes(), device ? &*device : nullptr);
  }
  // --tp N: the split, on the planned pool (the file is mapped, not repacked).
  std::optional<Result<TensorParallelMemory>> ranks;
  if (plan && plan->ok() && config->tp > 1) {
    EngineConfig split = *config;
    split.model_path = *path;
    ranks = tensor_parallel_memory(split, plan->num_blocks);
  }
  // The KV figures for the cache type in force (the plan has its bytes per
  // token; the file summary's are for f32), the same in text and JSON.
  // A plan that does not fit (the budget too small) has sized its blocks
  // all the same: its figures serve, when a user most wants them.
  const bool planned = plan && plan->kv_bytes_per_token > 0;
  const KvCacheType kv_type = planned ? config->kv_cache_type : KvCacheType::F32;
  const uint64_t kv_bytes_per_token =
      planned ? static_cast<uint64_t>(plan->kv_bytes_per_token) : summary->kv_bytes_per_token;
  if (draft_memory && planned && config->block_size > 0) {
    draft_memory->kv_bytes_per_token = static_cast<uint64_t>(plan->draft_bytes_per_block / config->block_size);
  }
  if (o.json) {
    nlohmann::ordered_json j = summary_json(*summary);
    j["kv_cache_type"] = kv_cache_type_name(kv_type);
    j["kv_bytes_per_token"] = kv_bytes_per_token;
    if (draft_memory) {
      j["draft_weight_bytes"] = draft_memory->weight_bytes;
      j["draft_kv_bytes_per_token"] = draft_memory->kv_bytes_per_token;
    }
    if (summary->config) {
      j["memory_bytes_full_context"] =
          memory_at(summary->weight_bytes, kv_bytes_per_token, draft_memory,
                    static_cast<uint64_t>(summary->config->context_length));
    }
    j["kv_plan"] = plan ? plan_json(*plan, *config) : nlohmann::ordered_json(nullptr);
    j["backend"] = backend.ok() ? nlohmann::ordered_json{{"kind", backend_kind_name(backend->kind)},
                                                          {"reason", backend->reason}}
                                : nlohmann::ordered_json{{"error", backend.error()}};
    if (device) j["backend"]["device_memory"] = {{"free_bytes", device->free_bytes}, {"total_bytes", device->total_bytes}};
    j["tensor_parallel"] = !ranks        ? nlohmann::ordered_json(nullptr)
                           : ranks->ok() ? server::tensor_parallel_json(**ranks)
                                         : nlohmann::ordered_json{{"error", ranks->error()}};
    write_stdout(dump_json(j) + "\n");
  } else {
    std::string text = summary_text(*summary, kv_cache_type_name(kv_type), kv_bytes_per_token, draft_memory);
    // The plan goes right after the memory lines, before the metadata.
    if (plan) text.insert(text.find("\nmetadata ("), plan_text(*plan, *config, summary->config->context_length));
    if (ranks) {
      const std::string split =
          ranks->ok() ? ranks_text(**ranks) : fmt::format("ranks       cannot split: {}\n", ranks->error());
      text.insert(text.find("\nmetadata ("), split);
    }
    text.insert(text.find("\nmetadata ("), fmt::format("backend     {}\n", backend.ok() ? backend->reason
                                                                                  : backend.error()));
    if (device) {
      text.insert(text.find("\nmetadata ("),
                  fmt::format("GPU memory  {} free of {} (the pool, the weights and the workspace go there)\n",
                              human_bytes(static_cast<uint64_t>(device->free_bytes)),
                              human_bytes(static_cast<uint64_t>(device->total_bytes))));
    }
    write_stdout(terminal_safe(text));  // names and keys are the file's: nothing in them may drive the terminal
  }
  // Everything is printed either way; the exit status lets a script ask
  // "would these settings run?" as generate would answer it (exit 1): the
  // file is no model kvscope runs (a vocabulary only, another
  // architecture, a tensor missing or misshapen), the pool does not fit, the backend asked for cannot run
  // here, or the model does not split into --tp ranks.
  const bool runs = summary->config && summary->load_error.empty() && plan && plan->ok() && backend.ok() &&
                    (!ranks || ranks->ok());
  return runs ? kExitOk : kExitRuntime;
}

}  // namespace

Command add_model_info_command(CLI::App& parent) {
  auto o = std::make_shared<ModelInfoOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "model-info", "Show what a GGUF model file holds and the KV plan for the options given (exit 1: generate would "
                    "refuse these options)");
  add_engine_options(*cmd, o->engine);
  cmd->add_flag("--json", o->json, "print a JSON object");
  return {cmd, [o] { return run_model_info(*o); }};
}

}  // namespace kvscope::cli
