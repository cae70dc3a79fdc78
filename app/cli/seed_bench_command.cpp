// `kvscope-cli bench-seeds`: the tables of a student lab report on vLLM
// (Transformers generate vs vLLM at batch 16; vLLM with paged attention on/off
// across batch sizes; KV cache waste) plus prefix sharing, measured with this
// engine on the default model. One engine, one knob changed per row, so the
// comparison is honest: static batching + contiguous KV is the Hugging Face
// generate baseline, continuous batching + paged KV is vLLM's design.
//
//   kvscope-cli bench-seeds [--quick] [--only 2] [--threads 2] [--backend cpu|cuda|auto] [--out-dir DIR]
//
// Every workload is fixed: prompts are seeded random ordinary token ids,
// decoding is greedy with ignore_eos, and each reply ends after a fixed number
// of tokens (workload.h). Longer than ~300 lines because the four tables, their
// goals and three output formats belong together; the runs live in workload.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "common_options.h"
#include "file_args.h"
#include "kvscope/backend_choice.h"
#include "kvscope/setting_table.h"
#include "workload.h"

namespace kvscope::cli {
namespace {

using json = nlohmann::ordered_json;

struct SeedBenchOptions {
  std::string model;
  int32_t threads = 2;
  BackendKind backend = BackendKind::Cpu;  // the lab's tables are CPU runs unless asked
  bool quick = false;
  std::string out_dir;
  int32_t only = 0;  // 0: all tables
};

// Workload sizes. Full: the seed's settings, sized for a small CPU model.
// Quick: the same shapes, small enough for a CI smoke test.
struct Scale {
  std::vector<int32_t> t1_num_requests;  // table 1 workloads
  int32_t t1_batch = 16, t1_prompt = 64, t1_max_tokens = 128, t1_min_reply = 32;
  std::vector<int32_t> t2_batch_sizes;
  int32_t t2_prompt = 64, t2_reply = 128;
  int32_t t2_max_len = 2048;          // max model length; contiguous reserves all of it
  int32_t t2_num_reservations = 16;   // the KV budget, in full-length reservations
  int32_t t4_num_requests = 32, t4_system = 1000, t4_question = 20, t4_reply = 32;
};

Scale full_scale() {
  Scale s;
  s.t1_num_requests = {16, 64};
  s.t2_batch_sizes = {1, 4, 8, 32, 64};
  return s;
}

Scale quick_scale() {
  Scale s;
  s.t1_num_requests = {8};
  s.t1_batch = 4, s.t1_prompt = 16, s.t1_max_tokens = 16, s.t1_min_reply = 4;
  s.t2_batch_sizes = {1, 4};
  s.t2_prompt = 32, s.t2_reply = 16, s.t2_max_len = 256, s.t2_num_reservations = 2;
  s.t4_num_requests = 4, s.t4_system = 200, s.t4_question = 10, s.t4_reply = 4;
  return s;
}

// One row of one table: an engine configuration and a workload.
struct RunSpec {
  int32_t table = 0;
  std::string label;  // the row's name in the table
  std::string mode;   // short id: "paged16", "contiguous", ...
  EngineConfig config;
  std::vector<WorkloadRequest> requests;
  std::optional<WorkloadRequest> warm_request;  // run (and reported) before the timed workload
  json workload;      // how the requests were made, for the JSON
};

struct RunRecord {
  RunSpec spec;
  double load_s = 0;
  std::optional<RunMetrics> warm;
  RunMetrics metrics;
};

// What the specs need to know about the model before any engine exists.
struct ModelFacts {
  std::string path;
  int32_t vocab_size = 0;
  int64_t kv_bytes_per_token = 0;
};

constexpr uint64_t kSeed = 2023'0683;  // every prompt and length derives from it

EngineConfig base_config(const ModelFacts& f, int32_t threads, BackendKind backend) {
  EngineConfig c;
  c.model_path = f.path;
  c.num_threads = threads;
  c.backend = backend;
  return c;
}

std::vector<RunSpec> table1_specs(const Scale& s, const ModelFacts& f, const EngineConfig& base) {
  std::vector<RunSpec> specs;
  const TokenRange range = ordinary_token_range(f.vocab_size);
  for (int32_t n : s.t1_num_requests) {
    std::vector<WorkloadRequest> reqs;
    const std::vector<int32_t> replies = seeded_lengths(kSeed + 1, n, s.t1_min_reply, s.t1_max_tokens);
    for (int32_t i = 0; i < n; ++i) {
      reqs.push_back({seeded_ids(kSeed + 100 + static_cast<uint64_t>(i), s.t1_prompt, range.lo, range.hi),
                      s.t1_max_tokens, replies[static_cast<size_t>(i)], ""});
    }
    const json workload = {{"num_requests", n}, {"prompt_tokens", s.t1_prompt}, {"max_tokens", s.t1_max_tokens},
                           {"reply_tokens", replies}, {"batch_size", s.t1_batch}};
    for (bool vllm : {false, true}) {
      RunSpec r;
      r.table = 1;
      r.label = vllm ? "vLLM-like: continuous batching, paged KV" : "Transformers-like: static batching, contiguous KV";
      r.mode = vllm ? "continuous+paged" : "static+contiguous";
      r.config = base;
      r.config.max_seqs = s.t1_batch;
      r.config.paged = vllm;
      r.config.prefix_caching = vllm;  // distinct prompts: no hits either way
      r.config.policy = vllm ? SchedulingPolicy::Continuous : SchedulingPolicy::Static;
      // Memory is not the limit here, the batch is: room for 4 batches at full length.
      r.config.kv_budget_bytes = 4ll * s.t1_batch * (s.t1_prompt + s.t1_max_tokens) * f.kv_bytes_per_token;
      r.requests = reqs;
      r.workload = workload;
      specs.push_back(std::move(r));
    }
  }
  return specs;
}

std::vector<RunSpec> table2_specs(const Scale& s, const ModelFacts& f, const EngineConfig& base) {
  std::vector<RunSpec> specs;
  const TokenRange range = ordinary_token_range(f.vocab_size);
  // The same budget for every mode: room for t2_num_reservations sequences of
  // the full max length, i.e. that many one-block sequences at block = max length.
  const int64_t budget = int64_t{s.t2_num_reservations} * s.t2_max_len * f.kv_bytes_per_token;
  const int32_t max_tokens = s.t2_max_len - s.t2_prompt;  // declared: reservations span the context
  struct Mode {
    const char* label;
    const char* id;
    bool paged;
    int32_t block_size;
  };
  const Mode modes[] = {{"ON (block 16)", "paged16", true, 16},
                        {"OFF (contiguous)", "contiguous", false, 16},
                        {"OFF (block {})", "paged_bigblock", true, s.t2_max_len}};
  for (int32_t n : s.t2_batch_sizes) {
    std::vector<WorkloadRequest> reqs;
    for (int32_t i = 0; i < n; ++i) {
      reqs.push_back({seeded_ids(kSeed + 200 + static_cast<uint64_t>(i), s.t2_prompt, range.lo, range.hi),
                      max_tokens, s.t2_reply, ""});
    }
    const json workload = {{"num_requests", n}, {"prompt_tokens", s.t2_prompt}, {"max_tokens", max_tokens},
                           {"reply_tokens", s.t2_reply}, {"kv_budget_full_reservations", s.t2_num_reservations}};
    for (const Mode& m : modes) {
      RunSpec r;
      r.table = 2;
      r.label = fmt::format(fmt::runtime(m.label), m.block_size);
      r.mode = m.id;
      r.config = base;
      r.config.paged = m.paged;
      r.config.block_size = m.block_size;
      r.config.prefix_caching = false;  // only the allocation differs between rows
      r.config.max_seqs = std::max(64, n);
      r.config.max_model_len = s.t2_max_len;
      r.config.kv_budget_bytes = budget;
      r.requests = reqs;
      r.workload = workload;
      specs.push_back(std::move(r));
    }
  }
  return specs;
}

std::vector<RunSpec> table4_specs(const Scale& s, const ModelFacts& f, const EngineConfig& base) {
  std::vector<RunSpec> specs;
  const TokenRange range = ordinary_token_range(f.vocab_size);
  const std::vector<int32_t> system = seeded_ids(kSeed + 300, s.t4_system, range.lo, range.hi);
  auto request = [&](uint64_t seed) {
    WorkloadRequest r{system, s.t4_reply, s.t4_reply, ""};
    const std::vector<int32_t> q = seeded_ids(seed, s.t4_question, range.lo, range.hi);
    r.prompt.insert(r.prompt.end(), q.begin(), q.end());
    return r;
  };
  std::vector<WorkloadRequest> reqs;
  for (int32_t i = 0; i < s.t4_num_requests; ++i) reqs.push_back(request(kSeed + 400 + static_cast<uint64_t>(i)));
  const int32_t len = s.t4_system + s.t4_question + s.t4_reply;
  for (bool cache : {false, true}) {
    RunSpec r;
    r.table = 4;
    r.label = cache ? "prefix cache ON" : "prefix cache OFF";
    r.mode = cache ? "prefix_cache_on" : "prefix_cache_off";
    r.config = base;
    r.config.prefix_caching = cache;
    r.config.max_model_len = std::max(2048, len);
    // Everything fits unshared, so only the computation differs.
    r.config.kv_budget_bytes = int64_t{s.t4_num_requests + 1} * (len + 16) * f.kv_bytes_per_token * 5 / 4;
    r.requests = reqs;
    // Both rows run one request with the system prompt first; with the cache
    // on it leaves the prompt's blocks findable, as a server's first user does.
    r.warm_request = request(kSeed + 399);
    r.workload = {{"num_requests", s.t4_num_requests}, {"system_prompt_tokens", s.t4_system},
                  {"question_tokens", s.t4_question}, {"reply_tokens", s.t4_reply},
                  {"warm_request", "one request with the same system prompt runs to completion first"}};
    specs.push_back(std::move(r));
  }
  return specs;
}

Result<RunRecord> run_spec(const RunSpec& spec) {
  RunRecord rec;
  rec.spec = spec;
  const auto t0 = std::chrono::steady_clock::now();
  auto engine = Engine::create(spec.config);
  if (!engine.ok()) return Error{fmt::format("{} ({}): {}", spec.label, spec.mode, engine.error())};
  rec.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Engine& e = **engine;
  rec.spec.config.max_model_len = e.config().max_model_len;  // 0 ("the model's") made explicit
  if (Status s = warm_up(e, e.model_info().vocab_size); !s.ok()) return Error{s.error()};
  if (spec.warm_request) {
    auto w = run_workload(e, {*spec.warm_request});
    if (!w.ok()) return Error{w.error()};
    rec.warm = *w;
  }
  auto m = run_workload(e, spec.requests);
  if (!m.ok()) return Error{fmt::format("{} ({}): {}", spec.label, spec.mode, m.error())};
  rec.metrics = *m;
  return rec;
}

// ---- Reporting -----------------------------------------------------------------

json load_average_json() {
  const auto load = load_average();
  return load ? json(*load) : json(nullptr);
}

json config_json(const EngineConfig& c) {
  return {{"block_size", c.block_size}, {"paged", c.paged}, {"policy", scheduling_policy_name(c.policy)},
          {"prefix_caching", c.prefix_caching}, {"kv_budget_bytes", c.kv_budget_bytes},
          {"max_seqs", c.max_seqs}, {"max_batched_tokens", c.max_batched_tokens},
          {"max_model_len", c.max_model_len}, {"preemption", preemption_mode_name(c.preemption)},
          {"threads", c.num_threads}, {"backend", backend_kind_name(c.backend)}};
}

std::string md_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  for (const std::string& h : header) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += i == 0 ? "---|" : "--:|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const std::string& cell : row) out += " " + cell + " |";
    out += "\n";
  }
  return out;
}

std::string f2(double v) { return fmt::format("{:.2f}", v); }
std::string f1(double v) { return fmt::format("{:.1f}", v); }

std::string render_tables(const std::vector<RunRecord>& runs, int32_t only, int32_t num_reservations) {
  std::string md;
  auto of = [&](int32_t t) {
    std::vector<const RunRecord*> v;
    for (const RunRecord& r : runs) if (r.spec.table == t) v.push_back(&r);
    return v;
  };
  if (auto t1 = of(1); !t1.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const RunRecord* r : t1) {
      const RunMetrics& m = r->metrics;
      rows.push_back({r->spec.label, std::to_string(m.num_requests), std::to_string(r->spec.config.max_seqs),
                      f2(m.wall_s), f1(m.throughput_tok_s), std::to_string(m.max_running), f1(m.mean_running),
                      f2(m.mean_ttft_s)});
    }
    md += "\n### Table 1: Transformers vs vLLM (static + contiguous vs continuous + paged)\n\n";
    md += md_table({"Type", "Requests", "Batch size", "Latency (s)", "Throughput (tok/s)", "Max batch",
                    "Mean batch", "Mean TTFT (s)"}, rows);
  }
  const auto t2 = of(2);
  if (!t2.empty() && (only == 0 || only == 2)) {
    std::vector<std::vector<std::string>> rows;
    for (const RunRecord* r : t2) {
      const RunMetrics& m = r->metrics;
      rows.push_back({r->spec.label, std::to_string(m.num_requests), f2(m.wall_s), f1(m.throughput_tok_s),
                      f1(m.decode_tok_s), std::to_string(m.max_running), std::to_string(m.num_preemptions)});
    }
    md += fmt::format("\n### Table 2: paged attention ON/OFF by batch size (same KV budget: {} full-length "
                      "reservations)\n\n", num_reservations);
    md += md_table({"Paged attention", "Batch size", "Latency (s)", "Throughput (tok/s)", "Decode (tok/s)",
                    "Admitted at once", "Preemptions"}, rows);
  }
  if (!t2.empty()) {  // derived from table 2's runs: shown with table 2 or alone (--only 3)
    std::vector<std::vector<std::string>> rows;
    for (const char* mode : {"paged16", "contiguous", "paged_bigblock"}) {
      for (const RunRecord* r : t2) {
        if (r->spec.mode != mode) continue;
        const RunMetrics& m = r->metrics;
        rows.push_back({r->spec.label, std::to_string(m.num_requests),
                        fmt::format("{} x {}", m.num_blocks, r->spec.config.block_size),
                        std::to_string(m.max_running), f1(m.mean_waste_percent), f1(m.peak_waste_percent),
                        fmt::format("{} / {}", m.peak_written_slots, m.peak_reserved_slots)});
      }
    }
    md += "\n### Table 3: KV waste and sequences admitted at once\n\n";
    md += md_table({"Mode", "Batch size", "KV blocks x size", "Admitted at once", "KV waste mean (%)",
                    "KV waste at peak (%)", "Written / reserved slots at peak"}, rows);
  }
  if (auto t4 = of(4); !t4.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const RunRecord* r : t4) {
      const RunMetrics& m = r->metrics;
      rows.push_back({r->spec.label, std::to_string(m.num_requests), f2(m.mean_ttft_s), f2(m.median_ttft_s),
                      f1(m.throughput_tok_s), f2(m.wall_s),
                      fmt::format("{} / {}", m.num_cached_prompt_tokens, m.num_prompt_tokens)});
    }
    md += "\n### Table 4: prefix sharing (one warm request with the system prompt ran first in both rows)\n\n";
    md += md_table({"Prefix cache", "Requests", "Mean TTFT (s)", "Median TTFT (s)", "Throughput (tok/s)",
                    "Latency (s)", "Prompt tokens from cache"}, rows);
  }
  return md;
}

// The goals. A goal whose runs did not happen (--only, --quick) is
// measured at the nearest batch size that ran, and says so, but not judged
// ("passed" null): 4 requests say little of a goal set at 64.
json evaluate_goals(const std::vector<RunRecord>& runs) {
  auto find = [&](int32_t table, const std::string& mode, int32_t n) -> const RunRecord* {
    for (const RunRecord& r : runs) {
      if (r.spec.table == table && r.spec.mode == mode && r.metrics.num_requests == n) return &r;
    }
    return nullptr;
  };
  auto largest = [&](int32_t table, const std::string& mode, int32_t want) {
    int32_t best = 0;
    for (const RunRecord& r : runs) {
      if (r.spec.table == table && r.spec.mode == mode && r.metrics.num_requests <= want) {
        best = std::max(best, r.metrics.num_requests);
      }
    }
    return best;
  };
  json goals = json::array();
  auto add = [&](const std::string& name, std::optional<double> value, double target, bool higher_better,
                 const std::string& detail, bool at_the_goals_size = true) {
    json g = {{"goal", name}, {"target", target}, {"value", nullptr}, {"passed", nullptr}, {"detail", detail}};
    if (value) {
      g["value"] = *value;
      if (at_the_goals_size) g["passed"] = higher_better ? *value >= target : *value < target;
    }
    goals.push_back(g);
  };
  {
    const int32_t n = largest(2, "paged16", 32);
    const RunRecord *one = find(2, "paged16", 1), *many = find(2, "paged16", n);
    std::optional<double> v;
    if (one && many && n > 1 && one->metrics.decode_tok_s > 0) v = many->metrics.decode_tok_s / one->metrics.decode_tok_s;
    add("aggregate decode throughput at 32 requests >= 4x one request", v, 4.0, true,
        v ? fmt::format("decode tok/s at {} requests / at 1 (paged, block 16){}", n, n == 32 ? "" : "; 32 did not run")
          : "needs table 2 at 1 and 32 requests",
        n == 32);
  }
  {
    const int32_t n = largest(2, "paged16", 64);
    const RunRecord *paged = find(2, "paged16", n), *contig = find(2, "contiguous", n), *big = find(2, "paged_bigblock", n);
    std::optional<double> v;
    std::string detail = "needs table 2 at 64 requests";
    if (paged && contig && contig->metrics.throughput_tok_s > 0) {
      v = paged->metrics.throughput_tok_s / contig->metrics.throughput_tok_s;
      detail = fmt::format("throughput paged block 16 / contiguous at {} requests{}", n, n == 64 ? "" : "; 64 did not run");
      if (big && big->metrics.throughput_tok_s > 0) {
        detail += fmt::format("; vs block {}: {:.2f}x", big->spec.config.block_size,
                              paged->metrics.throughput_tok_s / big->metrics.throughput_tok_s);
      }
    }
    add("paged >= 3x contiguous throughput at 64 requests under the same KV budget", v, 3.0, true, detail, n == 64);
  }
  {
    const int32_t n = largest(2, "paged16", 64);
    const RunRecord* paged = find(2, "paged16", n);
    std::optional<double> v;
    if (paged) v = paged->metrics.mean_waste_percent;
    std::string detail = paged ? fmt::format("mean over steps, paged block 16 at {} requests (peak: {:.2f}%)", n,
                                             paged->metrics.peak_waste_percent)
                               : "needs table 2";
    // Waste is about half a block per sequence, so it depends on the length:
    // show the long-prompt runs of table 4 (block 16 too) beside it.
    for (const RunRecord& r : runs) {
      if (r.spec.table == 4 && r.spec.config.block_size == 16) {
        detail += fmt::format("; {} ({} prompt tokens each): {:.2f}%", r.spec.label,
                              r.metrics.num_prompt_tokens / std::max(1, r.metrics.num_requests),
                              r.metrics.mean_waste_percent);
      }
    }
    add("KV waste < 2% at block 16", v, 2.0, false, detail, n == 64);
  }
  {
    const RunRecord *off = nullptr, *on = nullptr;
    for (const RunRecord& r : runs) {
      if (r.spec.mode == "prefix_cache_off") off = &r;
      if (r.spec.mode == "prefix_cache_on") on = &r;
    }
    std::optional<double> v;
    if (off && on && on->metrics.mean_ttft_s > 0) v = off->metrics.mean_ttft_s / on->metrics.mean_ttft_s;
    add("cached-prefix time to first token >= 10x lower", v, 10.0, true,
        v ? "mean TTFT cache off / cache on" : "needs table 4");
  }
  return goals;
}

std::string render_goals(const json& goals) {
  std::string out = "\n### Goals\n\n";
  for (const json& g : goals) {
    const std::string mark = g["passed"].is_null() ? "–" : g["passed"].get<bool>() ? "✓" : "✗";
    const std::string value = g["value"].is_null() ? "not measured" : fmt::format("{:.2f}", g["value"].get<double>());
    out += fmt::format("- {} {}: {} ({})\n", mark, g["goal"].get<std::string>(), value, g["detail"].get<std::string>());
  }
  return out;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string render_csv(const std::vector<RunRecord>& runs) {
  std::string out =
      "table,label,mode,num_requests,max_seqs,block_size,paged,policy,prefix_caching,kv_budget_bytes,num_blocks,"
      "max_model_len,num_prompt_tokens,num_generated_tokens,latency_s,cpu_s,throughput_tok_s,decode_tok_s,mean_ttft_s,"
      "max_running,mean_running,mean_waste_percent,peak_waste_percent,num_preemptions,num_cached_prompt_tokens\n";
  for (const RunRecord& r : runs) {
    const EngineConfig& c = r.spec.config;
    const RunMetrics& m = r.metrics;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.3f},{:.2f},{:.2f},{:.4f},{},{:.2f},{:.3f},{:.3f},{},{}\n",
                       r.spec.table, csv_quote(r.spec.label), r.spec.mode, m.num_requests, c.max_seqs, c.block_size,
                       c.paged, scheduling_policy_name(c.policy), c.prefix_caching, c.kv_budget_bytes, m.num_blocks,
                       c.max_model_len, m.num_prompt_tokens, m.num_generated_tokens, m.wall_s, m.cpu_s, m.throughput_tok_s,
                       m.decode_tok_s, m.mean_ttft_s, m.max_running, m.mean_running, m.mean_waste_percent,
                       m.peak_waste_percent, m.num_preemptions, m.num_cached_prompt_tokens);
  }
  return out;
}

bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) print_error(fmt::format("cannot write '{}' (is the disk full?)", path.string()));
  return static_cast<bool>(out);
}

int run_seed_bench(const SeedBenchOptions& o) {
  // Before minutes of runs, not after them: a folder that cannot be written.
  if (!o.out_dir.empty()) {
    if (Status s = prepare_output_dir(o.out_dir); !s.ok()) {
      print_error(fmt::format("--out-dir: {}", s.error()));
      return kExitUsage;
    }
  }
  const std::optional<std::string> path = resolve_model_path(o.model);
  if (!path) return kExitRuntime;
  auto summary = inspect_model_file(*path);
  if (!summary.ok()) {
    print_error(summary.error());
    return kExitRuntime;
  }
  if (!summary->config) {
    print_error(fmt::format("{}: {}", *path, summary->config_error));
    return kExitRuntime;
  }
  const ModelFacts facts{*path, summary->config->vocab_size, static_cast<int64_t>(summary->kv_bytes_per_token)};
  const Scale scale = o.quick ? quick_scale() : full_scale();
  const json load_start = load_average_json();
  const CpuDescription cpu = describe_cpu();
  const std::string started = utc_now();

  std::vector<RunSpec> specs;
  auto append = [&](std::vector<RunSpec> v) { for (RunSpec& s : v) specs.push_back(std::move(s)); };
  const EngineConfig base = base_config(facts, o.threads, o.backend);
  const Result<BackendChoice> ran_on = choose_backend(o.backend);
  if (!ran_on.ok()) {
    print_error(ran_on.error());
    return kExitRuntime;
  }
  if (o.only == 0 || o.only == 1) append(table1_specs(scale, facts, base));
  if (o.only == 0 || o.only == 2 || o.only == 3) append(table2_specs(scale, facts, base));
  if (o.only == 0 || o.only == 4) append(table4_specs(scale, facts, base));

  std::vector<RunRecord> runs;
  for (size_t i = 0; i < specs.size(); ++i) {
    const RunSpec& s = specs[i];
    fmt::print(stderr, "bench-seeds [{}/{}] table {}: {}, {} requests ... ", i + 1, specs.size(), s.table, s.label,
               s.requests.size());
    std::fflush(stderr);
    auto rec = run_spec(s);
    if (!rec.ok()) {
      fmt::print(stderr, "failed\n");
      print_error(rec.error());
      return kExitRuntime;
    }
    const RunMetrics& m = rec->metrics;
    fmt::print(stderr, "{:.2f} s, {:.1f} tok/s, max batch {}, waste {:.1f}%, cpu {:.0f}%{}\n", m.wall_s,
               m.throughput_tok_s, m.max_running, m.mean_waste_percent,
               m.wall_s > 0 ? 100.0 * m.cpu_s / (m.wall_s * o.threads) : 0.0,
               m.num_errors ? fmt::format(", {} errors", m.num_errors) : "");
    runs.push_back(std::move(rec).value());
  }

  const json goals = evaluate_goals(runs);
  json runs_json = json::array();
  for (const RunRecord& r : runs) {
    json j = {{"table", r.spec.table}, {"label", r.spec.label}, {"mode", r.spec.mode},
              {"config", config_json(r.spec.config)}, {"workload", r.spec.workload}, {"engine_load_s", r.load_s},
              {"metrics", to_json(r.metrics)}};
    if (r.warm) j["warm_request"] = to_json(*r.warm);
    runs_json.push_back(j);
  }
  const json result = {
      {"command", "bench-seeds"},
      {"version", KVSCOPE_VERSION},
      {"started_at", started},
      {"quick", o.quick},
      {"only", o.only},
      {"seed", kSeed},
      {"model", {{"path", facts.path}, {"name", summary->config->name},
                 {"kv_bytes_per_token", facts.kv_bytes_per_token}, {"weight_bytes", summary->weight_bytes}}},
      {"machine", {{"cpu", cpu_json(cpu, o.threads)}, {"threads", o.threads},
                   {"backend", ran_on->reason},
                   {"load_average_start", load_start}, {"load_average_end", load_average_json()}}},
      {"runs", runs_json},
      {"goals", goals},
  };

  const std::string md = render_tables(runs, o.only, scale.t2_num_reservations) + render_goals(goals);
  // Where it ran: the CPU, or the GPU the backend choice names.
  const std::string where = ran_on->kind == BackendKind::Cuda
                                ? fmt::format("{}; host {}", ran_on->reason, cpu_summary(cpu))
                                : cpu_summary(cpu);
  // The heading names the machine: seeds.md carries it too (it had only the
  // tables, so a copied file did not say where its figures came from).
  const std::string heading = fmt::format("## kvscope bench-seeds: {} on {} ({} threads{}), {}\n", summary->config->name,
                                          where, o.threads, o.quick ? ", quick" : "", started);
  write_stdout(heading + md);
  if (!o.out_dir.empty()) {
    const std::filesystem::path dir(o.out_dir);
    // seeds.csv stays plain rows for spreadsheets; seeds.json has the machine.
    if (!write_file(dir / "seeds.json", dump_json(result) + "\n") || !write_file(dir / "seeds.csv", render_csv(runs)) ||
        !write_file(dir / "seeds.md", heading + md)) {
      return kExitRuntime;
    }
  }
  return kExitOk;
}

}  // namespace

Command add_seed_bench_command(CLI::App& parent) {
  auto o = std::make_shared<SeedBenchOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "bench-seeds", "Reproduce the seed report's tables: static vs continuous batching, paged KV on/off, "
                     "KV waste, prefix sharing");
  cmd->add_option("--model", o->model, "GGUF model file (default: " + std::string(kDefaultModelFile) + ")");
  // The range of the engine's own threads setting (0, "one per core", is not
  // offered: the lab's tables name their thread count).
  cmd->add_option("--threads", o->threads, "CPU threads")
      ->check(CLI::Range(int64_t{1}, find_setting("threads")->max))
      ->capture_default_str();
  // The engine's own backend row (setting_table.cpp): its choices and parser.
  const SettingSpec& backend = *find_setting("backend");
  cmd->add_option_function<std::string>(
         "--backend",
         [o, &backend](const std::string& v) {
           EngineConfig c;
           backend.set(c, backend.parse(v).value());  // CLI::IsMember checked the name
           o->backend = c.backend;
         },
         "what runs the model (default cpu: the lab's tables are CPU runs; cuda or auto for the GPU)")
      ->check(CLI::IsMember(backend.choices));
  cmd->add_flag("--quick", o->quick, "small workloads (CI smoke test): 16 output tokens, batch sizes 1 and 4");
  cmd->add_option("--out-dir", o->out_dir, "write seeds.json, seeds.csv and seeds.md here");
  cmd->add_option("--only", o->only, "run one table (1-4); table 3 comes from table 2's runs, shown with it")->check(CLI::Range(1, 4));
  return {cmd, [o] { return run_seed_bench(*o); }};
}

}  // namespace kvscope::cli
