// memoryBreakdown / kvSplit / estimateWhatIf against numbers worked out by
// hand (the arithmetic is in the comments), with SmolLM2-135M's shape:
// 30 layers x 3 KV heads x 64 dims x (K + V) x 4 bytes = 46080 bytes a token.
// The pool is the engine's own plan (plan_kv), so the what-if must agree with it.
//   ctest --test-dir build -R memory_estimate_test
#include <QtTest>

#include "models/memory_estimate.h"
#include "support/smollm2_shape.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr int64_t kBytesPerToken = 46080;

ModelShape smolShape() { return kvscope::test::smollm2_shape(); }

WhatIfInput request(int32_t prompt, int32_t output, int32_t max_tokens, int32_t max_model_len = 2048) {
  WhatIfInput in;
  in.model = smolShape();
  in.config.model_path = "SmolLM2-135M-Instruct.Q4_1.gguf";
  in.config.block_size = 16;
  in.config.kv_budget_bytes = 64ll << 20;
  in.config.max_model_len = max_model_len;
  in.prompt_tokens = prompt;
  in.output_tokens = output;
  in.max_tokens = max_tokens;
  return in;
}

}  // namespace

class MemoryEstimateTest : public QObject {
  Q_OBJECT
 private slots:
  void pagedVersusContiguous() {
    QCOMPARE(smolShape().kv_bytes_per_token(), kBytesPerToken);
    const WhatIfResult r = estimateWhatIf(request(100, 50, 256));
    QVERIFY2(r.ok(), r.error.c_str());
    QCOMPARE(r.max_model_len, 2048);
    QCOMPARE(r.bytes_per_block, int64_t{737280});  // 46080 * 16
    QCOMPARE(r.num_blocks, int64_t{91});           // 67108864 / 737280 = 91.02
    QCOMPARE(r.token_capacity, int64_t{1456});     // 91 * 16
    // Paged: 150 tokens -> ceil(150 / 16) = 10 blocks; 91 / 10 = 9 at once;
    // the last block has 160 - 150 = 10 unwritten slots, 10 / 160 = 6.25 %.
    QCOMPARE(r.seq_tokens, int64_t{150});
    QCOMPARE(r.paged_blocks_per_seq, int64_t{10});
    QCOMPARE(r.num_paged_seqs, int64_t{9});
    QCOMPARE(r.paged_waste_slots, int64_t{10});
    QCOMPARE(r.paged_waste_percent, 6.25);
    // Contiguous: 100 + 256 = 356 reserved -> 23 blocks (368 slots); 91 / 23
    // = 3 at once; 368 - 150 = 218 slots never written, 59.24 %.
    QCOMPARE(r.contiguous_reserved_tokens, int64_t{356});
    QCOMPARE(r.contiguous_blocks_per_seq, int64_t{23});
    QCOMPARE(r.num_contiguous_seqs, int64_t{3});
    QCOMPARE(r.contiguous_waste_slots, int64_t{218});
    QVERIFY(std::abs(r.contiguous_waste_percent - 100.0 * 218 / 368) < 1e-9);
  }

  void maxModelLenCapsTheReservation() {
    // 100 + 256 capped at 200 -> 13 blocks (208 slots); 91 / 13 = 7.
    const WhatIfResult r = estimateWhatIf(request(100, 50, 256, 200));
    QVERIFY(r.ok());
    QCOMPARE(r.contiguous_reserved_tokens, int64_t{200});
    QCOMPARE(r.contiguous_blocks_per_seq, int64_t{13});
    QCOMPARE(r.num_contiguous_seqs, int64_t{7});
    QCOMPARE(r.contiguous_waste_slots, int64_t{58});  // 208 - 150
    // When the output is the whole reservation, both modes hold the same.
    const WhatIfResult same = estimateWhatIf(request(100, 256, 256));
    QCOMPARE(same.num_paged_seqs, same.num_contiguous_seqs);
  }

  void blockSizeChangesPoolAndWaste() {
    WhatIfInput in = request(100, 50, 256);
    in.config.block_size = 1;  // no internal fragmentation in paged mode
    WhatIfResult r = estimateWhatIf(in);
    QCOMPARE(r.num_blocks, int64_t{1456});  // 67108864 / 46080 = 1456.36
    QCOMPARE(r.paged_waste_slots, int64_t{0});
    QCOMPARE(r.num_paged_seqs, int64_t{9});  // 1456 / 150 = 9.7
    in.config.block_size = 128;
    r = estimateWhatIf(in);
    QCOMPARE(r.num_blocks, int64_t{11});  // 67108864 / 5898240 = 11.4
    QCOMPARE(r.paged_blocks_per_seq, int64_t{2});
    QCOMPARE(r.paged_waste_slots, int64_t{106});  // 256 - 150
  }

  // The pool is plan_kv's for the same model, config and machine, whatever
  // sizes it: the budget, an exact block count, the model's own context.
  void poolIsTheEnginePlan() {
    std::vector<WhatIfInput> inputs;
    inputs.push_back(request(100, 50, 256));
    inputs.push_back(request(100, 50, 256, /*max_model_len=*/0));  // the model's trained context
    inputs.back().config.kv_budget_bytes = 1ll << 30;
    inputs.push_back(request(100, 50, 256));
    inputs.back().config.num_blocks = 40;  // an exact count: the budget is ignored
    inputs.push_back(request(100, 50, 256));
    inputs.back().config.preemption = PreemptionMode::Swap;  // swap space is not the pool
    inputs.back().config.swap_space_bytes = 32ll << 20;
    inputs.back().machine_memory_bytes = 8ll << 30;
    for (const WhatIfInput& in : inputs) {
      const KvPlan plan = plan_kv(in.model, in.config, in.machine_memory_bytes);
      QVERIFY(plan.ok());
      const WhatIfResult r = estimateWhatIf(in);
      QVERIFY2(r.ok(), r.error.c_str());
      QCOMPARE(r.num_blocks, plan.num_blocks);
      QCOMPARE(r.bytes_per_block, plan.bytes_per_block);
      QCOMPARE(r.max_model_len, plan.max_model_len);
      QCOMPARE(r.token_capacity, plan.num_blocks * in.config.block_size);
    }
    QCOMPARE(estimateWhatIf(inputs[1]).max_model_len, 8192);
    QCOMPARE(estimateWhatIf(inputs[1]).num_blocks, int64_t{1456});  // 2^30 / 737280 = 1456.36
    QCOMPARE(estimateWhatIf(inputs[2]).num_blocks, int64_t{40});
    QCOMPARE(estimateWhatIf(inputs[2]).num_paged_seqs, int64_t{4});  // 40 / 10
    QCOMPARE(estimateWhatIf(inputs[3]).num_blocks, int64_t{91});
  }

  void badInputsGiveMessages() {
    // A budget the setting's range allows (1 MiB) that holds no block of 32
    // tokens x 46080 bytes (1474560): plan_kv's problem.
    WhatIfInput in = request(100, 50, 256);
    in.config.kv_budget_bytes = 1ll << 20;
    in.config.block_size = 32;
    QVERIFY(!estimateWhatIf(in).ok());
    QCOMPARE(estimateWhatIf(in).num_blocks, int64_t{0});
    QVERIFY2(estimateWhatIf(in).error.find("block") != std::string::npos, estimateWhatIf(in).error.c_str());
    // The same budget holds one block of 16 tokens (737280 bytes).
    in.config.block_size = 16;
    QVERIFY2(estimateWhatIf(in).ok(), estimateWhatIf(in).error.c_str());
    QCOMPARE(estimateWhatIf(in).num_blocks, int64_t{1});
    // A pool larger than the machine: plan_kv refuses it too.
    in = request(100, 50, 256);
    in.machine_memory_bytes = 32ll << 20;
    QVERIFY(!estimateWhatIf(in).ok());
    QVERIFY2(estimateWhatIf(in).error.find("memory") != std::string::npos, estimateWhatIf(in).error.c_str());
    in.machine_memory_bytes = 0;  // not checked
    QVERIFY(estimateWhatIf(in).ok());

    QVERIFY(!estimateWhatIf(request(100, 300, 256)).ok());       // more output than max tokens
    QVERIFY(!estimateWhatIf(request(2048, 1, 256)).ok());        // prompt fills the context
    QVERIFY(!estimateWhatIf(request(0, 1, 256)).ok());
    in = request(100, 50, 256);
    in.model.num_kv_heads = 0;  // no model
    QVERIFY(!estimateWhatIf(in).ok());
    // Settings out of their table's range: EngineConfig::validate()'s messages.
    in = request(100, 50, 256);
    in.config.block_size = 0;
    QVERIFY(!estimateWhatIf(in).ok());
    QVERIFY(!estimateWhatIf(in).error.empty());
    QCOMPARE(estimateWhatIf(in).num_blocks, int64_t{0});
    in = request(100, 50, 256);
    in.config.kv_budget_bytes = 0;
    QVERIFY(!estimateWhatIf(in).ok());
    in = request(100, 50, 256);
    in.config.max_seqs = 0;
    QVERIFY(!estimateWhatIf(in).ok());
  }

  void breakdownKeepsUnreportedSizesApart() {
    ModelInfo info;
    info.weight_bytes = 100u << 20;
    info.kv_bytes_per_token = kBytesPerToken;
    info.num_kv_blocks = 91;
    info.block_size = 16;
    info.swap_pool_bytes = 123;
    EngineConfig config;
    config.preemption = PreemptionMode::Recompute;
    MemoryBreakdown m = memoryBreakdown(info, config);
    QCOMPARE(m.weight_bytes, int64_t{100} << 20);  // an engine that reports only its matrices
    info.weight_memory_bytes = (100u << 20) + 4096;  // the embedding table and norms too
    QCOMPARE(memoryBreakdown(info, config).weight_bytes, (int64_t{100} << 20) + 4096);
    info.weight_memory_bytes = 0;
    QVERIFY(m.kv_pool_derived);
    QCOMPARE(m.kv_pool_bytes, int64_t{67092480});  // 91 * 737280
    QCOMPARE(m.workspace_bytes, int64_t{0});
    QVERIFY(!m.swap_enabled);
    QCOMPARE(m.swap_bytes, int64_t{0});  // no swap pool under recompute

    info.kv_pool_bytes = 5000;
    info.workspace_bytes = 700;
    info.swap_pool_bytes = 256u << 20;
    config.preemption = PreemptionMode::Swap;
    m = memoryBreakdown(info, config);
    QVERIFY(!m.kv_pool_derived);
    QCOMPARE(m.kv_pool_bytes, int64_t{5000});
    QVERIFY(m.swap_enabled);
    QCOMPARE(m.swap_bytes, int64_t{256} << 20);
    QCOMPARE(m.total_bytes(), (int64_t{100} << 20) + 5000 + 700 + (int64_t{256} << 20));
  }

  void kvSplitFollowsBlockCounts() {
    KvStats kv;
    kv.num_blocks = 100;
    kv.num_used_blocks = 30;
    kv.num_cached_free_blocks = 10;
    kv.num_free_blocks = 70;  // cached-free included
    const KvSplit s = kvSplit(kv, 100 * 1000);
    QCOMPARE(s.used_bytes, int64_t{30000});
    QCOMPARE(s.cached_free_bytes, int64_t{10000});
    QCOMPARE(s.free_bytes, int64_t{60000});
    QCOMPARE(kvSplit(KvStats{}, 1000).used_bytes, int64_t{0});  // no pool yet
    QCOMPARE(toMiB(3 << 20), 3.0);
  }
};

QTEST_GUILESS_MAIN(MemoryEstimateTest)
#include "memory_estimate_test.moc"
