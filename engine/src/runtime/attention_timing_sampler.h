// Which forward passes of the CUDA backend time their attention (the setting
// gpu_attention_timing; CudaBackend::Options::time_attention). Kept apart from
// the backend so that the rule is tested without a GPU
// (tests/engine/runtime/attention_timing_sampler_test.cpp).
//
// Why a sample: the pair of CUDA events around each layer's attention sits
// between the step's kernels and costs the overlap of their launches. Timed
// in every step, one sequence decoded at 720 instead of 835 tok/s on an H200;
// one step in 16 costs about 1% (docs/cuda.md). The inspector's attention
// plot gets a point every 16 steps.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kvscope {

class AttentionTimingSampler {
 public:
  static constexpr int32_t kInterval = 16;

  explicit AttentionTimingSampler(bool enabled) : enabled_(enabled) {}

  // Whether the next pass is timed: the first whole-model pass, then one in
  // kInterval. A draft's pass (an early-exit draft on the model's own
  // backend, even one that runs every layer) is neither timed nor counted:
  // with spec_k + 1 dividing the interval the drafts would otherwise take
  // every timed turn, and the engine's step, whose attention the inspector
  // shows, would never be timed.
  bool next(bool whole_model) {
    if (!whole_model) return false;
    const bool timed = enabled_ && since_timed_ >= kInterval - 1;
    since_timed_ = timed ? 0 : std::min(since_timed_ + 1, kInterval);  // clamped: no overflow when off
    return timed;
  }

 private:
  bool enabled_;
  int32_t since_timed_ = kInterval;  // the first pass is timed
};

}  // namespace kvscope
