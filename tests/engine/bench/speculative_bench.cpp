// End to end, the default model: speculative decoding (spec = ngram) against
// plain decoding on two prompt sets, at 1 request at a time and at 16 in
// flight. Input-grounded prompts ask for a reply that copies from the prompt
// (repeat, correct, reformat); open chat asks for free text. Greedy, chat
// template, EOS honoured, at most --max-tokens each; the replies are checked
// identical between the two modes. Runs alternate off / ngram, --repeats
// times; medians are printed as JSON with the CPU's name.
//
//   build/tests/engine/bench/speculative_bench --threads 2 --repeats 3
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
  const auto start = std::chrono::steady_clock::now();
  if (concurrency == 1) {
    double sum = 0;
    for (size_t i = 0; i < num; ++i) {
      submit(i);
      e.run_until_idle();
      sum += stats[i].decode_tokens_per_s;
    }
    r.tok_per_s = sum / static_cast<double>(num);
  } else {
    for (size_t i = 0; i < num; ++i) submit(i);
    e.run_until_idle();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const RequestStats& s : stats) {
    r.generated += s.num_generated_tokens;
    r.drafted += s.num_draft_tokens;
    r.accepted += s.num_accepted_tokens;
    r.pauses += s.num_spec_pauses;
  }
  if (concurrency != 1) r.tok_per_s = static_cast<double>(r.generated) / wall;
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

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) {
  using namespace kvscope;
  int32_t threads = 2, repeats = 3, max_tokens = 128, spec_k = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int32_t v = std::atoi(argv[i + 1]);
    if (flag == "--threads") threads = v;
    else if (flag == "--repeats") repeats = v;
    else if (flag == "--max-tokens") max_tokens = v;
    else if (flag == "--spec-k") spec_k = v;
  }
  const std::string model = test::default_model_path();
  if (model.empty()) {
    std::fprintf(stderr, "the default model is missing: python3 scripts/fetch_model.py\n");
    return 1;
  }
  nlohmann::ordered_json out = {{"cpu", cpu_name()}, {"threads", threads}, {"max_tokens", max_tokens},
                                {"spec_k", spec_k}, {"repeats", repeats}};
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const auto& [set_name, prompts] : {std::pair{"input_grounded", &kInputGrounded}, std::pair{"open_chat", &kOpenChat}}) {
    for (int32_t concurrency : {1, 16}) {
      std::vector<double> off_rates, on_rates;
      RunResult off, on;
      for (int32_t r = 0; r < repeats; ++r) {
        EngineConfig c;
        c.model_path = model;
        c.num_threads = threads;
        off = run(c, *prompts, concurrency, max_tokens);
        c.spec = SpecMethod::Ngram;
        c.spec_k = spec_k;
        on = run(c, *prompts, concurrency, max_tokens);
        if (on.replies != off.replies) {
          std::fprintf(stderr, "%s at %d: replies differ with speculation\n", set_name, concurrency);
          return 2;
        }
        off_rates.push_back(off.tok_per_s);
        on_rates.push_back(on.tok_per_s);
      }
      const double a = median(off_rates), b = median(on_rates);
      std::fprintf(stderr, "%s, %d request(s): off %.1f tok/s, ngram %.1f tok/s (%.2fx); accepted %ld of %ld drafted\n",
                   set_name, concurrency, a, b, b / a, static_cast<long>(on.accepted), static_cast<long>(on.drafted));
      cases.push_back({{"prompts", set_name},
                       {"requests", concurrency},
                       {"off_tok_s", a},
                       {"ngram_tok_s", b},
                       {"speedup", b / a},
                       {"generated_tokens", on.generated},
                       {"draft_tokens", on.drafted},
                       {"accepted_tokens", on.accepted},
                       {"pauses", on.pauses}});
    }
  }
  out["cases"] = cases;
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
