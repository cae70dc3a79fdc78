// `kvscope-cli bench`: single-sequence prefill and decode speed. Builds
// deterministic prompts of exactly --prompt-tokens ids from a fixed paragraph,
// runs one warm-up and then --repeats greedy generations of --gen-tokens
// tokens (EOS ignored), and prints JSON with the medians: prefill tok/s =
// prompt tokens / time to first token; decode tok/s from the engine's request
// stats.
//
// Every run (the warm-up too) gets a fresh prompt whose first token no earlier
// run started with. Prefix-cache blocks are found by a hash chained from the
// first token, so none can match and every prefill computes all its tokens:
// with one prompt reused, the warm-up's blocks served the measured runs and
// prefill read ~5x too fast. The record checks it: a measured run that got
// any prompt token from the prefix cache fails the command.
//
//   kvscope-cli bench --threads 2 --prompt-tokens 128 --gen-tokens 128 --out bench.json
#include <algorithm>
#include <fstream>
#include <unordered_set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "common_options.h"
#include "memory_bandwidth.h"

namespace kvscope::cli {
namespace {

constexpr const char* kParagraph =
    "The history of computing is a story of people trying to make machines remember. Early computers "
    "stored numbers in delay lines and magnetic drums, and programmers spent their days deciding what to "
    "keep close and what to move away. Today a language model faces the same question with its key and "
    "value cache: every token it has read must be kept somewhere, and memory is never quite enough. ";

struct BenchOptions {
  EngineOptions engine;
  int32_t prompt_tokens = 128;
  int32_t gen_tokens = 128;
  int32_t repeats = 5;
  std::string out;
};

struct BenchRun {
  double time_to_first_token_s = 0;
  double prefill_tok_s = 0;
  double decode_tok_s = 0;
  double total_s = 0;
  int32_t num_generated = 0;
  int32_t num_cached_prompt_tokens = 0;  // from the prefix cache; must be 0 for an honest prefill figure
  int32_t num_draft_tokens = 0;          // speculative decoding: proposed
  int32_t num_accepted_tokens = 0;       // and accepted
};

// One prompt of exactly `n` ids per run: the paragraph repeated, read from
// offset starts[run], then cut. The offsets are chosen so that every run's
// first token differs from every other run's.
struct BenchPrompts {
  std::vector<int32_t> paragraph;  // the paragraph's ids, once
  std::vector<size_t> starts;      // [num_runs] offset into paragraph of each run's first token
  std::vector<int32_t> prompt(size_t run, int32_t n) const {
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(n));
    for (size_t i = 0; ids.size() < static_cast<size_t>(n); ++i) {
      ids.push_back(paragraph[(starts[run] + i) % paragraph.size()]);
    }
    return ids;
  }
};

Result<BenchPrompts> make_prompts(const Engine& engine, int32_t num_runs) {
  BenchPrompts p;
  p.paragraph = engine.tokenize(kParagraph, /*parse_special=*/false);
  if (p.paragraph.empty()) return Error{"the model's tokenizer turned the benchmark paragraph into no tokens"};
  std::unordered_set<int32_t> used;
  for (size_t i = 0; i < p.paragraph.size() && static_cast<int32_t>(p.starts.size()) < num_runs; ++i) {
    if (used.insert(p.paragraph[i]).second) p.starts.push_back(i);
  }
  if (static_cast<int32_t>(p.starts.size()) < num_runs) {
    return Error{fmt::format("{} runs need as many distinct first tokens, but the benchmark paragraph has only {} "
                             "distinct tokens in this vocabulary: use --repeats {} or fewer",
                             num_runs, used.size(), static_cast<int64_t>(used.size()) - 1)};
  }
  return p;
}

Result<BenchRun> run_once(Engine& engine, const std::vector<int32_t>& prompt, int32_t gen_tokens) {
  GenerationRequest request;
  request.prompt_tokens = prompt;
  request.sampling.temperature = 0.0f;
  request.sampling.ignore_eos = true;
  request.sampling.max_tokens = gen_tokens;
  TokenEvent last;
  request.on_event = [&last](const TokenEvent& ev) {
    if (ev.finish != FinishReason::None) last = ev;
  };
  auto id = engine.submit(std::move(request));
  if (!id.ok()) return Error{id.error()};
  engine.run_until_idle();
  if (last.finish == FinishReason::Error) return Error{last.error};
  const RequestStats& s = last.stats;
  BenchRun run;
  run.time_to_first_token_s = s.time_to_first_token_s;
  run.prefill_tok_s = s.time_to_first_token_s > 0 ? prompt.size() / s.time_to_first_token_s : 0.0;
  run.decode_tok_s = s.decode_tokens_per_s;
  run.total_s = s.total_time_s;
  run.num_generated = s.num_generated_tokens;
  run.num_cached_prompt_tokens = s.num_cached_prompt_tokens;
  run.num_draft_tokens = s.num_draft_tokens;
  run.num_accepted_tokens = s.num_accepted_tokens;
  return run;
}

int run_bench(const BenchOptions& o) {
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;
  auto prompts = make_prompts(*engine, o.repeats + 1);  // run 0 is the warm-up
  if (!prompts.ok()) {
    print_error(prompts.error());
    return kExitRuntime;
  }
  const CpuDescription cpu = describe_cpu();
  fmt::print(stderr, "bench: {} prompt tokens, {} generated, {} threads on {}; warm-up...\n", o.prompt_tokens,
             o.gen_tokens, engine->config().num_threads, cpu_summary(cpu));
  if (auto warm = run_once(*engine, prompts->prompt(0, o.prompt_tokens), o.gen_tokens); !warm.ok()) {
    print_error(warm.error());
    return kExitRuntime;
  }
  std::vector<BenchRun> runs;
  nlohmann::ordered_json runs_json = nlohmann::ordered_json::array();
  int64_t num_cached_prompt_tokens = 0;
  for (int32_t r = 0; r < o.repeats; ++r) {
    const std::vector<int32_t> prompt = prompts->prompt(static_cast<size_t>(r) + 1, o.prompt_tokens);
    auto run = run_once(*engine, prompt, o.gen_tokens);
    if (!run.ok()) {
      print_error(run.error());
      return kExitRuntime;
    }
    fmt::print(stderr, "run {}/{}: prefill {:.1f} tok/s, decode {:.1f} tok/s\n", r + 1, o.repeats,
               run->prefill_tok_s, run->decode_tok_s);
    runs_json.push_back({{"first_prompt_token", prompt.front()},
                         {"cached_prompt_tokens", run->num_cached_prompt_tokens},
                         {"time_to_first_token_s", run->time_to_first_token_s},
                         {"prefill_tok_s", run->prefill_tok_s},
                         {"decode_tok_s", run->decode_tok_s},
                         {"total_s", run->total_s},
                         {"generated_tokens", run->num_generated},
                         {"draft_tokens", run->num_draft_tokens},
                         {"accepted_draft_tokens", run->num_accepted_tokens}});
    num_cached_prompt_tokens += run->num_cached_prompt_tokens;
    runs.push_back(*run);
  }
  if (num_cached_prompt_tokens != 0) {
    // Distinct first tokens make a prefix hit impossible; one means the
    // prompts or the cache's hashing changed, and the prefill figure is void.
    print_error(fmt::format("{} prompt tokens of the measured runs came from the prefix cache, so the prefill figure "
                            "would not measure prefill; no result written",
                            num_cached_prompt_tokens));
    return kExitRuntime;
  }
  std::vector<double> prefill, decode;
  for (const BenchRun& r : runs) {
    prefill.push_back(r.prefill_tok_s);
    decode.push_back(r.decode_tok_s);
  }
  const ModelInfo& info = engine->model_info();
  // The floor: decode reads every weight once per token. Measured from the
  // caches (the model fits in this CPU's L3 after the first pass, as in decode)
  // and from DRAM (1 GiB buffer).
  const double cache_gbs = measure_read_bandwidth(info.weight_bytes, engine->config().num_threads, 5);
  const double dram_gbs = measure_read_bandwidth(size_t{1} << 30, engine->config().num_threads, 3);
  const double weight_gb = static_cast<double>(info.weight_bytes) / 1e9;
  const nlohmann::ordered_json result = {
      {"engine", "kvscope"},
      {"model", info.name},
      {"model_path", info.path},
      {"cpu", cpu_json(cpu, engine->config().num_threads)},
      {"threads", engine->config().num_threads},
      {"prompt_tokens", o.prompt_tokens},
      {"gen_tokens", o.gen_tokens},
      {"repeats", o.repeats},
      {"prefix_caching", engine->config().prefix_caching},
      {"spec", spec_method_name(engine->config().spec)},
      {"spec_k", engine->config().spec_k},
      // How prefill stays honest with the prefix cache on: see the file comment.
      {"prefill_prompts", "fresh per run (warm-up included): distinct first tokens, so no prefix-cache block matches"},
      {"prefill_cached_prompt_tokens", num_cached_prompt_tokens},
      {"prefill_tok_s_median", median(prefill)},
      {"decode_tok_s_median", median(decode)},
      {"runs", runs_json},
      {"weight_bytes", info.weight_bytes},
      {"read_bandwidth_gb_s", {{"model_sized_buffer", cache_gbs}, {"one_gib_buffer", dram_gbs}}},
      {"decode_floor_tok_s", {{"model_sized_buffer", cache_gbs / weight_gb}, {"one_gib_buffer", dram_gbs / weight_gb}}},
      {"block_size", info.block_size},
  };
  const std::string text = dump_json(result) + "\n";
  write_stdout(text);
  if (!o.out.empty()) {
    std::ofstream out(o.out, std::ios::binary);
    out << text;
    if (!out) {
      print_error(fmt::format("cannot write '{}'", o.out));
      return kExitRuntime;
    }
  }
  return kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto o = std::make_shared<BenchOptions>();
  o->engine.defaults.num_threads = 2;
  CLI::App* cmd = parent.add_subcommand("bench", "Measure single-sequence prefill and decode speed (JSON)");
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt length in tokens")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--gen-tokens", o->gen_tokens, "tokens to generate per run")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "measured runs (after one warm-up)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--out", o->out, "also write the JSON to this file");
  add_engine_options(*cmd, o->engine);
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace kvscope::cli
