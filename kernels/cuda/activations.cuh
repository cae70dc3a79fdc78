// The gate activations of SwiGLU and GeGLU as device functors, shared by
// act_and_mul.cu (the elementwise kernels) and matvec_q.cu (the gate and up
// projections fused with the activation), so that both compute the same bits.
// Device code only.
#pragma once

namespace kvscope::cuda {

// silu(g) = g / (1 + exp(-g)); expf is the accurate library function.
struct Silu {
  __device__ float operator()(float g) const { return __fdiv_rn(g, __fadd_rn(1.0f, expf(-g))); }
};

// gelu_tanh(g) = 0.5 g (1 + tanh(u)), u = sqrt(2/pi) (g + 0.044715 g^3),
// written as g / (1 + exp(-2u)), as the CPU kernel does: for a negative gate
// 1 + tanh(u) cancels to exactly 0 in f32 long before the true value
// underflows (g = -7: tanhf(u) rounds to -1, the f64 value is -2.4e-15), so
// the product form lost every digit there. The H200 run of act_and_mul_test
// caught it (normalised error 1 at n = 1).
// Explicit round-to-nearest intrinsics: no contraction choice can differ
// between the two kernels inlining it.
struct GeluTanh {
  __device__ float operator()(float g) const {
    constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
    const float cubic = __fmaf_rn(__fmul_rn(__fmul_rn(0.044715f, g), g), g, g);  // g + 0.044715 g^3
    return __fdiv_rn(g, __fadd_rn(1.0f, expf(__fmul_rn(-kTwoSqrt2OverPi, cubic))));
  }
};

}  // namespace kvscope::cuda
