// What grammar-constrained decoding (docs/json-schema.md) costs per step on
// the default model's vocabulary (SmolLM2, 49,152 tokens):
//   BM_TrieBuild         building the vocabulary trie (once per engine);
//   BM_Mask/<state>      one uncached mask (the trie walk) at a typical state:
//                        0 before the value, 1 inside a string (the worst:
//                        almost every token fits), 2 after a key's colon,
//                        3 inside a number, 4 after a value in an object;
//   BM_MaskLogitsCached  a step whose state's mask is cached (inside a string
//                        from token to token): the masked copy of the row;
//   BM_MaskAlongReply    every step of a real constrained reply (its tokens
//                        from the engine), from a cold cache: us_per_step is
//                        what the constraint adds to each decode step;
//   BM_Generate          whole greedy chat replies of 64 tokens, plain and
//                        json_schema in turn; counters ms_per_token_plain/_json.
//   build/tests/engine/bench/token_mask_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "constrain/token_constraint.h"
#include "constrain/token_trie.h"
#include "kernels/bench/cpu_context.h"
#include "kvscope/engine.h"
#include "kvscope/json_constraint.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

constexpr const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name", "age", "tags"], "additionalProperties": false})";

Engine* engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineConfig c;
    c.model_path = test::default_model_path();
    c.num_threads = 2;
    auto created = Engine::create(c);
    return created.ok() ? std::move(created).value() : nullptr;
  }();
  return e.get();
}

std::vector<std::string> vocabulary_bytes() {
  std::vector<std::string> bytes;
  Engine* e = engine();
  if (!e) return bytes;
  for (int32_t id = 0; id < e->model_info().vocab_size; ++id) bytes.push_back(e->token_bytes(id));
  return bytes;
}

const TokenTrie& trie() {
  static const TokenTrie t(vocabulary_bytes(), {});
  return t;
}

std::shared_ptr<const Grammar> schema() {
  static const std::shared_ptr<const Grammar> g = *compile_json_schema(kSchema);
  return g;
}

void BM_TrieBuild(benchmark::State& state) {
  const std::vector<std::string> bytes = vocabulary_bytes();
  if (bytes.empty()) return state.SkipWithError("default model not found (scripts/fetch_model.py)");
  for (auto _ : state) {
    TokenTrie t(bytes, {});
    benchmark::DoNotOptimize(t.num_nodes());
  }
  state.counters["vocab"] = static_cast<double>(bytes.size());
}

void BM_Mask(benchmark::State& state) {
  if (!engine()) return state.SkipWithError("default model not found (scripts/fetch_model.py)");
  const char* prefixes[] = {"", "{\"name\": \"Ali", "{\"name\": \"Ali\", \"age\":", "{\"name\": \"Ali\", \"age\": 4",
                            "{\"name\": \"Ali\", \"age\": 42, \"tags\": [\"a\"]"};
  GrammarMatcher m(schema());
  if (!m.advance(prefixes[state.range(0)])) return state.SkipWithError("prefix rejected");
  TokenMask mask;
  for (auto _ : state) {
    trie().allowed_tokens(m, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  int64_t allowed = 0;
  for (uint64_t w : mask) allowed += __builtin_popcountll(w);
  state.counters["allowed_tokens"] = static_cast<double>(allowed);
}

void BM_MaskLogitsCached(benchmark::State& state) {
  if (!engine()) return state.SkipWithError("default model not found (scripts/fetch_model.py)");
  TokenConstraint c(schema());
  if (!c.advance("{\"name\": \"Ali")) return state.SkipWithError("prefix rejected");
  std::vector<float> logits(static_cast<size_t>(trie().vocab_size()), 0.5f);
  c.mask_logits(logits.data(), trie().vocab_size(), trie());  // fills the cache
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.mask_logits(logits.data(), trie().vocab_size(), trie()));
  }
}

// Plain and constrained replies alternate within each iteration, so that
// whatever else the machine runs weighs on both alike.
void BM_Generate(benchmark::State& state) {
  Engine* e = engine();
  if (!e) return state.SkipWithError("default model not found (scripts/fetch_model.py)");
  int64_t num_tokens[2] = {0, 0};
  double seconds[2] = {0.0, 0.0};
  for (auto _ : state) {
    for (int constrained = 0; constrained < 2; ++constrained) {
      GenerationRequest r;
      r.messages = {{"user", "Describe a person as JSON with name, age and tags."}};
      r.sampling.temperature = 0.0f;
      r.sampling.max_tokens = 64;
      r.sampling.ignore_eos = constrained == 0;  // the plain reply as long as the constrained one
      if (constrained == 1) r.sampling.constraint = schema();
      int64_t& count = num_tokens[constrained];
      r.on_event = [&count](const TokenEvent& ev) { count += ev.token >= 0 ? 1 : 0; };
      const auto start = std::chrono::steady_clock::now();
      if (!e->submit(std::move(r)).ok()) return state.SkipWithError("submit failed");
      e->run_until_idle();
      seconds[constrained] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  for (int c = 0; c < 2; ++c) {
    const char* name = c == 0 ? "ms_per_token_plain" : "ms_per_token_json";
    state.counters[name] = num_tokens[c] > 0 ? 1000.0 * seconds[c] / static_cast<double>(num_tokens[c]) : 0.0;
  }
}

// The tokens of one constrained greedy reply of the default model (the
// engine's own trie: the same bytes as trie()).
const std::vector<int32_t>& constrained_reply() {
  static const std::vector<int32_t> tokens = [] {
    std::vector<int32_t> out;
    Engine* e = engine();
    if (!e) return out;
    GenerationRequest r;
    r.messages = {{"user", "Describe a person as JSON with name, age and tags."}};
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 200;
    r.sampling.constraint = schema();
    r.on_event = [&out](const TokenEvent& ev) {
      if (ev.token >= 0) out.push_back(ev.token);
    };
    if (e->submit(std::move(r)).ok()) e->run_until_idle();
    return out;
  }();
  return tokens;
}

// The mask's whole cost per step along a real reply, from a fresh
// TokenConstraint (cold cache, as a new request has): mask_logits + accept
// per token. Counter us_per_step; what a constrained step adds to a decode step.
void BM_MaskAlongReply(benchmark::State& state) {
  const std::vector<int32_t>& reply = constrained_reply();
  if (reply.empty()) return state.SkipWithError("default model not found (scripts/fetch_model.py)");
  std::vector<float> logits(static_cast<size_t>(trie().vocab_size()), 0.5f);
  double seconds = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    TokenConstraint c(schema());
    for (int32_t token : reply) {
      benchmark::DoNotOptimize(c.mask_logits(logits.data(), trie().vocab_size(), trie()));
      if (!c.accept(token, trie())) return state.SkipWithError("the reply does not fit the grammar");
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["steps"] = static_cast<double>(reply.size());
  state.counters["us_per_step"] =
      1e6 * seconds / (static_cast<double>(state.iterations()) * static_cast<double>(reply.size()));
}

BENCHMARK(BM_TrieBuild)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Mask)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskLogitsCached)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskAlongReply)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Generate)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace kvscope

int main(int argc, char** argv) { return kvscope::bench::run_benchmarks(argc, argv); }
