// Token sampling kernel; the rule is in sample_tokens.cuh. One block of 512
// threads per row. Every cut (top-k's k-th token, top-p's last token, the
// drawn token) is "the first element, in the row's order, at which a running
// sum reaches a target"; find_cut finds it without sorting: a bisection over
// the 32-bit order key of the value (32 passes, each a fixed-tree block sum of
// the values at or above a key) finds the key class holding the cut, then a
// scan in id order inside that class (ties go to the lowest id, as the CPU's
// `better` orders them) finds the element. Fixed trees and no atomics: the
// result depends only on the row, the parameters and u.
//
// Workspace: w[r][i] = ws + r * vocab_size + i, the weights exp((l - max) / T)
// (0 outside the top-k set).
//
// Cost: at vocab 49152, about five cuts' worth of 33 passes over 96 logits per
// thread, a few tens of microseconds per row on one SM; rows run in parallel.
#include "kernels/cuda/sample_tokens.cuh"

#include <cfloat>
#include <climits>

#include "kernels/cuda/block_scan.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/launch_check.h"
#include "kernels/cuda/overlapped_launch.cuh"

namespace kvscope::cuda {
namespace {

constexpr int kThreads = 512;

struct Scratch {
  double d[kWarpSize];
  float f[kWarpSize];
  int32_t i[kWarpSize];
  uint32_t u[kWarpSize];
};

// Larger value -> larger key; -0 and +0 share a key (they tie in the CPU's order).
__device__ inline uint32_t order_key(float x) {
  const uint32_t u = __float_as_uint(x == 0.0f ? 0.0f : x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// One row and the cuts made so far.
struct Row {
  const float* logits;  // [n]
  const float* w;       // [n] weights, 0 outside the top-k set
  int32_t n;
  bool key_by_logit;    // the order: by logit (top-k on) or by w
  bool top_k_cut, top_p_cut;
  uint32_t k_key, p_key;  // the last kept element of each cut: (key, id)
  int32_t k_id, p_id;
  float min_p;
  double sum;  // of w over the final set
};

__device__ inline uint32_t logit_key(const Row& r, int32_t i) { return order_key(sanitize(r.logits[i])); }
__device__ inline uint32_t row_key(const Row& r, int32_t i) {
  return r.key_by_logit ? logit_key(r, i) : order_key(r.w[i]);
}
__device__ inline bool at_or_before(uint32_t key, int32_t i, uint32_t cut_key, int32_t cut_id) {
  return key > cut_key || (key == cut_key && i <= cut_id);
}
__device__ inline bool in_top_k(const Row& r, int32_t i) {
  return !r.top_k_cut || at_or_before(logit_key(r, i), i, r.k_key, r.k_id);
}
__device__ inline bool in_top_p(const Row& r, int32_t i) {
  return in_top_k(r, i) && (!r.top_p_cut || at_or_before(row_key(r, i), i, r.p_key, r.p_id));
}
__device__ inline bool in_final(const Row& r, int32_t i) {
  return in_top_p(r, i) && !(r.min_p > 0.0f && r.w[i] < r.min_p);
}
__device__ inline float prob(const Row& r, int32_t i) { return static_cast<float>(static_cast<double>(r.w[i]) / r.sum); }

enum class Pass { kTopK, kTopP, kDraw };

// Element i as a pass sees it: whether it is in the pass's domain, its key, its value.
__device__ inline bool element(const Row& r, Pass pass, int32_t i, uint32_t* key, double* val) {
  switch (pass) {
    case Pass::kTopK: *key = logit_key(r, i); *val = 1.0; return true;
    case Pass::kTopP: *key = row_key(r, i); *val = r.w[i]; return in_top_k(r, i);
    case Pass::kDraw: *key = row_key(r, i); *val = in_final(r, i) ? prob(r, i) : 0.0; return in_final(r, i);
  }
  return false;
}

__device__ inline bool reached(double cum, double target, bool strict) { return strict ? cum > target : cum >= target; }

struct Cut {
  bool found;
  uint32_t key;
  int32_t id;
};

// The first element of the pass's domain in the order (key desc, id asc) at
// which the running sum of values reaches target (> with strict, else >=).
// Called by the whole block.
__device__ Cut find_cut(const Row& r, Pass pass, double target, bool strict, Scratch& sc) {
  const auto mass_from = [&](uint32_t from_key) {  // sum of the values with key >= from_key
    double local = 0.0;
    for (int32_t i = threadIdx.x; i < r.n; i += blockDim.x) {
      uint32_t key;
      double val;
      if (element(r, pass, i, &key, &val) && key >= from_key) local += val;
    }
    return block_reduce(local, 0.0, Sum{}, sc.d);
  };
  if (!reached(mass_from(0), target, strict)) return Cut{false, 0, 0};
  uint32_t k = 0;  // the largest key whose mass_from still reaches the target
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = k | (1u << bit);
    if (reached(mass_from(candidate), target, strict)) k = candidate;
  }
  const double before = k == UINT32_MAX ? 0.0 : mass_from(k + 1);
  // Inside class k, in id order: thread t walks ids [t * chunk, (t + 1) * chunk).
  const int32_t chunk = (r.n + static_cast<int32_t>(blockDim.x) - 1) / static_cast<int32_t>(blockDim.x);
  const int32_t lo = min(r.n, static_cast<int32_t>(threadIdx.x) * chunk);
  const int32_t hi = min(r.n, lo + chunk);
  double local = 0.0;
  for (int32_t i = lo; i < hi; ++i) {
    uint32_t key;
    double val;
    if (element(r, pass, i, &key, &val) && key == k) local += val;
  }
  double cum = before + block_exclusive_scan(local, sc.d);
  int32_t hit = INT_MAX;
  int32_t last = -1;
  for (int32_t i = lo; i < hi; ++i) {
    uint32_t key;
    double val;
    if (!element(r, pass, i, &key, &val) || key != k) continue;
    last = i;
    cum += val;
    if (reached(cum, target, strict)) {
      hit = i;
      break;
    }
  }
  hit = block_reduce(hit, INT_MAX, Min{}, sc.i);
  if (hit == INT_MAX) hit = block_reduce(last, -1, Max{}, sc.i);  // rounding: the class's last element
  return Cut{true, k, hit};
}

// draw_token's fallback when rounding keeps the running sum below the target:
// the last token of the order with p > 0, else the first.
__device__ int32_t draw_fallback(const Row& r, bool sorted, Scratch& sc) {
  uint32_t low_key = UINT32_MAX, high_key = 0;
  int32_t any_positive = 0;
  for (int32_t i = threadIdx.x; i < r.n; i += blockDim.x) {
    if (!in_final(r, i)) continue;
    high_key = max(high_key, row_key(r, i));
    if (prob(r, i) > 0.0f) {
      any_positive = 1;
      low_key = min(low_key, row_key(r, i));
    }
  }
  any_positive = block_reduce(any_positive, 0, Max{}, sc.i);
  low_key = block_reduce(low_key, UINT32_MAX, Min{}, sc.u);
  high_key = block_reduce(high_key, 0u, Max{}, sc.u);
  int32_t last = -1, first = INT_MAX;
  for (int32_t i = threadIdx.x; i < r.n; i += blockDim.x) {
    if (!in_final(r, i)) continue;
    if (prob(r, i) > 0.0f && (!sorted || row_key(r, i) == low_key)) last = max(last, i);
    if (!sorted || row_key(r, i) == high_key) first = min(first, i);
  }
  last = block_reduce(last, -1, Max{}, sc.i);
  first = block_reduce(first, INT_MAX, Min{}, sc.i);
  return any_positive ? last : first;
}

// The id-order draw (top-k and top-p off): the first id whose running sum of p exceeds target.
__device__ int32_t draw_in_id_order(const Row& r, double target, Scratch& sc) {
  const int32_t chunk = (r.n + static_cast<int32_t>(blockDim.x) - 1) / static_cast<int32_t>(blockDim.x);
  const int32_t lo = min(r.n, static_cast<int32_t>(threadIdx.x) * chunk);
  const int32_t hi = min(r.n, lo + chunk);
  double local = 0.0;
  for (int32_t i = lo; i < hi; ++i) local += in_final(r, i) ? static_cast<double>(prob(r, i)) : 0.0;
  double cum = block_exclusive_scan(local, sc.d);
  int32_t hit = INT_MAX;
  for (int32_t i = lo; i < hi; ++i) {
    if (!in_final(r, i)) continue;
    cum += prob(r, i);
    if (cum > target) {
      hit = i;
      break;
    }
  }
  hit = block_reduce(hit, INT_MAX, Min{}, sc.i);
  return hit != INT_MAX ? hit : draw_fallback(r, false, sc);
}

// Calls f(i, sanitize(row[i])) for this thread's elements i (i = threadIdx.x
// mod kThreads), with the row's loads issued eight float4s at a time when the
// row allows float4 loads: a whole-row pass is otherwise one load latency per
// element of the thread (96 at a vocabulary of 49152), which made a greedy
// draw take 45 us on the H200. f must not care in which order it sees the
// elements (a max, a min of ids).
template <typename F>
__device__ inline void for_each_sanitized(const float* row, int32_t n, F f) {
  int32_t done = 0;
  if (reinterpret_cast<uintptr_t>(row) % 16 == 0) {
    constexpr int kBatch = 8;  // float4 loads of one thread in flight together
    const auto* row4 = reinterpret_cast<const float4*>(row);
    const int32_t vecs = n / 4;
    const int32_t batched = vecs - vecs % (kBatch * kThreads);
    for (int32_t v0 = 0; v0 < batched; v0 += kBatch * kThreads) {
      float4 a[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) a[k] = __ldg(row4 + v0 + k * kThreads + threadIdx.x);
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int32_t i = 4 * (v0 + k * kThreads + static_cast<int32_t>(threadIdx.x));
        f(i, sanitize(a[k].x));
        f(i + 1, sanitize(a[k].y));
        f(i + 2, sanitize(a[k].z));
        f(i + 3, sanitize(a[k].w));
      }
    }
    done = 4 * batched;
  }
  for (int32_t i = done + static_cast<int32_t>(threadIdx.x); i < n; i += kThreads) f(i, sanitize(row[i]));
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, int32_t n, const DeviceSamplingParams* params, const double* uniforms,
                  float* ws, int32_t* ids, const int32_t* source_rows) {
  await_previous_kernel();
  __shared__ Scratch sc;
  const int64_t row = blockIdx.x;
  const DeviceSamplingParams prm = params[row];
  Row r{};
  const int64_t source = source_rows != nullptr ? source_rows[row] : row;
  r.logits = logits + source * n;  // logits[s][i] = logits + s * vocab_size + i
  float* w = ws + row * n;
  r.w = w;
  r.n = n;
  float local_max = -FLT_MAX;
  for_each_sanitized(r.logits, n, [&](int32_t, float v) { local_max = fmaxf(local_max, v); });
  const float max_logit = block_reduce(local_max, -FLT_MAX, Max{}, sc.f);
  if (prm.temperature == 0.0f) {  // greedy: the first id holding the max
    int32_t first = INT_MAX;
    for_each_sanitized(r.logits, n, [&](int32_t i, float v) {
      if (v == max_logit) first = min(first, i);
    });
    first = block_reduce(first, INT_MAX, Min{}, sc.i);
    if (threadIdx.x == 0) ids[row] = first;
    return;
  }
  const bool top_k_on = prm.top_k > 0 && prm.top_k < n;
  r.key_by_logit = top_k_on;
  if (top_k_on) {  // k < n of n elements counted: always found
    const Cut c = find_cut(r, Pass::kTopK, static_cast<double>(prm.top_k), false, sc);
    r.top_k_cut = true;
    r.k_key = c.key;
    r.k_id = c.id;
  }
  double local_z = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    float wi = 0.0f;
    if (in_top_k(r, i)) {
      const float x = __fdiv_rn(__fsub_rn(sanitize(r.logits[i]), max_logit), prm.temperature);
      wi = static_cast<float>(exp(static_cast<double>(x)));
      local_z += wi;
    }
    w[i] = wi;
  }
  const double z = block_reduce(local_z, 0.0, Sum{}, sc.d);  // its barrier also publishes w
  if (prm.top_p < 1.0f) {
    const Cut c = find_cut(r, Pass::kTopP, static_cast<double>(prm.top_p) * z, false, sc);
    r.top_p_cut = c.found;  // not reached (rounding): every candidate stays
    r.p_key = c.key;
    r.p_id = c.id;
  }
  r.min_p = prm.min_p;
  double local_sum = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) local_sum += in_final(r, i) ? w[i] : 0.0f;
  r.sum = block_reduce(local_sum, 0.0, Sum{}, sc.d);
  double local_total = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) local_total += in_final(r, i) ? prob(r, i) : 0.0f;
  const double target = uniforms[row] * block_reduce(local_total, 0.0, Sum{}, sc.d);
  int32_t id;
  if (top_k_on || prm.top_p < 1.0f) {
    const Cut c = find_cut(r, Pass::kDraw, target, true, sc);
    id = c.found ? c.id : draw_fallback(r, true, sc);
  } else {
    id = draw_in_id_order(r, target, sc);
  }
  if (threadIdx.x == 0) ids[row] = id;
}

}  // namespace

size_t sample_tokens_workspace_floats(int32_t num_rows, int32_t vocab_size) {
  if (num_rows <= 0 || vocab_size <= 0) return 0;
  return static_cast<size_t>(num_rows) * static_cast<size_t>(vocab_size);
}

cudaError_t sample_tokens(const float* logits, int32_t num_rows, int32_t vocab_size,
                          const DeviceSamplingParams* params, const double* uniforms, float* workspace,
                          size_t workspace_floats, int32_t* ids, cudaStream_t stream,
                          const int32_t* source_rows) {
  const char* op = "sample_tokens";
  KVSCOPE_CUDA_REQUIRE(op, num_rows >= 0);
  KVSCOPE_CUDA_REQUIRE(op, vocab_size >= 1);
  if (num_rows == 0) return cudaSuccess;
  KVSCOPE_CUDA_REQUIRE(op, logits != nullptr && params != nullptr && uniforms != nullptr && ids != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, workspace != nullptr);
  KVSCOPE_CUDA_REQUIRE(op, workspace_floats >= sample_tokens_workspace_floats(num_rows, vocab_size));
  launch_kernel(sample_kernel, static_cast<unsigned int>(num_rows), kThreads, 0, stream, logits, vocab_size, params,
                uniforms, workspace, ids, source_rows);
  return cudaGetLastError();
}

}  // namespace kvscope::cuda
