// Tokenizer speed (Google Benchmark; not run by ctest):
//  - GemmaVocabLoad/*: loading Gemma 3's 262k-token SentencePiece vocabulary
//    from the model file, split into reading the GGUF metadata, read_vocab()
//    and create_tokenizer();
//  - Encode/<vocab>: encode throughput (bytes/s) on a fixed multilingual text,
//    the texts of tests/data/tokenizer_corpus.txt joined by newlines and
//    repeated to ~1 MB, without special-token parsing, for several of the
//    fetched vocabularies. scripts/dev/bench_tokenizer_vs_llamacpp.py times
//    llama.cpp on the same text.
//
//   build/tests/engine/tokenizer/tokenizer_bench --benchmark_repetitions=5
// A case whose file is missing reports an error and is skipped.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/gguf_file.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The benchmark text: the corpus texts, newline-joined, repeated to >= 1 MB.
const std::string& bench_text() {
  static const std::string text = [] {
    std::string one;
    std::istringstream in(read_all(test::test_data_dir() + "/tokenizer_corpus.txt"));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      one += nlohmann::json::parse(line).get<std::string>();
      one += '\n';
    }
    std::string all;
    while (all.size() < (1u << 20)) all += one;
    return all;
  }();
  return text;
}

void GemmaVocabLoad(benchmark::State& state) {
  const std::string path = test::gemma_model_path();
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    state.SkipWithError("Gemma 3 model missing: python3 scripts/fetch_model.py --gemma");
    return;
  }
  const int phase = static_cast<int>(state.range(0));  // 0: all, 1: GGUF only, 2: read_vocab, 3: tokenizer
  std::unique_ptr<GgufFile> file;
  VocabData vocab;
  if (phase >= 2) file = std::move(GgufFile::open(path).value());
  if (phase == 3) vocab = *read_vocab(*file);
  for (auto _ : state) {
    if (phase == 0) {
      auto f = GgufFile::open(path);
      auto v = read_vocab(**f);
      auto t = create_tokenizer(*v);
      benchmark::DoNotOptimize(t);
    } else if (phase == 1) {
      auto f = GgufFile::open(path);
      benchmark::DoNotOptimize(f);
    } else if (phase == 2) {
      auto v = read_vocab(*file);
      benchmark::DoNotOptimize(v);
    } else {
      auto t = create_tokenizer(vocab);
      benchmark::DoNotOptimize(t);
    }
  }
}
BENCHMARK(GemmaVocabLoad)->ArgName("phase")->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond);

void Encode(benchmark::State& state, const std::string& name) {
  const std::string dir = test::tokenizer_fixtures_dir();
  const std::string path = name == "gemma-3" ? test::gemma_model_path() : dir + "/ggml-vocab-" + name + ".gguf";
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    state.SkipWithError("vocabulary missing: python3 scripts/fetch_test_data.py");
    return;
  }
  auto file = GgufFile::open(path);
  auto vocab = read_vocab(**file);
  auto tok = create_tokenizer(*vocab);
  if (!tok) {
    state.SkipWithError(tok.error().c_str());
    return;
  }
  const std::string& text = bench_text();
  size_t num_tokens = 0;
  for (auto _ : state) {
    const auto ids = (*tok)->encode(text, /*parse_special=*/false);
    num_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(num_tokens);
  state.counters["text_bytes"] = static_cast<double>(text.size());
}

const bool registered = [] {
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "llama-spm", "gemma-4", "gemma-3"}) {
    benchmark::RegisterBenchmark((std::string("Encode/") + name).c_str(), Encode, std::string(name))
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace kvscope

BENCHMARK_MAIN();
