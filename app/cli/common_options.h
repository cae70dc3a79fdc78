// What the kvscope-cli subcommands share: exit codes, the default model's
// location, the engine and sampling options of generate/chat/bench, and the
// turn from those options into a checked EngineConfig and a running Engine.
// Each subcommand lives in its own <name>_command.cpp and registers itself
// with an add_*_command function declared at the bottom.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kvscope/engine.h"
#include "kvscope/model_file.h"

namespace CLI {
class App;
}

namespace kvscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;  // the model cannot be loaded or run
constexpr int kExitUsage = 2;    // a bad option value

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else ~/.local/share/kvscope/models.
std::string default_model_dir();

// `requested` if given, else the default model. Prints why on stderr (for the
// default model: how to fetch it) and returns nullopt when the file is missing.
std::optional<std::string> resolve_model_path(const std::string& requested);

// "512M", "2G", "1.5g", "64KiB", "1048576" -> bytes (binary units); nullopt if malformed.
std::optional<int64_t> parse_byte_size(std::string_view text);

// "98.4 MiB" style, for people.
std::string human_bytes(uint64_t bytes);

// Prints "kvscope-cli: error: <message>" on stderr.
void print_error(std::string_view message);

// Writes text to stdout at once (streamed replies).
void write_stdout(std::string_view text);

// nlohmann::ordered_json -> text; invalid UTF-8 is replaced rather than thrown on.
std::string dump_json(const nlohmann::ordered_json& j, int indent = 2);

struct EngineOptions {
  std::string model;  // empty: the default model
  int32_t threads = 0;
  int32_t block_size = 16;
  std::string kv_budget = "512M";
  int32_t max_seqs = 64;
  int32_t max_batched_tokens = 512;
  int32_t ctx = 0;
  bool no_paging = false;        // contiguous reservation of the whole max length
  bool no_prefix_cache = false;
  std::string policy = "continuous";   // or "static"
  std::string preemption = "recompute";  // or "swap"
  std::string swap_space = "256M";
};

// Registers --model, --threads, --block-size, --kv-budget, --max-seqs,
// --max-batched-tokens, --ctx, --no-paging, --no-prefix-cache, --policy,
// --preemption and --swap-space; the current values of `opts` are the defaults.
void add_engine_options(CLI::App& cmd, EngineOptions& opts);
// Registers -n/--max-tokens, --temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --seed, --stop (repeatable), --ignore-eos.
void add_sampling_options(CLI::App& cmd, SamplingParams& params);

// Validates the options and loads the model. On failure prints the reason and
// sets `exit_code` (usage: 2, missing file or load error: 1), returning nullptr.
std::unique_ptr<Engine> open_engine(const EngineOptions& opts, int& exit_code);

// Validates sampling parameters; prints the message on failure.
bool check_sampling(const SamplingParams& params);

// The token ids Engine::submit would build for `text` (rendered chat or raw
// text, special tokens parsed): BOS first when the vocabulary asks for it and
// the text does not already start with it. Submitting these ids directly lets
// front ends report exactly what ran.
std::vector<int32_t> prompt_ids(const Engine& engine, const TextTokenizer& tokenizer, const std::string& text);

// ---- Subcommands --------------------------------------------------------------

// A registered subcommand: its CLI11 node and what to run when it was chosen
// (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_generate_command(CLI::App& parent);
Command add_chat_command(CLI::App& parent);
Command add_tokenize_command(CLI::App& parent);
Command add_model_info_command(CLI::App& parent);
Command add_bench_command(CLI::App& parent);

}  // namespace kvscope::cli
