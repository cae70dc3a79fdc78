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

#include "engine_options.h"
#include "kvscope/engine.h"
#include "kvscope/model_file.h"

namespace CLI {
class App;
}

namespace kvscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;  // the model cannot be loaded or run
constexpr int kExitUsage = 2;    // a bad option value
constexpr int kExitDiverged = 3;  // check: a prompt's output differs between the two configurations

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else ~/.local/share/kvscope/models.
std::string default_model_dir();

// `requested` if given (a GGUF file or a Hugging Face model directory, which
// must hold config.json), else the default model. Prints why on stderr (for the
// default model: how to fetch it) and returns nullopt when the file is missing.
std::optional<std::string> resolve_model_path(const std::string& requested);

// "98.4 MiB" style, for people.
std::string human_bytes(uint64_t bytes);

// Prints "kvscope-cli: error: <message>" on stderr (terminal_safe: errors
// quote model files' strings).
void print_error(std::string_view message);

// Prints "kvscope-cli: warning: <message>" on stderr (terminal_safe).
void print_warning(std::string_view message);

// Text as a terminal should receive it when part of it comes from a file (a
// model's name, keys, tensor names): control characters other than newline
// and tab (ESC, BEL, CR, DEL, and C1's U+0080..U+009F), which a terminal acts
// on, and bytes that are not UTF-8, are written as \xNN; all else as it is.
std::string terminal_safe(std::string_view text);

// Notes on stderr when a reply met the end of its context: the context
// shifted (tokens dropped from its middle), or it stopped there. A streamed
// reply otherwise just ends, and the model silently forgets what a shift dropped.
// Text for one terminal line: newlines, tabs, backslashes, control
// characters and bytes that are not UTF-8 escaped (\n, \t, \\, \x01, as
// terminal_safe), and `quote` when given; cut with "..." past max_chars.
std::string escape_line(std::string_view text, size_t max_chars = std::string::npos, char quote = '\0');

// `engine` says what set the limit (the KV pool or --ctx) and whether shift
// was already on.
void print_context_notes(const Engine& engine, const RequestStats& stats, FinishReason finish);

// Writes text to stdout at once (streamed replies).
void write_stdout(std::string_view text);

// nlohmann::ordered_json -> text; invalid UTF-8 is replaced rather than thrown on.
std::string dump_json(const nlohmann::ordered_json& j, int indent = 2);

// Every engine setting of `config` as the settings file writes it
// ({"block_size": "16", "preemption": "swap", ...}): what a record ran with.
nlohmann::ordered_json engine_settings_json(const EngineConfig& config);

// --seed's text -> SamplingParams::seed: "-1" and "0" give 0 (a random seed,
// chosen by the engine and reported in RequestStats::seed), else a whole
// number up to 2^64-1. Throws CLI::ValidationError (a usage error) otherwise.
uint64_t parse_seed(const std::string& text);

// Registers -n/--max-tokens, --temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --seed, --stop (repeatable), --ignore-eos.
// defaults_from_model: the command fills the options not typed from the
// model's recommendation, else kvscope's defaults (apply_chat_sampling_defaults),
// and --help says so instead of showing SamplingParams' own defaults.
void add_sampling_options(CLI::App& cmd, SamplingParams& params, bool defaults_from_model = false);

// For chat: every sampling option among --temp, --top-k, --top-p, --min-p,
// --repeat-penalty and --repeat-last-n that was not typed takes the model
// file's recommendation, else kvscope's chat defaults (sampling_defaults.h).
// Returns a line saying which values are in force and where they came from.
std::string apply_chat_sampling_defaults(const CLI::App& cmd, const ModelInfo& info, SamplingParams& params);

// Validates sampling parameters; prints the message on failure.
bool check_sampling(const SamplingParams& params);

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
