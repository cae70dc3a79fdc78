// Runs kernels/cuda/paged_prefill over a PrefillProblem paged into blocks of
// block_size (optionally with its cascade groups) and returns the output,
// poisoned (NaN) before the launch together with the cascade workspace; and
// the same through the CPU kernel, for the device-free harness checks.
#pragma once

#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/cuda/paged_prefill.cuh"
#include "cuda_test_util.h"
#include "prefill_problem.h"

namespace kvscope::cuda_test {

// q_row_stride > row floats: q is laid out with that many floats per token
// (the rest NaN), as the CUDA backend's qkv rows are. pool_shift > 0: the K
// and V pools start that many bytes past a 16-byte boundary, which turns the
// kernel's 16-byte copies off (element loads instead).
inline std::vector<float> run_prefill_cuda(const PrefillProblem& p, int32_t block_size, bool cascade,
                                           std::mt19937& rng, int64_t q_row_stride = 0, int32_t pool_shift = 0) {
  const PagedPool pool = page_prefill_problem(p, block_size, rng);
  const Groups groups = cascade ? cascade_groups(p, block_size) : Groups{};
  const PagedAttentionBatch host_batch{static_cast<int32_t>(p.seqs.size()), p.query_start.data(),
                                       p.positions.data(), pool.table_start.data(), pool.block_ids.data()};
  cuda::PrefillPlan plan;
  EXPECT_EQ(cuda::plan_paged_prefill(p.shape, host_batch, groups.view(), &plan), cudaSuccess);
  EXPECT_EQ(plan.num_shared_items > 0, cascade && !groups.prefix_len.empty() && p.shape.sliding_window == 0);
  const auto shifted = [&](const std::vector<uint8_t>& bytes) {
    std::vector<uint8_t> out(static_cast<size_t>(pool_shift), 0);
    out.insert(out.end(), bytes.begin(), bytes.end());
    return out;
  };
  DeviceBuffer<uint8_t> dk(shifted(pool.k)), dv(shifted(pool.v));
  std::vector<float> q = p.q;
  if (q_row_stride > 0) {
    const size_t row = p.row_floats(), stride = static_cast<size_t>(q_row_stride);
    q.assign(static_cast<size_t>(p.num_tokens()) * stride, NAN);
    for (size_t t = 0; t < static_cast<size_t>(p.num_tokens()); ++t) {
      std::copy(p.q.begin() + static_cast<std::ptrdiff_t>(t * row), p.q.begin() + static_cast<std::ptrdiff_t>((t + 1) * row),
                q.begin() + static_cast<std::ptrdiff_t>(t * stride));
    }
  }
  DeviceBuffer<float> dq(q), dout(p.q.size());
  DeviceBuffer<int32_t> dqs(p.query_start), dpos(p.positions), dstart(pool.table_start), dids(pool.block_ids);
  DeviceBuffer<int32_t> dplan(plan.data);
  const size_t ws_floats = cuda::paged_prefill_workspace_floats(plan, p.shape);
  DeviceBuffer<float> dws(ws_floats);
  EXPECT_EQ(dout.poison(), cudaSuccess);
  if (ws_floats > 0) {
    EXPECT_EQ(dws.poison(), cudaSuccess);  // the flat pass must read only written states
  }
  const PagedKvLayer kv{dk.get() + pool_shift, dv.get() + pool_shift, block_size, p.type};
  const cuda::PagedPrefillBatch batch{static_cast<int32_t>(p.seqs.size()), dqs.get(), dpos.get(), dstart.get(),
                                      dids.get()};
  EXPECT_EQ(cuda::paged_prefill_attention(p.shape, kv, batch, plan, dplan.get(), dq.get(), dout.get(), dws.get(),
                                          ws_floats, nullptr, q_row_stride),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return dout.download();
}

inline std::vector<float> run_prefill_cpu(const PrefillProblem& p, int32_t block_size, bool cascade,
                                          std::mt19937& rng) {
  const PagedPool pool = page_prefill_problem(p, block_size, rng);
  const Groups groups = cascade ? cascade_groups(p, block_size) : Groups{};
  const PagedAttentionBatch batch{static_cast<int32_t>(p.seqs.size()), p.query_start.data(), p.positions.data(),
                                  pool.table_start.data(), pool.block_ids.data()};
  ThreadPool threads(1);
  std::vector<float> out(p.q.size(), NAN);
  paged_attention(p.shape, PagedKvLayer{pool.k.data(), pool.v.data(), block_size, p.type}, batch, p.q.data(),
                  out.data(), threads, groups.view());
  return out;
}

}  // namespace kvscope::cuda_test
