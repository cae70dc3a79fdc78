// Dequantising matrix-vector product on the GPU, for decode: the weights stay
// in their GGUF block layout as loaded (Q4_1 for SmolLM2's layers, Q8_0 for
// its tied embedding / LM head) and are dequantised in registers, so each
// weight byte crosses the memory bus once per step. Mirrors
// kernels/reference/matmul.h; tested by tests/kernels/cuda/matvec_q_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/tensor_type.h"

namespace kvscope::cuda {

inline constexpr int64_t kMaxMatvecTokens = 65535;  // tokens of one launch

// How the products are computed. Either way a token's bits do not depend on
// the other tokens of the launch (the engine's invariance rests on that), but
// the two give different bits, so a backend uses one for every row.
//   kF32: f32 FMA chains in the order matvec_q.cu documents (the default).
//   kTensorCores: f16 tensor-core products (matvec_mma.cu): the quants are
//     exact in f16 and each activation is split into two f16 parts (hi + lo,
//     about 22 bits), scaled by a power of two per 32-element block so large
//     activations do not overflow; f32 accumulation.
enum class MatvecMath { kF32, kTensorCores };

// How a tensor-core launch lays its rows over thread blocks (matvec_mma.cu):
// plain, a block per group of 16 rows and 32 tokens; split, each group of 16
// rows over a cluster of one block per stage of 256 weights (for launches of
// few blocks); or swept, a block per run of several groups, staging its
// tokens' rows once for all of them (for launches of many more blocks than
// the GPU holds). kAuto splits and sweeps where that was measured to pay (a
// decode step's ffn_down split; the head and prefill chunks swept); kNever
// (plain), kAlways (split) and kSweep are for the tests and the benchmark.
// The bits are the same every way. A split needs compute capability 9.0 and
// rows of 257 to 2,048 weights (2 to 8 stages), a sweep 9.0 and rows of at
// most 640 weights; elsewhere kAlways and kSweep launch plain. The f32
// kernels ignore it.
enum class TensorCoreSplit { kAuto, kNever, kAlways, kSweep };

// The cluster size a tensor-core launch of `num_rows` rows (all outputs
// together) of `row_len` weights on `num_tokens` tokens uses on the current
// device: a rank per stage, or 0 unsplit. For the tests and the benchmark's
// records.
int tensor_core_split_ranks(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split);
// The same rule for a device of compute capability `major` (9: Hopper) with
// `sms` multiprocessors, no device needed (the rule's own test).
int tensor_core_split_ranks(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split, int major,
                            int sms);
// Groups of 16 rows a block of such a launch takes one after another: more
// than 1 when it sweeps, else 1. For the current device, and the same rule
// for a device of compute capability `major` with `sms` multiprocessors.
int tensor_core_sweep_groups(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split);
int tensor_core_sweep_groups(int64_t num_rows, int64_t row_len, int64_t num_tokens, TensorCoreSplit split, int major,
                             int sms);

// An RMSNorm the matmul applies to its input as it stages it: the products
// then take rms_norm(x[t]) * weight (kernels/cuda/rms_norm.cuh's bits, to
// the last one) instead of x[t], and the rms_norm launch before the matmul,
// with its write and read of a normalised copy, goes away. Each thread block
// computes the norms of its own tokens: a few hundred floats per token from
// L2, against a launch saved. Off (weight null) by default.
// weight: [row_len] device f32, 16-byte aligned.
struct InputNorm {
  const float* weight = nullptr;
  float eps = 0.0f;
};

// y[t][r] = dot(dequant(w row r), x[t]) for t < num_tokens: decode rows, or a
// prefill chunk (each weight block is loaded once per 8 tokens). A token's
// result is bitwise the same whatever the other tokens of the launch.
// w: [num_rows][row_bytes(type, row_len)] device bytes; x: [num_tokens][row_len]
// device f32, 16-byte aligned; y: [num_tokens][num_rows] device f32.
// Preconditions: type Q4_1 or Q8_0, row_len > 0 and a multiple of 32,
// num_rows > 0, 0 <= num_tokens <= kMaxMatvecTokens, w 2-byte and x 16-byte aligned.
// With `norm`, x[t] is first normalised (InputNorm).
cudaError_t matvec_q(TensorType type, const void* w, int64_t num_rows, int64_t row_len, const float* x,
                     int64_t num_tokens, float* y, cudaStream_t stream, MatvecMath math = MatvecMath::kF32,
                     TensorCoreSplit split = TensorCoreSplit::kAuto, InputNorm norm = {});

// One matrix of a matvec_q_multi launch: y[t * ld + r] = dot(dequant(w row r), x[t]),
// or with `add_to_y`, y[t * ld + r] += that dot product: the residual add
// after a block's output projection in the same launch, one f32 addition as
// add_rms_norm does it (so the same bits).
struct MatvecOutput {
  const void* w = nullptr;  // [num_rows][row_bytes(type, row_len)] device bytes
  int64_t num_rows = 0;
  float* y = nullptr;  // device f32, token t's row at y + t * ld
  int64_t ld = 0;      // >= num_rows
  bool add_to_y = false;
};
inline constexpr int kMaxMatvecOutputs = 3;

// Several matrices of one type and row length times the same x in one
// launch (a layer's Q, K and V projections, written side by side into one
// row per token): each output's values are matvec_q's bits.
// Preconditions: matvec_q's, 1 <= num_outputs <= kMaxMatvecOutputs.
cudaError_t matvec_q_multi(TensorType type, const MatvecOutput* outputs, int num_outputs, int64_t row_len,
                           const float* x, int64_t num_tokens, cudaStream_t stream,
                           MatvecMath math = MatvecMath::kF32, TensorCoreSplit split = TensorCoreSplit::kAuto,
                           InputNorm norm = {});

enum class GluActivation { Silu, GeluTanh };

// The gated feed-forward input in one launch: out[t * ld + r] =
// act(dot(gate row r, x[t])) * dot(up row r, x[t]), the dot products being
// matvec_q's bits and act that of kernels/cuda/act_and_mul (SwiGLU: silu,
// GeGLU: gelu_tanh), so it equals the three launches it replaces.
// w_gate, w_up: [num_rows][row_bytes(type, row_len)] device bytes, the same
// type; out: device f32, ld >= num_rows. Preconditions: matvec_q's.
cudaError_t matvec_q_glu(TensorType type, const void* w_gate, const void* w_up, int64_t num_rows, int64_t row_len,
                         const float* x, int64_t num_tokens, GluActivation activation, float* out, int64_t ld,
                         cudaStream_t stream, MatvecMath math = MatvecMath::kF32,
                         TensorCoreSplit split = TensorCoreSplit::kAuto, InputNorm norm = {});

}  // namespace kvscope::cuda
