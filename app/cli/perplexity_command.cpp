// `kvscope-cli perplexity`: how well the model predicts a text, the measure
// llama.cpp's perplexity tool reports, by the same procedure so the two can
// be compared (scripts/dev/record_perplexity_reference.py applies it to
// llama.cpp's logits): the text is tokenised once (BOS first when the vocabulary asks
// for it), cut into windows of --window tokens (the last part that does not
// fill one is left out), each window's first token replaced by BOS where
// there is one, and in each window only the second half is scored, every
// token there with all the window before it as context. PPL = exp(mean of
// -log p(token)). Every window is one engine request that scores its prompt
// (GenerationRequest::on_prompt_logits, max_tokens 0), all submitted at
// once, so the engine batches them as it batches chat requests; so the
// figure answers what an engine setting (a KV cache type, block size,
// tensor parallelism) costs in accuracy.
//
//   kvscope-cli perplexity -f wiki.test.raw --window 512
//   kvscope-cli perplexity -f text.txt --kv-cache-type q8_0 --json
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "common_options.h"
#include "file_args.h"
#include "kvscope/kv_plan.h"
#include "kvscope/setting_table.h"
#include "logprobs.h"

namespace kvscope::cli {
namespace {

struct PerplexityOptions {
  EngineOptions engine;
  std::string file;
  int32_t window = 512;
  int32_t max_windows = 0;  // 0: every whole window of the text
  bool json = false;
};

// One window's scored tokens: sum of -log p and of its square.
struct WindowScore {
  double nll = 0.0;
  double nll2 = 0.0;
  int64_t count = 0;
  bool finished = false;
  std::string error;
};

// -log p(token) under the raw logits row: the server's logprobs, negated.
double negative_log_likelihood(const float* logits, int32_t vocab, int32_t token) {
  return static_cast<double>(server::log_sum_exp(logits, vocab)) - static_cast<double>(logits[token]);
}

int run_perplexity(const PerplexityOptions& o) {
  if (o.window < 4) {
    print_error(fmt::format("--window {} is too small: at least 4 tokens (half of them are scored)", o.window));
    return kExitUsage;
  }
  Result<std::string> text = read_file_arg(o.file);
  if (!text.ok()) {
    print_error(fmt::format("--file: {}", text.error()));
    return kExitUsage;
  }
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;
  if (o.window > engine->config().max_model_len) {
    // Name what set the limit: --ctx when given, else the KV pool when it
    // holds less than the model's context, else the model itself.
    const ModelInfo info = engine->model_info();
    std::string why = "--ctx";
    if (!o.engine.given.count("max_model_len")) {
      const SettingSpec* pool = find_setting(pool_sizing_setting(engine->config(), info.backend == "cuda"));
      why = engine->config().max_model_len < info.context_length && pool != nullptr
                ? fmt::format("the KV pool holds no more; raise --{}", pool->cli_option())
                : std::string("the model's context");
    }
    print_error(fmt::format("--window {} does not fit the context of {} tokens ({})", o.window,
                            engine->config().max_model_len, why));
    return kExitUsage;
  }

  std::vector<int32_t> tokens;
  const int32_t bos = engine->prompt_bos();
  if (bos >= 0) tokens.push_back(bos);
  std::string text_warning;  // scored as generate would run it, and said as generate says it
  const std::vector<int32_t> body = engine->tokenize(*text, /*parse_special=*/false, &text_warning);
  if (!text_warning.empty()) print_warning(fmt::format("{}: {}", o.file, text_warning));
  tokens.insert(tokens.end(), body.begin(), body.end());
  int64_t num_windows = static_cast<int64_t>(tokens.size()) / o.window;
  if (o.max_windows > 0) num_windows = std::min<int64_t>(num_windows, o.max_windows);
  if (num_windows == 0) {
    print_error(fmt::format("the text has {} tokens: fewer than one window of {} (--window)", tokens.size(),
                            o.window));
    return kExitUsage;
  }
  // Scored: positions first + 1 .. window - 1 of each window (llama.cpp's
  // choice: every scored token sees more than half a window of context).
  const int32_t first = o.window / 2;
  if (!o.json) {
    fmt::print(stderr,
               "perplexity: {} window{} of {} tokens, {} tokens scored in each, from {} ({} tokens); the running "
               "perplexity over the windows so far, as each ends (--json also gives each window's own):\n",
               num_windows, num_windows == 1 ? "" : "s", o.window, o.window - first - 1, o.file, tokens.size());
  }

  std::vector<WindowScore> scores(static_cast<size_t>(num_windows));
  const auto start = std::chrono::steady_clock::now();
  for (int64_t w = 0; w < num_windows; ++w) {
    GenerationRequest r;
    r.prompt_tokens.assign(tokens.begin() + w * o.window, tokens.begin() + (w + 1) * o.window);
    if (bos >= 0) r.prompt_tokens.front() = bos;
    r.sampling.max_tokens = 0;
    r.first_scored_position = first + 1;
    WindowScore& score = scores[static_cast<size_t>(w)];
    r.on_prompt_logits = [&score](int32_t, int32_t token, const float* logits, int32_t vocab) {
      const double nll = negative_log_likelihood(logits, vocab, token);
      score.nll += nll;
      score.nll2 += nll * nll;
      ++score.count;
    };
    r.on_event = [&score](const TokenEvent& ev) {
      if (ev.finish == FinishReason::None) return;
      score.finished = true;
      if (ev.finish == FinishReason::Error) score.error = ev.error.empty() ? "scoring failed" : ev.error;
    };
    auto id = engine->submit(std::move(r));
    if (!id.ok()) {
      print_error(fmt::format("window {}: {}", w + 1, id.error()));
      return kExitRuntime;
    }
  }
  // Step by hand to print each window's figure as it completes, in order.
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  size_t next = 0;
  nlohmann::ordered_json window_ppl = nlohmann::ordered_json::array();
  while (engine->has_work() || next < scores.size()) {
    if (engine->has_work()) engine->step();
    for (; next < scores.size() && scores[next].finished; ++next) {
      const WindowScore& s = scores[next];
      if (!s.error.empty()) {
        print_error(fmt::format("window {}: {}", next + 1, s.error));
        return kExitRuntime;
      }
      nll += s.nll;
      nll2 += s.nll2;
      count += s.count;
      const double running = std::exp(nll / static_cast<double>(count));
      window_ppl.push_back(std::exp(s.nll / static_cast<double>(s.count)));
      if (!o.json) fmt::print(stderr, "[{}] {:.4f}{}", next + 1, running, next + 1 == scores.size() ? "\n" : " ");
    }
    if (!engine->has_work() && next < scores.size()) {
      print_error(fmt::format("window {} ended without a result", next + 1));
      return kExitRuntime;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  // The standard error of the mean NLL, carried to the PPL (d exp(x) = exp(x) dx).
  const double variance = count > 1 ? std::max(0.0, (nll2 / count - mean * mean) * count / (count - 1)) : 0.0;
  const double ppl_error = ppl * std::sqrt(variance / static_cast<double>(count));
  const int64_t tokens_run = num_windows * o.window;

  if (o.json) {
    nlohmann::ordered_json settings = nlohmann::ordered_json::object();
    for (const auto& [key, value] : o.engine.given) settings[key] = value;
    const nlohmann::ordered_json j = {
        {"file", o.file},
        {"model", engine->config().model_path},
        {"settings", settings},
        {"window", o.window},
        {"num_windows", num_windows},
        {"num_scored_tokens", count},
        {"ppl", ppl},
        {"ppl_error", ppl_error},
        {"mean_nll", mean},
        {"window_ppl", window_ppl},
        {"seconds", seconds},
        {"tokens_per_s", static_cast<double>(tokens_run) / seconds},
        {"cpu", cpu_json(describe_cpu(), engine->config().num_threads)},
    };
    write_stdout(dump_json(j) + "\n");
  } else {
    write_stdout(fmt::format("PPL = {:.4f} +/- {:.4f}\n", ppl, ppl_error));
    fmt::print(stderr, "{} tokens scored; {} tokens run in {:.1f} s ({:.0f} tok/s)\n", count, tokens_run, seconds,
               static_cast<double>(tokens_run) / seconds);
  }
  return kExitOk;
}

}  // namespace

Command add_perplexity_command(CLI::App& parent) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "perplexity", "Score a text file: perplexity over windows of --window tokens (llama.cpp's procedure)");
  cmd->add_option("-f,--file", o->file, "the text to score")->required();
  cmd->add_option("-w,--window", o->window, "tokens per window; the second half of each is scored")
      ->capture_default_str();
  cmd->add_option("--windows", o->max_windows, "score only the first N windows (0: every whole window)")
      ->check(CLI::Range(0, std::numeric_limits<int32_t>::max()));  // NonNegativeNumber printed DBL_MAX's 309 digits
  cmd->add_flag("--json", o->json, "print one JSON object (with the CPU) instead of text");
  add_engine_options(*cmd, o->engine);
  return {cmd, [o] { return run_perplexity(*o); }};
}

}  // namespace kvscope::cli
