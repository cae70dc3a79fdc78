// End to end, the default model: speculative decoding against plain decoding
// on two prompt sets, at 1 request at a time and at 16 in flight, for each
// proposer in --methods (comma-separated; default
// ngram,early_exit:15,draft): ngram, early_exit:L (the first L layers draft),
// draft (the default model as its own draft model, or --draft-model FILE),
// each with the auto-disable rule, or with "+forced" appended speculating in
// every decode step (spec_never_pause: the raw cost and acceptance).
// Input-grounded prompts ask for a reply that copies from the prompt
// (repeat, correct, reformat); open chat asks for free text. Greedy, chat
// template, EOS honoured, at most --max-tokens each; the replies are checked
// identical to plain decoding's. Runs alternate off / each method, --repeats
// times; medians are printed as JSON with the CPU's name and load average.
//
//   build/tests/engine/bench/speculative_bench --threads 2 --repeats 3
//   build/tests/engine/bench/speculative_bench --methods early_exit:8+forced,early_exit:24+forced
//
// At 1 request: decode tokens/s per request (RequestStats: tokens after the
// first / their time), mean over the prompts. At 16: all generated tokens /
// wall time from submission to idle (the 16 requests cycle through the set).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kvscope/engine.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

const std::vector<std::string> kInputGrounded = {
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog. The five boxing wizards jump quickly. "
    "Pack my box with five dozen liquor jugs.",
    "Correct the spelling mistakes in this paragraph and write it out again: The weather was beautifull today. We "
    "went to the park and had a picnic with sandwiches and lemonade. Afterwards we walked along the river and "
    "watched the boats.",
    "Here is a list of fruits: apple, banana, cherry, date, elderberry, fig, grape, honeydew. Write the list again, "
    "one fruit per line.",
    "Copy this sentence: Paris is the capital of France.",
    "Repeat this text exactly: Continuous batching lets requests join and leave a batch at every step, so short "
    "replies never wait for long ones.",
    "Rewrite this sentence in the past tense: The children play in the garden and the dog barks at the birds.",
};

const std::vector<std::string> kOpenChat = {
    "Tell me a short story about a dragon who learns to cook.",
    "What are the benefits of regular exercise?",
    "Write a poem about the sea.",
    "Explain how a rainbow forms.",
    "Give me three ideas for a birthday party.",
    "Why is the sky blue?",
};

struct RunResult {
  double tok_per_s = 0;
  int64_t generated = 0, drafted = 0, accepted = 0, pauses = 0;
  int64_t judged = 0;  // draft tokens compared with the model's (the rest were cut by the request's end)
  double step_time_s = 0, propose_time_s = 0;  // summed over steps: the proposer's share (draft passes)
  std::vector<std::vector<int32_t>> replies;
};

RunResult run(const EngineConfig& config, const std::vector<std::string>& prompts, int32_t concurrency,
           int32_t max_tokens) {
  auto engine = Engine::create(config);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.error().c_str());
    std::exit(1);
  }
  Engine& e = **engine;
  RunResult r;
  const size_t num = concurrency == 1 ? prompts.size() : static_cast<size_t>(concurrency);
  r.replies.resize(num);
  std::vector<RequestStats> stats(num);
  auto submit = [&](size_t i) {
    GenerationRequest req;
    req.messages = {{"user", prompts[i % prompts.size()]}};
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = max_tokens;
    req.on_event = [&r, &stats, i](const TokenEvent& ev) {
      if (ev.token >= 0) r.replies[i].push_back(ev.token);
      if (ev.finish != FinishReason::None) stats[i] = ev.stats;
    };
    if (!e.submit(std::move(req)).ok()) std::exit(1);
  };
  auto run_to_idle = [&] {
    while (e.has_work()) {
      e.step();
      r.step_time_s += e.last_step_stats().step_time_s;
      r.propose_time_s += e.last_step_stats().propose_time_s;
    }
  };
  const auto start = std::chrono::steady_clock::now();
  if (concurrency == 1) {
    double sum = 0;
    for (size_t i = 0; i < num; ++i) {
      submit(i);
      run_to_idle();
      sum += stats[i].decode_tokens_per_s;
    }
    r.tok_per_s = sum / static_cast<double>(num);
  } else {
    for (size_t i = 0; i < num; ++i) submit(i);
    run_to_idle();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const RequestStats& s : stats) {
    r.generated += s.num_generated_tokens;
    r.drafted += s.num_draft_tokens;
    r.accepted += s.num_accepted_tokens;
    r.pauses += s.num_spec_pauses;
  }
  if (concurrency != 1) r.tok_per_s = static_cast<double>(r.generated) / wall;
  for (int64_t n : e.snapshot()->spec.num_judged_at) r.judged += n;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// One entry of --methods: "ngram", "early_exit:L", "draft", each optionally "+forced".
struct Method {
  std::string label;
  SpecMethod spec = SpecMethod::Ngram;
  int32_t early_exit_layer = 0;
  bool forced = false;
};

std::vector<Method> parse_methods(const std::string& list) {
  std::vector<Method> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    Method m;
    m.label = item;
    if (const size_t plus = item.find("+forced"); plus != std::string::npos) {
      m.forced = true;
      item = item.substr(0, plus);
    }
    if (item == "ngram") {
      m.spec = SpecMethod::Ngram;
    } else if (item == "draft") {
      m.spec = SpecMethod::Draft;
    } else if (item.rfind("early_exit", 0) == 0) {
      m.spec = SpecMethod::EarlyExit;
      if (const size_t colon = item.find(':'); colon != std::string::npos) {
        m.early_exit_layer = std::atoi(item.c_str() + colon + 1);
      }
    } else {
      std::fprintf(stderr, "unknown method '%s'\n", item.c_str());
      std::exit(1);
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) {
  using namespace kvscope;
  int32_t threads = 2, repeats = 3, max_tokens = 128, spec_k = 4, requests = 16;
  std::string methods_arg = "ngram,early_exit:15,draft", draft_model;
  CLI::App app{"Speculative decoding end to end: each method against plain decoding (JSON on stdout)"};
  app.add_option("--methods", methods_arg, "comma-separated: ngram, early_exit:L, draft; each optionally +forced")
      ->capture_default_str();
  app.add_option("--draft-model", draft_model, "the draft model (default: the default model drafts for itself)");
  app.add_option("--threads", threads, "engine threads")->capture_default_str()->check(CLI::Range(1, 1024));
  app.add_option("--repeats", repeats, "runs of each case")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--max-tokens", max_tokens, "tokens per reply at most")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--spec-k", spec_k, "draft tokens per proposal")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--requests", requests, "requests of the concurrent case")->capture_default_str()->check(CLI::Range(1, 256));
  CLI11_PARSE(app, argc, argv);
  const std::string model = test::default_model_path();
  if (model.empty()) {
    std::fprintf(stderr, "the default model is missing: python3 scripts/fetch_model.py\n");
    return 1;
  }
  if (draft_model.empty()) draft_model = model;  // no smaller sibling: the model drafts for itself
  const std::vector<Method> methods = parse_methods(methods_arg);
  nlohmann::ordered_json out = {{"cpu", cpu_name()}, {"threads", threads}, {"max_tokens", max_tokens},
                                {"spec_k", spec_k}, {"repeats", repeats}, {"draft_model", draft_model},
                                {"load_average_start", load_average()}};
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const auto& [set_name, prompts] : {std::pair{"input_grounded", &kInputGrounded}, std::pair{"open_chat", &kOpenChat}}) {
    for (int32_t concurrency : {1, requests}) {
      std::vector<double> off_rates;
      std::vector<std::vector<double>> on_rates(methods.size());
      std::vector<RunResult> on(methods.size());
      for (int32_t r = 0; r < repeats; ++r) {
        EngineConfig c;
        c.model_path = model;
        c.num_threads = threads;
        const RunResult off = run(c, *prompts, concurrency, max_tokens);
        off_rates.push_back(off.tok_per_s);
        for (size_t m = 0; m < methods.size(); ++m) {
          EngineConfig s = c;
          s.spec = methods[m].spec;
          s.spec_k = spec_k;
          s.spec_early_exit_layer = methods[m].early_exit_layer;
          s.spec_draft_model = draft_model;
          s.spec_never_pause = methods[m].forced;
          on[m] = run(s, *prompts, concurrency, max_tokens);
          if (on[m].replies != off.replies) {
            std::fprintf(stderr, "%s at %d: replies differ with %s\n", set_name, concurrency,
                         methods[m].label.c_str());
            return 2;
          }
          on_rates[m].push_back(on[m].tok_per_s);
        }
      }
      const double a = median(off_rates);
      nlohmann::ordered_json c = {{"prompts", set_name}, {"requests", concurrency}, {"off_tok_s", a}};
      nlohmann::ordered_json per_method = nlohmann::ordered_json::array();
      for (size_t m = 0; m < methods.size(); ++m) {
        const double b = median(on_rates[m]);
        std::fprintf(stderr, "%s, %d request(s): off %.1f tok/s, %s %.1f tok/s (%.2fx); accepted %ld of %ld drafted "
                     "(%ld rejected), %ld pauses, proposer %.0f%% of step time\n",
                     set_name, concurrency, a, methods[m].label.c_str(), b, b / a,
                     static_cast<long>(on[m].accepted), static_cast<long>(on[m].drafted),
                     static_cast<long>(on[m].judged - on[m].accepted), static_cast<long>(on[m].pauses),
                     on[m].step_time_s > 0 ? 100.0 * on[m].propose_time_s / on[m].step_time_s : 0.0);
        if (methods[m].spec == SpecMethod::Ngram && !methods[m].forced) {  // the fields of the first version
          c["ngram_tok_s"] = b;
          c["speedup"] = b / a;
        }
        per_method.push_back({{"spec", spec_method_name(methods[m].spec)},
                              {"label", methods[m].label},
                              {"early_exit_layer", methods[m].early_exit_layer},
                              {"forced", methods[m].forced},
                              {"tok_s", b},
                              {"speedup", b / a},
                              {"generated_tokens", on[m].generated},
                              {"draft_tokens", on[m].drafted},
                              {"accepted_tokens", on[m].accepted},
                              {"rejected_tokens", on[m].judged - on[m].accepted},
                              {"pauses", on[m].pauses},
                              {"propose_share_of_step_time",
                               on[m].step_time_s > 0 ? on[m].propose_time_s / on[m].step_time_s : 0.0}});
      }
      c["methods"] = per_method;
      cases.push_back(c);
    }
  }
  out["cases"] = cases;
  out["load_average_end"] = load_average();
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
