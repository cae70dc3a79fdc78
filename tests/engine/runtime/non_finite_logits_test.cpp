// A model whose logits are not finite (a damaged file: here its final norm
// holds NaN) ends each request with an error saying so, on each sampling
// path a first token takes: the backend's draws, the engine's sampler (a
// request with logits callbacks), parallel samples; and a scored prompt
// row (perplexity, echo with logprobs). (Speculative
// verification checks its rows the same way, in sample_token; a file whose
// first token is sound and whose drafts' rows are not is not made here: an
// n-gram draft is text the context already holds.) Before, the
// sampler read NaN as -inf and drew token 0 from a row of NaN (SmolLM2's
// end of text: an empty reply that said "stop"), or a random one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "kvscope/engine.h"
#include "model/gguf_file.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

// Overwrites the f32 tensor `name` of the GGUF file at `path` with NaN.
void poison_tensor(const std::string& path, const std::string& name) {
  size_t at = 0, bytes = 0;
  {
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error();
    const GgufTensorInfo* t = (*file)->find_tensor(name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, TensorType::F32);
    at = (*file)->data_offset() + t->offset;
    bytes = t->num_bytes;
  }
  const std::vector<float> nan(bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(reinterpret_cast<const char*>(nan.data()), static_cast<std::streamsize>(bytes));
  ASSERT_TRUE(f.good());
}

struct Outcome {
  int32_t num_tokens = 0;
  int32_t num_errors = 0;
  int32_t num_finished = 0;
  std::string error;
};

Outcome run(const std::string& model, SpecMethod spec, int32_t n, bool with_logits_callback,
            bool score_prompt = false) {
  EngineConfig c;
  c.model_path = model;
  c.num_threads = 2;
  c.spec = spec;
  c.spec_never_pause = true;
  auto created = Engine::create(c);
  EXPECT_TRUE(created.ok()) << (created.ok() ? "" : created.error());
  if (!created.ok()) return {};
  Engine& engine = **created;
  Outcome o;
  GenerationRequest r;
  r.prompt_tokens = {5, 6, 7, 5, 6, 7, 5, 6};  // repeats: the n-gram proposer drafts
  r.n = n;
  r.sampling.temperature = n > 1 ? 0.8f : 0.0f;
  r.sampling.seed = 3;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 8;
  r.on_event = [&o](const TokenEvent& e) {
    if (e.token >= 0) ++o.num_tokens;
    if (e.finish == FinishReason::None) return;
    ++o.num_finished;
    if (e.finish == FinishReason::Error) {
      ++o.num_errors;
      o.error = e.error;
    }
  };
  if (with_logits_callback) r.on_logits = [](int32_t, int32_t, const float*, int32_t) {};
  int32_t num_scored = 0;
  if (score_prompt) {  // as perplexity and the server's echo with logprobs ask
    r.sampling.max_tokens = 0;
    r.first_scored_position = 1;
    r.on_prompt_logits = [&num_scored](int32_t, int32_t, const float*, int32_t) { ++num_scored; };
  }
  EXPECT_TRUE(engine.submit(std::move(r)).ok());
  engine.run_until_idle();
  o.num_tokens += num_scored;  // a scored position counts as an output here
  return o;
}

TEST(NonFiniteLogits, EveryPathEndsTheRequestWithAnError) {
  const std::string path = test::tiny_model_temp_path("non_finite_logits");
  test::TinyModelSpec spec;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  const Outcome healthy = run(path, SpecMethod::Off, 1, false);
  EXPECT_EQ(healthy.num_tokens, 8);
  EXPECT_EQ(healthy.num_errors, 0);
  poison_tensor(path, "output_norm.weight");
  struct Case {
    const char* what;
    SpecMethod spec;
    int32_t n;
    bool logits_callback;
  };
  for (const Case& c : {Case{"the backend's draw", SpecMethod::Off, 1, false},
                        Case{"the engine's sampler", SpecMethod::Off, 1, true},
                        Case{"parallel samples", SpecMethod::Off, 3, false},
                        Case{"spec on, before any draft", SpecMethod::Ngram, 1, false}}) {
    const Outcome o = run(path, c.spec, c.n, c.logits_callback);
    EXPECT_EQ(o.num_tokens, 0) << c.what;
    EXPECT_EQ(o.num_finished, c.n) << c.what;
    EXPECT_EQ(o.num_errors, c.n) << c.what;
    EXPECT_NE(o.error.find("not finite"), std::string::npos) << c.what << ": " << o.error;
  }
  // Prompt scoring (perplexity printed "nan" and exited 0): no position is
  // handed on, the request ends with the error.
  const Outcome scored = run(path, SpecMethod::Off, 1, false, /*score_prompt=*/true);
  EXPECT_EQ(scored.num_tokens, 0);
  EXPECT_EQ(scored.num_errors, 1);
  EXPECT_NE(scored.error.find("position 1 are not finite"), std::string::npos) << scored.error;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvscope
