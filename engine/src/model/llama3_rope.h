// Llama 3.x rope scaling ("rope_type": "llama3" in a Hugging Face
// config.json): per rotation frequency, the divisor that stretches the model
// to a longer context. GGUF files carry the result as rope_freqs.weight; a
// Hugging Face directory carries the rule's parameters, and this computes the
// same divisors (kernels/cpu/rope.h applies them).
//
// The rule: frequency f of pair i (base^(-2i/head_dim)) has wavelength
// 2*pi/f. Wavelengths shorter than original_context / high_freq_factor keep
// f (divisor 1); longer than original_context / low_freq_factor are divided
// by `factor`; in between, the divisor blends the two by
// s = (original_context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor):
// f' = (1 - s) * f / factor + s * f, i.e. divisor 1 / ((1 - s) / factor + s).
#pragma once

#include <cstdint>
#include <vector>

#include "kvscope/result.h"

namespace kvscope {

struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_context = 8192;  // original_max_position_embeddings
};

// [head_dim / 2] divisors. Error when the parameters are not usable (factor
// below 1, high_freq_factor not above low_freq_factor, a context below 1).
Result<std::vector<float>> llama3_rope_freq_factors(int32_t head_dim, double rope_base, const Llama3RopeScaling& s);

}  // namespace kvscope
