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

  // Deterministic adds fixed chunks: the same at every tp, but not the plain
  // (fast, one rank) sum, so fast vs deterministic differs even at tp 1.
  r.b.config.tp = 1;
  r.b.config.tp_reduce = TpReduce::Deterministic;
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("tensor parallelism differs (a: tp 1 fast, b: tp 1 deterministic)", 0), 0u) << notes[0];
  r.a.config.tp = 2;
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u) << "fast tp 2 vs deterministic tp 1";
  r.b.config.tp_reduce = TpReduce::Fast;
  r.b.config.tp = 2;
  EXPECT_TRUE(r.expected_differences().empty()) << "fast at the same tp adds in the same order";
  r.a.config.tp = r.b.config.tp = 1;
  // The CUDA backend runs one rank and has no tp_reduce: nothing to say.
  r.b.config.tp_reduce = TpReduce::Deterministic;
  r.stats_a.backend = r.stats_b.backend = "cuda";
  EXPECT_TRUE(r.expected_differences().empty());
  r.stats_a.backend = r.stats_b.backend = "";
  r.b.config.tp_reduce = TpReduce::Fast;

  // The GPU's settings: named where a GPU ran, not where the CPU ignored them.
  r.stats_a.backend = r.stats_b.backend = "cpu";
  r.b.config.gpu_matmul = GpuMatmul::TensorCores;
  r.a.config.gpu_prefill_gemm = r.b.config.gpu_prefill_gemm = true;
  EXPECT_TRUE(r.expected_differences().empty());
  r.stats_a.backend = r.stats_b.backend = "cuda";
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].rfind("gpu_matmul differs (a: f32, b: tensor_cores)", 0), 0u) << notes[0];
  // On on both sides still depends on the chunking, which the sides may differ in.
  EXPECT_EQ(notes[1].rfind("gpu_prefill_gemm is on (a: true, b: true)", 0), 0u) << notes[1];
  r.b.config.gpu_matmul = GpuMatmul::F32;
  r.a.config.gpu_prefill_gemm = r.b.config.gpu_prefill_gemm = false;
  r.stats_a.backend = "cpu";
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("the sides ran on different backends (a: cpu, b: cuda)", 0), 0u) << notes[0];
}

// Context shifts: sides whose shifts cut at other places (block size,
// context_keep) hold different contexts after the first one; and recompute
// after a shift is the one preemption that changes numbers. Said only where
// a shift happened.
TEST(InvarianceReport, ShiftsThatCutDifferentlyAndRecomputeAfterAShiftAreNamed) {
  InvarianceReport r;
  for (EngineConfig* c : {&r.a.config, &r.b.config}) {
    c->context_overflow = ContextOverflow::Shift;
    c->max_model_len = 96;
    c->context_keep = 16;
  }
  r.a.config.block_size = 8;
  r.b.config.block_size = 16;
  EXPECT_TRUE(r.expected_differences().empty()) << "no shift happened";
  r.stats_a.num_context_shifts = 5;
  std::vector<std::string> notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "the sides' context shifts drop different tokens (a: keeps 16 and drops 24, b: keeps 16 and "
                      "drops 32; a shift works in whole 8- and 16-token blocks after context_keep), so after the "
                      "first shift they hold different contexts");
  r.a.config.max_model_len = r.b.config.max_model_len = 128;  // both drop 32 after the same 16
  EXPECT_TRUE(r.expected_differences().empty());

  r.b.config.preemption = PreemptionMode::Recompute;
  r.stats_b.num_preemptions = 3;
  EXPECT_TRUE(r.expected_differences().empty()) << "b never shifted";
  r.stats_b.num_context_shifts = 2;
  notes = r.expected_differences();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("b: sequences were preempted and recomputed where contexts shift", 0), 0u) << notes[0];
  r.b.config.preemption = PreemptionMode::Swap;
  r.stats_b.num_swapped_out_blocks = 12;  // swapped: the cache kept
  EXPECT_TRUE(r.expected_differences().empty());
}

}  // namespace
}  // namespace kvscope
