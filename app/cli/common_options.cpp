// Shared kvscope-cli options and helpers (see common_options.h).
#include "common_options.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvscope::cli {
namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

std::string default_model_dir() {
  if (std::string dir = env_or_empty("KVSCOPE_MODEL_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_DATA_HOME"); !xdg.empty()) return xdg + "/kvscope/models";
  return env_or_empty("HOME") + "/.local/share/kvscope/models";
}

std::optional<std::string> resolve_model_path(const std::string& requested) {
  if (!requested.empty()) {
    if (is_file(requested)) return requested;
    print_error(fmt::format("model file '{}' does not exist or is not a file", requested));
    return std::nullopt;
  }
  const std::string path = (fs::path(default_model_dir()) / kDefaultModelFile).string();
  if (is_file(path)) return path;
  print_error(fmt::format(
      "the default model is not installed (looked for {})\n"
      "  fetch it with:  python3 scripts/fetch_model.py\n"
      "  or pass another GGUF file with --model FILE", path));
  return std::nullopt;
}

std::optional<int64_t> parse_byte_size(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number(text.substr(0, i));
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

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

void print_error(std::string_view message) { fmt::print(stderr, "kvscope-cli: error: {}\n", message); }

void write_stdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string dump_json(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void add_engine_options(CLI::App& cmd, EngineOptions& opts) {
  cmd.add_option("--model", opts.model, "GGUF model file (default: " + std::string(kDefaultModelFile) +
                                            " in $KVSCOPE_MODEL_DIR or ~/.local/share/kvscope/models)");
  cmd.add_option("--threads", opts.threads, "CPU threads (0: one per core)")->capture_default_str();
  cmd.add_option("--block-size", opts.block_size, "KV block size in tokens")->capture_default_str();
  cmd.add_option("--kv-budget", opts.kv_budget, "memory for the KV cache: bytes, or 512M, 2G, ...")
      ->capture_default_str();
  cmd.add_option("--max-seqs", opts.max_seqs, "sequences per step")->capture_default_str();
  cmd.add_option("--max-batched-tokens", opts.max_batched_tokens, "token rows per step")->capture_default_str();
  cmd.add_option("--ctx", opts.ctx, "max model length in tokens (0: the model's context)")->capture_default_str();
  cmd.add_flag("--no-paging", opts.no_paging,
               "paged attention off: reserve each request's whole max length up front in one piece");
  cmd.add_flag("--no-prefix-cache", opts.no_prefix_cache, "do not reuse KV blocks of identical prompt prefixes");
  cmd.add_option("--policy", opts.policy, "scheduling: continuous (iteration-level) or static (batch at a time)")
      ->check(CLI::IsMember({"continuous", "static"}))
      ->capture_default_str();
  cmd.add_option("--preemption", opts.preemption, "when KV blocks run out: recompute or swap")
      ->check(CLI::IsMember({"recompute", "swap"}))
      ->capture_default_str();
  cmd.add_option("--swap-space", opts.swap_space, "host memory for swapped-out KV blocks (with --preemption swap)")
      ->capture_default_str();
}

void add_sampling_options(CLI::App& cmd, SamplingParams& p) {
  cmd.add_option("-n,--max-tokens", p.max_tokens, "tokens to generate at most")->capture_default_str();
  cmd.add_option("--temp", p.temperature, "temperature (0: greedy)")->capture_default_str();
  cmd.add_option("--top-k", p.top_k, "top-k (0: off)")->capture_default_str();
  cmd.add_option("--top-p", p.top_p, "top-p (1: off)")->capture_default_str();
  cmd.add_option("--min-p", p.min_p, "min-p (0: off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", p.repetition_penalty, "repetition penalty (1: off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", p.repeat_last_n, "penalty window (0: off, -1: all)")->capture_default_str();
  cmd.add_option("--seed", p.seed, "sampling seed (0: random)")->capture_default_str();
  cmd.add_option("--stop", p.stop, "stop string (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_flag("--ignore-eos", p.ignore_eos, "keep generating past end-of-sequence");
}

std::unique_ptr<Engine> open_engine(const EngineOptions& opts, int& exit_code) {
  EngineConfig config;
  config.num_threads = opts.threads;
  config.block_size = opts.block_size;
  config.max_seqs = opts.max_seqs;
  config.max_batched_tokens = opts.max_batched_tokens;
  config.max_model_len = opts.ctx;
  config.paged = !opts.no_paging;
  config.prefix_caching = !opts.no_prefix_cache;
  config.policy = opts.policy == "static" ? SchedulingPolicy::Static : SchedulingPolicy::Continuous;
  config.preemption = opts.preemption == "swap" ? PreemptionMode::Swap : PreemptionMode::Recompute;
  const std::optional<int64_t> swap = parse_byte_size(opts.swap_space);
  if (!swap) {
    print_error(fmt::format("--swap-space: '{}' is not a size (examples: 268435456, 256M, 1G)", opts.swap_space));
    exit_code = kExitUsage;
    return nullptr;
  }
  config.swap_space_bytes = *swap;
  const std::optional<int64_t> budget = parse_byte_size(opts.kv_budget);
  if (!budget) {
    print_error(fmt::format("--kv-budget: '{}' is not a size (examples: 536870912, 512M, 2G)", opts.kv_budget));
    exit_code = kExitUsage;
    return nullptr;
  }
  config.kv_budget_bytes = *budget;
  config.model_path = "(model)";  // checked below, after the settings
  if (Status s = config.validate(); !s.ok()) {
    print_error(s.error());
    exit_code = kExitUsage;
    return nullptr;
  }
  const std::optional<std::string> path = resolve_model_path(opts.model);
  if (!path) {
    exit_code = kExitRuntime;
    return nullptr;
  }
  config.model_path = *path;
  auto engine = Engine::create(config);
  if (!engine.ok()) {
    print_error(engine.error());
    exit_code = kExitRuntime;
    return nullptr;
  }
  exit_code = kExitOk;
  return std::move(engine).value();
}

bool check_sampling(const SamplingParams& params) {
  if (Status s = params.validate(); !s.ok()) {
    print_error(s.error());
    return false;
  }
  return true;
}

std::vector<int32_t> prompt_ids(const Engine& engine, const TextTokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids = engine.tokenize(text, /*parse_special=*/true);
  const std::vector<int32_t> bos = tokenizer.encode("", false, /*add_bos=*/true);
  if (!bos.empty() && (ids.empty() || ids.front() != bos.front())) ids.insert(ids.begin(), bos.front());
  return ids;
}

}  // namespace kvscope::cli
