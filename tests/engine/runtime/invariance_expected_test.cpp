// InvarianceReport::expected_differences (no engine): a setting that changes
// the numbers by design is named when the sides differ in it, so a
// divergence there does not read as a broken invariance (`check` with
// kv_type=f32 vs q8_0 said only "the outputs DIVERGE").
#include <gtest/gtest.h>

#include "kvscope/invariance_check.h"

namespace kvscope {
namespace {

TEST(InvarianceReport, NamesTheSettingsThatChangeTheNumbersByDesign) {
  InvarianceReport r;
  EXPECT_TRUE(r.expected_differences().empty());
  // Settings that keep a row's bits (the invariance under test) say nothing.
  r.b.config.block_size = 8;
  r.b.config.paged = false;
  r.b.config.cascade = CascadeMode::On;
  r.b.config.max_batched_tokens = 7;
  EXPECT_TRUE(r.expected_differences().empty());

  r.b.config.kv_cache_type = KvCacheType::Q8_0;
  std::vector<std::string> notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("kv_cache_type differs (a: f32, b: q8_0): the two types store different numbers", 0), 0u)
      << notes[0];

  r.b.config.kv_cache_type = KvCacheType::F32;
  r.a.config.model_path = "a.gguf";
  r.b.config.model_path = "b.gguf";
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "model_path differs (a: a.gguf, b: b.gguf): the sides run different models");
  r.b.config.model_path = "a.gguf";

  // Tensor parallelism: only the fast reduction changes the bits with tp.
  r.b.config.tp = 2;
  r.a.config.tp_reduce = r.b.config.tp_reduce = TpReduce::Deterministic;
  EXPECT_TRUE(r.expected_differences().empty());
  r.a.config.tp_reduce = r.b.config.tp_reduce = TpReduce::Fast;
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("tensor parallelism differs (a: tp 1 fast, b: tp 2 fast)", 0), 0u) << notes[0];

  r.b.config.tp = 1;
  r.b.config.gpu_prefill_gemm = true;
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("gpu_prefill_gemm differs (a: false, b: true)", 0), 0u) << notes[0];
}

}  // namespace
}  // namespace kvscope
