// Shared kvscope-cli options and helpers (see common_options.h).
#include "common_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fetch/model_dir.h"
#include "kvscope/sampling_defaults.h"
#include "kvscope/setting_table.h"
#include "kvscope/utf8_text.h"

namespace kvscope::cli {
namespace fs = std::filesystem;

namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

std::string default_model_dir() { return fetch::default_model_dir(); }

std::optional<std::string> resolve_model_path(const std::string& requested) {
  if (!requested.empty()) {
    if (is_file(requested)) return requested;
    std::error_code ec;
    if (fs::is_directory(requested, ec)) {
      // A Hugging Face model directory; Engine::create says what else it lacks.
      if (fs::exists(fs::path(requested) / "config.json", ec)) return requested;
      print_error(fmt::format("'{}' is a directory but not a Hugging Face model directory (it has no config.json); "
                              "--model takes a GGUF file or a directory with config.json, *.safetensors and "
                              "tokenizer.json", requested));
      return std::nullopt;
    }
    print_error(fmt::format("model file '{}' does not exist or is not a file", requested));
    return std::nullopt;
  }
  const std::string path = (fs::path(default_model_dir()) / kDefaultModelFile).string();
  if (is_file(path)) return path;
  print_error(fmt::format(
      "the default model is not installed (looked for {})\n"
      "  fetch it with:  kvscope-cli fetch-model\n"
      "  or pass another GGUF file with --model FILE", path));
  return std::nullopt;
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

namespace {

// Bytes of the character at text[i] when it may reach a terminal as it is:
// well-formed UTF-8 and no control character (C0 but newline and tab, which
// the callers handle, DEL, C1); 0 when it may not.
size_t printable_utf8_length(std::string_view text, size_t i) {
  size_t len = 1;
  const int32_t cp = decode_utf8_char(text, i, &len);  // -1: not UTF-8
  const bool control = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
  return control ? 0 : len;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t n = c == '\n' || c == '\t' ? 1 : printable_utf8_length(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string escape_line(std::string_view text, size_t max_chars, char quote) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t n = 1;
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (quote != '\0' && c == quote) out += std::string("\\") + quote;
    else if ((n = printable_utf8_length(text, i)) > 0) out.append(text.substr(i, n));
    else out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    i += std::max<size_t>(n, 1);
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
  }
  return out;
}

void print_error(std::string_view message) {
  fmt::print(stderr, "kvscope-cli: error: {}\n", terminal_safe(message));
}

void print_warning(std::string_view message) {
  fmt::print(stderr, "kvscope-cli: warning: {}\n", terminal_safe(message));
}

void print_context_notes(const Engine& engine, const RequestStats& stats, FinishReason finish) {
  if (stats.num_context_shifts > 0) {
    fmt::print(stderr, "kvscope-cli: note: the context was full: {} shift{}, {} tokens dropped from its middle in all\n",
               stats.num_context_shifts, stats.num_context_shifts == 1 ? "" : "s", stats.num_dropped_tokens);
  }
  if (finish != FinishReason::ContextFull) return;
  // What to change depends on what set the limit: the KV pool when it holds
  // less than the context asked for, else --ctx (or the model's context).
  const ModelInfo& info = engine.model_info();
  const int64_t pool_tokens = int64_t{info.num_kv_blocks} * info.block_size;
  const std::string raise =
      pool_tokens <= info.max_model_len
          ? fmt::format("the KV pool holds {} tokens ({} blocks of {}): --kv-budget or --num-blocks raises it",
                        pool_tokens, info.num_kv_blocks, info.block_size)
          : fmt::format("--ctx raises the limit (the model's context is {})", info.context_length);
  const std::string shift = engine.config().context_overflow == ContextOverflow::Shift
                                ? "; shift had nothing to drop (see the warning at load)"
                                : ", --context-overflow shift goes on past it";
  fmt::print(stderr, "kvscope-cli: note: the reply stopped where the context was full ({} tokens); {}{}\n",
             stats.num_context_tokens, raise, shift);
}

void write_stdout(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string dump_json(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::ordered_json engine_settings_json(const EngineConfig& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const SettingSpec& spec : engine_settings()) out[spec.key] = spec.format(spec.get(config));
  return out;
}

uint64_t parse_seed(const std::string& text) {
  if (text == "-1") return 0;
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seed);  // unsigned: no sign accepted
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw CLI::ValidationError(
        "--seed", fmt::format("'{}' is not a seed: give -1 (or 0) for a random one, or a whole number from 1 to {}",
                              text, std::numeric_limits<uint64_t>::max()));
  }
  return seed;
}

void add_sampling_options(CLI::App& cmd, SamplingParams& p, bool defaults_from_model) {
  // At least 1: the engine's 0 (score the prompt only) means nothing to a reply.
  cmd.add_option("-n,--max-tokens", p.max_tokens, "tokens to generate at most")
      ->capture_default_str()
      ->check(CLI::Range(1, std::numeric_limits<int32_t>::max()));
  const SamplingParams kvscope = kvscope_sampling_defaults();
  // The options apply_chat_sampling_defaults fills: their help names where an
  // untyped value comes from.
  auto defaulted = [&](const char* name, auto& value, const char* what, auto fallback) {
    if (!defaults_from_model) return cmd.add_option(name, value, what)->capture_default_str();
    return cmd.add_option(name, value, fmt::format("{}; default: the model's recommendation, else {}", what, fallback));
  };
  defaulted("--temp", p.temperature, "temperature (0: greedy)", kvscope.temperature);
  defaulted("--top-k", p.top_k, "top-k (0: off)", kvscope.top_k);
  defaulted("--top-p", p.top_p, "top-p (1: off)", kvscope.top_p);
  defaulted("--min-p", p.min_p, "min-p (0: off)", kvscope.min_p);
  defaulted("--repeat-penalty", p.repetition_penalty, "repetition penalty (1: off)", kvscope.repetition_penalty);
  defaulted("--repeat-last-n", p.repeat_last_n, "penalty window (0: off, -1: all)", kvscope.repeat_last_n);
  // One rule, the engine's (SamplingParams::seed): 0 picks a random seed. -1
  // means the same, as in llama.cpp; before, it wrapped to 2^64-1, a fixed
  // seed. Any value up to 2^64-1 (such as the seed generate --json printed)
  // reproduces a run.
  cmd.add_option_function<std::string>(
         "--seed", [&p](const std::string& text) { p.seed = parse_seed(text); },
         "sampling seed; -1 or 0: a random one (generate --json prints the seed used)")
      ->default_str("-1");
  // One string per --stop: a vector option otherwise takes every argument
  // after it, and `--stop . hi` swallowed the positional prompt.
  cmd.add_option("--stop", p.stop, "stop string (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_flag("--ignore-eos", p.ignore_eos, "keep generating past end-of-sequence");
}

std::string apply_chat_sampling_defaults(const CLI::App& cmd, const ModelInfo& info, SamplingParams& params) {
  static const std::pair<const char*, std::string_view> kOptions[] = {
      {"--temp", "temperature"},    {"--top-k", "top_k"},
      {"--top-p", "top_p"},         {"--min-p", "min_p"},
      {"--repeat-penalty", "repetition_penalty"}, {"--repeat-last-n", "repeat_last_n"}};
  const SamplingDefaults defaults = resolve_sampling_defaults(info.recommended_sampling);
  std::vector<std::string> typed, from_model, built_in;
  for (const auto& [option, field] : kOptions) {
    if (cmd.count(option) > 0) {
      typed.emplace_back(option);
      continue;
    }
    copy_sampling_field(field, defaults.params, params);
    (defaults.is_from_model(field) ? from_model : built_in).emplace_back(option);
  }
  const SamplingParams& p = params;
  std::string line = fmt::format("temp {} · top-k {} · top-p {} · min-p {} · repeat penalty {} over {} tokens",
                                 p.temperature, p.top_k, p.top_p, p.min_p, p.repetition_penalty, p.repeat_last_n);
  auto part = [&line](const char* what, const std::vector<std::string>& options) {
    if (!options.empty()) line += fmt::format("; {}: {}", what, fmt::join(options, " "));
  };
  part("typed", typed);
  part(defaults.model_source.empty() ? "from the model file" : ("from " + defaults.model_source).c_str(), from_model);
  part("kvscope defaults", built_in);
  return line;
}

bool check_sampling(const SamplingParams& params) {
  if (Status s = params.validate(); !s.ok()) {
    print_error(s.error());
    return false;
  }
  return true;
}

}  // namespace kvscope::cli
