// kvscope-cli: the terminal front end over the engine.
//
//   kvscope-cli generate --prompt "Once upon a time" -n 32
//   kvscope-cli chat --system "You are terse."
//   kvscope-cli tokenize --model vocab.gguf --text "Hello world" --pieces
//   kvscope-cli model-info --json
//   kvscope-cli bench --prompt-tokens 128 --gen-tokens 128 --out bench.json
//   kvscope-cli bench-seeds --quick --out-dir results/
//   kvscope-cli fetch-model
//   kvscope-cli serve --port 8080 --api-key KEY
//   kvscope-cli check --prompts prompts.txt --a "block_size=16" --b "block_size=1,concurrency=8"
//   kvscope-cli perplexity -f text.txt --window 512 --kv-cache-type q8_0
//
// Exit codes: 0 ok, 1 runtime or model error, 2 usage error (check: 3 outputs diverge).
#include <exception>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common_options.h"

namespace kvscope::cli {
Command add_seed_bench_command(CLI::App& parent);  // seed_bench_command.cpp
Command add_fetch_model_command(CLI::App& parent);  // fetch_model_command.cpp
Command add_check_command(CLI::App& parent);  // check_command.cpp
Command add_serve_command(CLI::App& parent);  // serve_command.cpp
Command add_perplexity_command(CLI::App& parent);  // perplexity_command.cpp
}  // namespace kvscope::cli

int main(int argc, char** argv) {
  using namespace kvscope::cli;
  CLI::App app{"kvscope: a paged-attention inference engine, from the terminal", "kvscope-cli"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", "kvscope-cli " KVSCOPE_VERSION);
  // CLI11's own parse errors ("Could not convert: --temp = abc") read as
  // every other error of kvscope-cli does.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("kvscope-cli: error: {}\nRun with --help for more information.\n", e.what());
  });
  const std::vector<Command> commands = {
      add_generate_command(app), add_chat_command(app), add_tokenize_command(app),
      add_model_info_command(app), add_bench_command(app), add_seed_bench_command(app),
      add_fetch_model_command(app), add_check_command(app), add_serve_command(app),
      add_perplexity_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version come through here with exit code 0.
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const std::exception& e) {
    // Nothing should throw past a command, but a message beats std::terminate.
    print_error(e.what());
    return kExitRuntime;
  }
  return kExitUsage;
}
