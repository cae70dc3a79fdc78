// `kvscope-cli bench`: prefill and decode speed in-process. Builds
// deterministic prompts of exactly --prompt-tokens ids from a fixed paragraph,
// runs one warm-up and then --repeats greedy generations of --gen-tokens
// tokens (EOS ignored), and prints JSON with the medians: prefill tok/s =
// prompt tokens / time to first token; decode tok/s from the engine's request
// stats.
//
// --concurrency N (default 1) submits N sequences together per run, each with
// its own prompt, and adds the aggregate figure (generated tokens of all N over
// the run's wall time) and each request's time to first token (median, p90):
// what the OpenAI-compatible server is compared with at the same number of
// clients (scripts/dev/bench_server.py).
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
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <string_view>
#include <unordered_set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "common_options.h"
#include "file_args.h"
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
  int32_t concurrency = 1;  // sequences submitted together per run
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
  int32_t num_preemptions = 0;           // times the request was preempted (a slow request's reason)
};

// One prompt of exactly `n` ids per sequence: a first token, then the
// paragraph repeated from an offset, then cut. Every sequence's first token
// differs from every other's. The first tokens come from the paragraph itself
// (the prompt is then the paragraph read from that token on); a paragraph has
// only some dozens of distinct tokens, so when the sequences (runs x
// concurrency) need more, further first tokens are ids from the middle of the
// vocabulary (where ordinary tokens sit, away from the special tokens that
// vocabularies put at either end), each followed by the paragraph from its start.
struct BenchPrompts {
  std::vector<int32_t> paragraph;  // the paragraph's ids, once
  struct Start {
    int32_t first_token = 0;
    size_t next = 0;  // offset into paragraph of the second token
  };
  std::vector<Start> starts;  // [num_sequences]
  std::vector<int32_t> prompt(size_t sequence, int32_t n) const {
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(n));
    ids.push_back(starts[sequence].first_token);
    for (size_t i = 0; ids.size() < static_cast<size_t>(n); ++i) {
      ids.push_back(paragraph[(starts[sequence].next + i) % paragraph.size()]);
    }
    return ids;
  }
};

Result<BenchPrompts> make_prompts(const Engine& engine, int32_t num_runs, int32_t concurrency) {
  BenchPrompts p;
  p.paragraph = engine.tokenize(kParagraph, /*parse_special=*/false);
  if (p.paragraph.empty()) return Error{"the model's tokenizer turned the benchmark paragraph into no tokens"};
  const int64_t needed = int64_t{num_runs} * concurrency;
  std::unordered_set<int32_t> used;
  for (size_t i = 0; i < p.paragraph.size() && static_cast<int64_t>(p.starts.size()) < needed; ++i) {
    if (used.insert(p.paragraph[i]).second) p.starts.push_back({p.paragraph[i], i + 1});
  }
  const int32_t vocab = engine.model_info().vocab_size;
  for (int32_t id = vocab / 4; id < vocab * 3 / 4 && static_cast<int64_t>(p.starts.size()) < needed; ++id) {
    if (used.insert(id).second) p.starts.push_back({id, 0});
  }
  if (static_cast<int64_t>(p.starts.size()) < needed) {
    const int64_t available = static_cast<int64_t>(used.size());
    const int64_t max_repeats = available / concurrency - 1;  // one run is the warm-up
    const std::string advice = max_repeats >= 1 ? fmt::format("use --repeats {} or fewer", max_repeats)
                                                : std::string("use a lower --concurrency");
    return Error{fmt::format("{} runs of {} sequences need {} distinct first tokens, but only {} are available in "
                             "this vocabulary: {}",
                             num_runs, concurrency, needed, available, advice)};
  }
  return p;
}

// One run: `prompts` submitted together, then the engine stepped until all
// finish. Returns one BenchRun per prompt, in order, and the run's wall time.
struct BatchResult {
  std::vector<BenchRun> requests;
  double wall_s = 0;
  std::vector<StepStats> steps;  // every step of the run
};

Result<BatchResult> run_batch(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int32_t gen_tokens) {
  std::vector<TokenEvent> finals(prompts.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t k = 0; k < prompts.size(); ++k) {
    GenerationRequest request;
    request.prompt_tokens = prompts[k];
    request.sampling.temperature = 0.0f;
    request.sampling.ignore_eos = true;
    request.sampling.max_tokens = gen_tokens;
    request.on_event = [&last = finals[k]](const TokenEvent& ev) {
      if (ev.finish != FinishReason::None) last = ev;
    };
    if (auto id = engine.submit(std::move(request)); !id.ok()) {
      // The requests already in hold callbacks into `finals`: let them finish first.
      engine.run_until_idle();
      return Error{id.error()};
    }
  }
  BatchResult batch;
  while (engine.has_work()) {
    engine.step();
    batch.steps.push_back(engine.last_step_stats());
  }
  batch.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t k = 0; k < prompts.size(); ++k) {
    const TokenEvent& last = finals[k];
    if (last.finish == FinishReason::Error) return Error{last.error};
    const RequestStats& s = last.stats;
    BenchRun run;
    run.time_to_first_token_s = s.time_to_first_token_s;
    run.prefill_tok_s = s.time_to_first_token_s > 0 ? prompts[k].size() / s.time_to_first_token_s : 0.0;
    run.decode_tok_s = s.decode_tokens_per_s;
    run.total_s = s.total_time_s;
    run.num_generated = s.num_generated_tokens;
    run.num_cached_prompt_tokens = s.num_cached_prompt_tokens;
    run.num_draft_tokens = s.num_draft_tokens;
    run.num_accepted_tokens = s.num_accepted_tokens;
    run.num_preemptions = s.num_preemptions;
    batch.requests.push_back(run);
  }
  return batch;
}

// The median, or null where nothing was measured (a 0 would read as a
// measured speed of 0: decode with --gen-tokens 1, graph steps on the CPU).
nlohmann::ordered_json median_or_null(const std::vector<double>& v) {
  return v.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(median(v));
}

// The value below which `fraction` of v lies (nearest rank); 0 when empty.
double percentile(std::vector<double> v, double fraction) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// Where the measured runs' steps spent their time: the backend's forward
// pass, the engine's sampling and publishing, and the rest (scheduling, KV
// bookkeeping), as shares of the summed step time, with the median step.
nlohmann::ordered_json step_breakdown_json(const std::vector<StepStats>& steps) {
  double total = 0.0, forward = 0.0, sample = 0.0, device = 0.0;
  int64_t drawn = 0, graphed = 0;
  std::vector<double> step_s, graphed_step_s, device_idle_s;
  for (const StepStats& s : steps) {
    total += s.step_time_s;
    forward += s.forward_time_s;
    sample += s.sample_time_s;
    device += s.device_time_s;
    device_idle_s.push_back(std::max(0.0, s.step_time_s - s.device_time_s));
    drawn += s.num_backend_draws;
    graphed += s.graph_replayed;
    step_s.push_back(s.step_time_s);
    if (s.graph_replayed) graphed_step_s.push_back(s.step_time_s);
  }
  auto share = [&](double part) { return total > 0.0 ? part / total : 0.0; };
  nlohmann::ordered_json j = {{"count", steps.size()},
                              {"step_s_median", median(step_s)},
                              {"forward_share", share(forward)},
                              {"sample_share", share(sample)},
                              {"other_share", share(total - forward - sample)},
                              // Tokens the backend drew itself (gpu_sampling) instead of the engine's sampler.
                              {"backend_draws", drawn},
                              // Steps replayed as a CUDA graph (gpu_graphs), and their median.
                              {"graph_steps", graphed},
                              {"graph_step_s_median", median_or_null(graphed_step_s)}};
  if (device > 0.0) {
    // A GPU's own time (first kernel to last copy back) as a share of the
    // steps, and the median step's rest: the time the device sat with nothing
    // queued, the most that overlapping host work with the device could hide.
    j["device_share"] = share(device);
    j["device_idle_s_median"] = median(device_idle_s);
  }
  return j;
}

nlohmann::ordered_json request_json(const std::vector<int32_t>& prompt, const BenchRun& run) {
  return {{"first_prompt_token", prompt.front()},
          {"cached_prompt_tokens", run.num_cached_prompt_tokens},
          {"time_to_first_token_s", run.time_to_first_token_s},
          {"prefill_tok_s", run.prefill_tok_s},
          {"decode_tok_s", run.decode_tok_s},
          {"total_s", run.total_s},
          {"generated_tokens", run.num_generated},
          {"draft_tokens", run.num_draft_tokens},
          {"accepted_draft_tokens", run.num_accepted_tokens},
          {"preemptions", run.num_preemptions}};
}


int run_bench(const BenchOptions& o) {
  const std::string started_at = utc_now();
  // Before the runs, not after minutes of them: a path that cannot be written.
  if (!o.out.empty()) {
    if (Status s = check_output_file(o.out, model_files_given(o.engine)); !s.ok()) {
      print_error(fmt::format("--out: {}", s.error()));
      return kExitUsage;
    }
  }
  int rc = kExitOk;
  std::unique_ptr<Engine> engine = open_engine(o.engine, rc);
  if (!engine) return rc;
  // A reply cut short by a full context would time fewer tokens than the
  // header and the JSON name (a shift instead goes on past it).
  const int32_t context = engine->model_info().max_model_len;
  if (engine->config().context_overflow != ContextOverflow::Shift &&
      int64_t{o.prompt_tokens} + o.gen_tokens > context) {
    print_error(fmt::format("--prompt-tokens {} + --gen-tokens {} do not fit the context of {} tokens (--ctx, or "
                            "the model's): lower one of them",
                            o.prompt_tokens, o.gen_tokens, context));
    return kExitUsage;
  }
  const size_t width = static_cast<size_t>(o.concurrency);
  auto prompts = make_prompts(*engine, o.repeats + 1, o.concurrency);  // run 0 is the warm-up
  if (!prompts.ok()) {
    print_error(prompts.error());
    return kExitRuntime;
  }
  auto run_prompts = [&](size_t run) {
    std::vector<std::vector<int32_t>> batch;
    for (size_t k = 0; k < width; ++k) batch.push_back(prompts->prompt(run * width + k, o.prompt_tokens));
    return batch;
  };
  const CpuDescription cpu = describe_cpu();
  const std::optional<std::vector<double>> loadavg_before = load_average();
  fmt::print(stderr, "bench: {} prompt tokens, {} generated, {} sequence(s) at once, {} threads on {}; warm-up...\n",
             o.prompt_tokens, o.gen_tokens, o.concurrency, engine->config().num_threads, cpu_summary(cpu));
  auto warm = run_batch(*engine, run_prompts(0), o.gen_tokens);
  if (!warm.ok()) {
    print_error(warm.error());
    return kExitRuntime;
  }
  // Whatever else cut the warm-up short (a shift with nothing to drop, or
  // with paging off, stops as a full context does) would cut the measured
  // runs too: refuse rather than time fewer tokens than the record names.
  for (const BenchRun& run : warm->requests) {
    if (run.num_generated < o.gen_tokens) {
      print_error(fmt::format("the warm-up run generated {} of --gen-tokens {}: its context of {} tokens filled "
                              "(see the warnings above); lower --prompt-tokens or --gen-tokens",
                              run.num_generated, o.gen_tokens, context));
      return kExitUsage;
    }
  }
  std::vector<BenchRun> requests;  // every measured request, all runs
  std::vector<StepStats> steps;    // every step of the measured runs
  std::vector<double> run_tok_s;   // aggregate generated tok/s of each run
  // Each run's prompt tokens over the time until its last first token: with
  // several sequences at once, the machine's prefill rate (a request's own
  // figure counts the others' prefill in its time to first token).
  std::vector<double> run_prefill_tok_s;
  int64_t num_preemptions = 0;
  nlohmann::ordered_json runs_json = nlohmann::ordered_json::array();
  int64_t num_cached_prompt_tokens = 0;
  for (int32_t r = 0; r < o.repeats; ++r) {
    const std::vector<std::vector<int32_t>> batch_prompts = run_prompts(static_cast<size_t>(r) + 1);
    auto batch = run_batch(*engine, batch_prompts, o.gen_tokens);
    if (!batch.ok()) {
      print_error(batch.error());
      return kExitRuntime;
    }
    steps.insert(steps.end(), batch->steps.begin(), batch->steps.end());
    int64_t generated = 0;
    int64_t prompt_tokens = 0;
    int64_t drafted = 0, accepted = 0, preempted = 0;
    double last_first_token_s = 0.0;
    nlohmann::ordered_json requests_json = nlohmann::ordered_json::array();
    for (size_t k = 0; k < width; ++k) {
      const BenchRun& run = batch->requests[k];
      generated += run.num_generated;
      prompt_tokens += static_cast<int64_t>(batch_prompts[k].size());
      drafted += run.num_draft_tokens;
      accepted += run.num_accepted_tokens;
      preempted += run.num_preemptions;
      last_first_token_s = std::max(last_first_token_s, run.time_to_first_token_s);
      num_preemptions += run.num_preemptions;
      num_cached_prompt_tokens += run.num_cached_prompt_tokens;
      requests_json.push_back(request_json(batch_prompts[k], run));
      requests.push_back(run);
    }
    const double tok_s = batch->wall_s > 0 ? static_cast<double>(generated) / batch->wall_s : 0.0;
    run_tok_s.push_back(tok_s);
    if (last_first_token_s > 0) run_prefill_tok_s.push_back(static_cast<double>(prompt_tokens) / last_first_token_s);
    if (width == 1) {
      // One sequence: the run is the request (the record's shape before --concurrency).
      fmt::print(stderr, "run {}/{}: prefill {:.1f} tok/s, decode {:.1f} tok/s\n", r + 1, o.repeats,
                 batch->requests[0].prefill_tok_s, batch->requests[0].decode_tok_s);
      runs_json.push_back(requests_json[0]);
    } else {
      fmt::print(stderr, "run {}/{}: {} sequences, {:.1f} generated tok/s in all, {:.2f} s\n", r + 1, o.repeats,
                 o.concurrency, tok_s, batch->wall_s);
      runs_json.push_back({{"wall_s", batch->wall_s},
                           {"generated_tokens", generated},
                           {"tokens_per_s", tok_s},
                           {"prefill_tok_s_in_all", last_first_token_s > 0 ? static_cast<double>(prompt_tokens) /
                                                                                 last_first_token_s
                                                                           : 0.0},
                           // The run's sums of its requests' figures (docs/speculative.md).
                           {"draft_tokens", drafted},
                           {"accepted_draft_tokens", accepted},
                           {"preemptions", preempted},
                           {"requests", requests_json}});
    }
  }
  if (num_cached_prompt_tokens != 0) {
    // Distinct first tokens make a prefix hit impossible; one means the
    // prompts or the cache's hashing changed, and the prefill figure is void.
    print_error(fmt::format("{} prompt tokens of the measured runs came from the prefix cache, so the prefill figure "
                            "would not measure prefill; no result written",
                            num_cached_prompt_tokens));
    return kExitRuntime;
  }
  std::vector<double> prefill, decode, ttft;
  for (const BenchRun& r : requests) {
    prefill.push_back(r.prefill_tok_s);
    if (r.num_generated > 1) decode.push_back(r.decode_tok_s);  // one token has no decode to time
    ttft.push_back(r.time_to_first_token_s);
  }
  const ModelInfo& info = engine->model_info();
  // A bandwidth probe: decode reads every weight once per token, so the read
  // bandwidth over the weights' size estimates a ceiling on decode tok/s.
  // Measured over a model-sized buffer and a 1 GiB one; on some CPUs the
  // model stays in cache between tokens and decode beats the estimate, which
  // is then no bound (the record says "estimate").
  const double cache_gbs = measure_read_bandwidth(info.weight_bytes, engine->config().num_threads, 5);
  const double dram_gbs = measure_read_bandwidth(size_t{1} << 30, engine->config().num_threads, 3);
  const double weight_gb = static_cast<double>(info.weight_bytes) / 1e9;
  const auto loadavg_after = load_average();
  const bool on_gpu = info.backend == "cuda";
  const nlohmann::ordered_json result = {
      {"engine", "kvscope"},
      {"version", KVSCOPE_VERSION},
      {"started_at", started_at},
      {"model", info.name},
      {"model_path", info.path},
      {"cpu", cpu_json(cpu, engine->config().num_threads)},
      {"threads", engine->config().num_threads},
      // What ran the model (on a GPU the cpu entry is only the host).
      {"backend", info.backend},
      {"device", info.device_name},
      // The GPU settings as given (scripts/bench_gpu.py checks they reach the
      // record, on the CPU too); in effect only where a GPU ran the model.
      {"gpu_settings_in_effect", on_gpu},
      {"gpu_sampling", engine->config().gpu_sampling},
      {"gpu_graphs", engine->config().gpu_graphs},
      {"gpu_overlap_launches", engine->config().gpu_overlap_launches},
      {"gpu_attention_timing", engine->config().gpu_attention_timing},
      {"gpu_norm_fusion", setting_text(engine->config(), "gpu_norm_fusion")},
      // The matmuls' math: the two give different bits and speeds (docs/cuda.md).
      {"gpu_matmul", setting_text(engine->config(), "gpu_matmul")},
      {"prompt_tokens", o.prompt_tokens},
      {"gen_tokens", o.gen_tokens},
      {"repeats", o.repeats},
      {"concurrency", o.concurrency},
      {"prefix_caching", engine->config().prefix_caching},
      {"spec", spec_method_name(engine->config().spec)},
      {"spec_k", engine->config().spec_k},
      // Tensor parallelism: ranks and how their partial sums are added (docs/tensor-parallel.md).
      {"tp", engine->config().tp},
      {"tp_reduce", setting_text(engine->config(), "tp_reduce")},
      // How prefill stays honest with the prefix cache on: see the file comment.
      {"prefill_prompts", "fresh per sequence (warm-up included): distinct first tokens, so no prefix-cache block "
                          "matches"},
      {"prefill_cached_prompt_tokens", num_cached_prompt_tokens},
      // Sequences preempted for want of KV blocks (each request's count is in
      // its run): a run that preempted measured recomputation too.
      {"num_preemptions", num_preemptions},
      // What each figure divides (the same words as `bench --help`).
      {"definitions",
       {{"prefill_tok_s", "per request: its prompt tokens over its time to first token (with several sequences at "
                          "once, that time includes the others' prefill)"},
        {"prefill_tok_s_in_all", "per run: all its prompt tokens over the time to its last first token"},
        {"decode_tok_s", "per request: its generated tokens after the first over the time from its first token to "
                         "its last"},
        {"tokens_per_s", "per run: all generated tokens over the run's wall time, submit to idle"}}},
      // Per request: with several sequences at once these share the steps, so
      // they are each request's view, and the "in all" figures are the machine's.
      {"prefill_tok_s_median", median(prefill)},
      {"prefill_tok_s_in_all_median", median_or_null(run_prefill_tok_s)},
      {"decode_tok_s_median", median_or_null(decode)},
      {"time_to_first_token_s_median", median(ttft)},
      {"time_to_first_token_s_p90", percentile(ttft, 0.9)},
      // Generated tokens of all the run's sequences over its wall time (submit to idle).
      {"tokens_per_s_median", median(run_tok_s)},
      {"steps", step_breakdown_json(steps)},
      {"runs", runs_json},
      {"loadavg_before", loadavg_before ? nlohmann::ordered_json(*loadavg_before) : nlohmann::ordered_json()},
      {"loadavg_after", loadavg_after ? nlohmann::ordered_json(*loadavg_after) : nlohmann::ordered_json()},
      {"weight_bytes", info.weight_bytes},
      {"read_bandwidth_gb_s", {{"model_sized_buffer", cache_gbs}, {"one_gib_buffer", dram_gbs}}},
      // Named a floor in records before 2026-11-27: it estimates a ceiling, and is none where the weights stay in cache.
      {"decode_ceiling_estimate_tok_s",
       {{"model_sized_buffer", cache_gbs / weight_gb}, {"one_gib_buffer", dram_gbs / weight_gb}}},
      {"block_size", info.block_size},
      // The KV pool as allocated (the settings above ask for it; this is what they made).
      {"kv_pool",
       {{"kv_cache_type", setting_text(engine->config(), "kv_cache_type")},
        {"kv_bytes_per_token", info.kv_bytes_per_token},
        {"num_blocks", info.num_kv_blocks},
        {"pool_bytes", info.kv_pool_bytes},
        {"swap_pool_bytes", info.swap_pool_bytes}}},
      // Two records differ in their numbers only where these say why (the KV
      // cache type, the pool, preemption, a draft model...).
      {"engine_settings", engine_settings_json(engine->config())},
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
  CLI::App* cmd = parent.add_subcommand(
      "bench", "Measure prefill and decode speed in-process, one or --concurrency sequences at once (JSON)");
  cmd->footer(
      "Figures, medians over --repeats runs (the record's \"definitions\" says the same):\n"
      "  prefill_tok_s          per request: its prompt tokens / its time to first token (with several\n"
      "                         sequences that time includes the others' prefill)\n"
      "  prefill_tok_s_in_all   per run: all prompt tokens / the time to the last first token\n"
      "  decode_tok_s           per request: tokens after the first / the time from the first to the last\n"
      "  tokens_per_s           per run: all generated tokens / the run's wall time\n"
      "Every run's prompts start with tokens no earlier run began with, so no prefill is a prefix-cache hit\n"
      "(a run that got one fails the command).");
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt length in tokens")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--gen-tokens", o->gen_tokens, "tokens to generate per run")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "measured runs (after one warm-up)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--concurrency", o->concurrency,
                  "sequences submitted together per run, each with its own prompt (aggregate tok/s, per-request "
                  "time to first token)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--out", o->out, "also write the JSON to this file");
  add_engine_options(*cmd, o->engine);
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace kvscope::cli
