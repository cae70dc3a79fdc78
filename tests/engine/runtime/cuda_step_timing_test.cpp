// The CUDA backend's step times (label gpu, built only with KVSCOPE_CUDA=ON),
// for the bench and the inspector: each step reports the device's own time
// (StepStats::device_time_s: first kernel to last copy back), which lies
// inside the forward pass that queued and waited for it, eager and replayed;
// the attention time is there exactly in the steps gpu_attention_timing
// times (one in CudaBackend::kAttentionTimingInterval). On a tiny random
// Llama with Q4_1 matrices. Without a device the tests skip with the CUDA
// error, or fail with KVSCOPE_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <string>

#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kvscope/engine.h"
#include "runtime/cuda_backend.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

const std::string& tiny_q4_path() {
  static const std::string path = [] {
    test::TinyModelSpec spec;
    spec.matrix_type = TensorType::Q4_1;
    spec.layers = 3;
    const std::string p = test::tiny_model_temp_path("cuda_step_timing");
    EXPECT_TRUE(test::write_tiny_gguf(spec, p).ok());
    return p;
  }();
  return path;
}

// Each step reports the device's own time (first kernel to last copy back,
// StepStats::device_time_s): more than nothing, and inside the forward pass
// that queued and waited for it, eager and replayed steps alike; and its
// attention time in the first step and then one step in
// kAttentionTimingInterval when gpu_attention_timing asks for it, else never.
void check_step_times(const EngineConfig& config) {
  auto engine = Engine::create(config);
  ASSERT_TRUE(engine.ok()) << engine.error();
  for (int32_t i = 0; i < 4; ++i) {
    GenerationRequest r;
    for (int32_t k = 0; k < 7 + 13 * i; ++k) r.prompt_tokens.push_back((k * 31 + i * 17 + 3) % 300);
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 40;  // 40 steps: three of them timed
    ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  }
  int32_t num_steps = 0, num_graphed = 0;
  std::vector<int32_t> timed;  // the steps with an attention time, counted from 0
  while ((*engine)->has_work()) {
    (*engine)->step();
    const StepStats st = (*engine)->last_step_stats();
    if (st.num_batch_tokens() == 0) continue;
    ++num_steps;
    num_graphed += st.graph_replayed;
    EXPECT_GT(st.device_time_s, 0.0) << "step " << st.step;
    // Two clocks: allow the device's a few microseconds over the host's.
    EXPECT_LE(st.device_time_s, st.forward_time_s + 5e-6) << "step " << st.step;
    EXPECT_GE(st.attention_time_s, 0.0) << "step " << st.step;
    if (st.attention_time_s > 0.0) {
      timed.push_back(num_steps - 1);
      EXPECT_LT(st.attention_time_s, st.device_time_s) << "step " << st.step;
    }
  }
  EXPECT_GT(num_steps, 2 * CudaBackend::kAttentionTimingInterval);
  if (config.gpu_attention_timing) {
    ASSERT_GE(timed.size(), 3u);
    EXPECT_EQ(timed[0], 0);
    for (size_t i = 1; i < timed.size(); ++i) {
      EXPECT_EQ(timed[i] - timed[i - 1], CudaBackend::kAttentionTimingInterval) << "timed step " << i;
    }
    EXPECT_GT(timed.back() + CudaBackend::kAttentionTimingInterval, num_steps - 1);
  } else {
    EXPECT_TRUE(timed.empty()) << timed.size() << " steps timed with gpu_attention_timing off";
  }
  EXPECT_GT(num_graphed, 0) << "no step replayed a graph: the replayed case went unchecked";
  EXPECT_LT(num_graphed, num_steps) << "every step replayed a graph: the eager case went unchecked";
}

TEST(CudaBackend, StepsReportTheDevicesTimeInsideTheForwardPass) {
  KVSCOPE_REQUIRE_CUDA_DEVICE();
  for (bool time_attention : {true, false}) {
    SCOPED_TRACE(time_attention ? "attention timed" : "attention not timed");
    EngineConfig config;
    config.model_path = tiny_q4_path();
    config.backend = BackendKind::Cuda;
    config.num_blocks = 128;
    config.gpu_attention_timing = time_attention;
    check_step_times(config);
  }
}

}  // namespace
}  // namespace kvscope
