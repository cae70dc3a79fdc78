// Reference attention for one sequence with contiguous K/V, in double.
// The paged CPU kernel is tested against it.
#pragma once

#include <cstdint>

namespace kvscope {

// For each of num_queries query rows at positions q_pos[i], attends keys at
// positions [max(0, q_pos - window + 1), q_pos] (window 0: no limit).
// q, out: [num_queries][num_heads * head_dim]; k, v: [num_keys][num_kv_heads * head_dim],
// row p holding position p. softcap > 0: each scaled score s becomes
// softcap * tanh(s / softcap) before the softmax.
void attention_ref(const float* q, const int32_t* q_pos, int32_t num_queries, const float* k,
                   const float* v, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim,
                   float scale, int32_t sliding_window, float* out, float softcap = 0.0f);

}  // namespace kvscope
