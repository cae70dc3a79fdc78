// SmolLM2-135M's shape as plan_kv sees it (30 layers, 3 KV heads of 64:
// 46,080 bytes of f32 K/V per token), for tests of memory arithmetic that
// need real numbers but no model file. Header-only: engine and ui tests share it.
#pragma once

#include "kvscope/kv_plan.h"

namespace kvscope::test {

inline ModelShape smollm2_shape() {
  ModelShape m;
  m.num_layers = 30;
  m.hidden_size = 576;
  m.ffn_size = 1536;
  m.num_heads = 9;
  m.num_kv_heads = 3;
  m.head_dim = 64;
  m.vocab_size = 49152;
  m.context_length = 8192;
  return m;
}

}  // namespace kvscope::test
