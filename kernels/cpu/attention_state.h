// A partial attention result over some keys, as FlashInfer calls it a "state":
// the running max of the scores, the sum of exp(score - max), and the
// unnormalised weighted sum of values. Split-KV and cascade attention are
// nothing more than computing states over disjoint key ranges and merging them.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace kvscope {

struct AttentionState {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;  // sum of exp(score - max)
  // The value accumulator o[head_dim] is kept by the caller next to the state.
  bool empty() const { return sum == 0.0f; }
};

// Merges the state (b, ob) into (a, oa): oa and ob have head_dim floats.
// Order matters for bitwise reproducibility: always merge in position order.
inline void merge_attention_state(AttentionState& a, float* oa, const AttentionState& b,
                                  const float* ob, int32_t head_dim) {
  if (b.empty()) return;
  if (a.empty()) {
    a = b;
    for (int32_t i = 0; i < head_dim; ++i) oa[i] = ob[i];
    return;
  }
  const float m = a.max > b.max ? a.max : b.max;
  const float fa = std::exp(a.max - m);
  const float fb = std::exp(b.max - m);
  for (int32_t i = 0; i < head_dim; ++i) oa[i] = oa[i] * fa + ob[i] * fb;
  a.sum = a.sum * fa + b.sum * fb;
  a.max = m;
}

}  // namespace kvscope
