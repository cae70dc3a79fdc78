// Speculative decoding on the default model (label `model`): on prompts whose
// replies copy from the input, spec = ngram accepts many drafts and the
// greedy reply is bitwise the plain one (tokens, and the logits of every
// token including the end-of-generation one), alone and with 16 requests in
// flight. The reply ends with <|im_end|>, which the n-gram proposer drafts
// from the prompt's own chat markup: the end comes inside an accepted draft.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kvscope/engine.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

// The first two are copied word for word by SmolLM2-135M-Instruct (the reply
// ends with <|im_end|>, right where the copied text ends in the prompt); the
// last two are only partly copied.
const std::vector<std::string> kPrompts = {
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog.",
    "Copy this sentence: Paris is the capital of France.",
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog. The five boxing wizards jump quickly. "
    "Pack my box with five dozen liquor jugs.",
    "Repeat this code exactly:\nint add(int a, int b) {\n  return a + b;\n}\nint sub(int a, int b) {\n  return a - b;\n}",
};

struct Reply {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
  std::vector<uint64_t> logits_steps;  // the step of each on_logits call
  FinishReason finish = FinishReason::None;
  RequestStats stats;
};

struct Outcome {
  std::vector<Reply> replies;
  std::vector<EngineEvent> events;
  SpecStats spec;
};

Outcome run(SpecMethod method, int32_t copies, int32_t spec_k) {
  EngineConfig c;
  c.model_path = test::default_model_path();
  c.num_threads = 2;
  c.spec = method;
  c.spec_k = spec_k;
  auto engine = Engine::create(c);
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error());
  Outcome o;
  if (!engine.ok()) return o;
  Engine& e = **engine;
  e.set_tracing(true);
  uint64_t step = 0;
  o.replies.resize(kPrompts.size() * static_cast<size_t>(copies));
  for (size_t i = 0; i < o.replies.size(); ++i) {
    Reply& r = o.replies[i];
    GenerationRequest req;
    req.messages = {{"user", kPrompts[i % kPrompts.size()]}};
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = 96;
    req.on_logits = [&r, &step](int32_t, int32_t, const float* logits, int32_t vocab) {
      r.logits.emplace_back(logits, logits + vocab);
      r.logits_steps.push_back(step);
    };
    req.on_event = [&r](const TokenEvent& ev) {
      if (ev.token >= 0) r.tokens.push_back(ev.token);
      if (ev.finish != FinishReason::None) {
        r.finish = ev.finish;
        r.stats = ev.stats;
      }
    };
    EXPECT_TRUE(e.submit(std::move(req)).ok());
  }
  while (e.has_work()) {
    e.step();
    ++step;
  }
  o.events = e.take_events();
  o.spec = e.snapshot()->spec;
  return o;
}

TEST(SpeculativeModel, InputGroundedRepliesAreBitwiseThePlainOnes) {
  KVSCOPE_REQUIRE_DATA(!test::default_model_path().empty(), test::TestData::kDefaultModel);
  // 4 prompts alone, then 16 requests at once; then long drafts (k = 16).
  struct Case {
    int32_t copies, spec_k;
  };
  for (const Case& c : {Case{1, 4}, Case{4, 4}, Case{1, 16}}) {
    SCOPED_TRACE("requests in flight: " + std::to_string(4 * c.copies) + ", k " + std::to_string(c.spec_k));
    const Outcome plain = run(SpecMethod::Off, c.copies, c.spec_k);
    const Outcome spec = run(SpecMethod::Ngram, c.copies, c.spec_k);
    ASSERT_EQ(plain.replies.size(), spec.replies.size());
    int32_t num_ended_inside_draft = 0;
    for (size_t i = 0; i < plain.replies.size(); ++i) {
      SCOPED_TRACE("prompt " + std::to_string(i % kPrompts.size()));
      const Reply& a = plain.replies[i];
      const Reply& b = spec.replies[i];
      EXPECT_EQ(a.tokens, b.tokens);
      EXPECT_EQ(a.finish, b.finish);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      for (size_t j = 0; j < a.logits.size(); ++j) {
        EXPECT_EQ(std::memcmp(a.logits[j].data(), b.logits[j].data(), a.logits[j].size() * sizeof(float)), 0)
            << "logits of token " << j;
      }
      EXPECT_GT(b.stats.num_accepted_tokens, 0);
      // Ended by <|im_end|>: did the last step emit it as an accepted draft?
      if (b.finish != FinishReason::Stop) continue;
      const EngineEvent* last = nullptr;
      for (const EngineEvent& e : spec.events) {
        if (e.type == EngineEventType::Verify && e.request == static_cast<RequestId>(i + 1)) last = &e;
      }
      const auto emitted_last_step = std::count(b.logits_steps.begin(), b.logits_steps.end(), b.logits_steps.back());
      if (last && emitted_last_step <= last->value) ++num_ended_inside_draft;
    }
    // Copying replies: well over one accepted token per proposal.
    EXPECT_GT(spec.spec.mean_accepted_length(), 1.5)
        << spec.spec.num_accepted_tokens << " accepted in " << spec.spec.num_drafts << " proposals";
    EXPECT_GE(num_ended_inside_draft, c.copies) << "no reply ended on an accepted draft token";
  }
}

}  // namespace
}  // namespace kvscope
