// The engine options of generate, chat and bench, generated from the engine's
// setting table (kvscope/setting_table.h): one --option per row, with the
// row's help, its default and, for on/off rows, a --no-option. Nothing here
// names a particular setting except --model's default location.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "file_args.h"
#include "kvscope/engine.h"

namespace CLI {
class App;
}

namespace kvscope::cli {

struct EngineOptions {
  // The defaults the options start from (shown in --help). A subcommand may
  // change them before add_engine_options (bench turns off what would flatter it).
  EngineConfig defaults;
  // Setting key -> the text typed on the command line, for the options given.
  std::map<std::string, std::string> given;
};

// Registers one option per setting row (see setting_table.h for the names:
// --model, --threads, --kv-budget, --num-blocks, --block-size, --paging /
// --no-paging, --prefix-cache / --no-prefix-cache, --swap-space, --ctx,
// --max-seqs, --max-batched-tokens, --policy, --preemption).
void add_engine_options(CLI::App& cmd, EngineOptions& opts);

// The config the options describe, or every problem with them, each message
// starting with the option it is about ("--block-size: block size = 0 is out
// of range [1, 2048]"). The model path is resolved later (open_engine).
Result<EngineConfig> engine_config_from(const EngineOptions& opts);

// The options given that do not apply under `config` (SettingSpec::applies:
// --spec-k without --spec, --swap-space with preemption = recompute, a GPU
// option where no GPU runs), one warning each: they were silently ignored.
std::vector<std::string> ignored_options(const EngineOptions& opts, const EngineConfig& config);

// The model files the options name (--model, --spec-draft-model), for
// check_output_file to refuse as an output.
std::vector<InputFile> model_files_given(const EngineOptions& opts);

// Validates the options and loads the model; prints the engine's warnings
// ("kvscope-cli: warning: ..."). On failure prints the reason and sets
// `exit_code` (usage: 2, missing file or load error: 1), returning nullptr.
std::unique_ptr<Engine> open_engine(const EngineOptions& opts, int& exit_code);

}  // namespace kvscope::cli
