// NcclCommunicator (built only with -DKVSCOPE_NCCL=ON, label gpu): the
// collectives over every CUDA device of this machine, one thread per GPU.
// Skips where there is no device (a build machine without GPUs).
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <thread>
#include <vector>

#include "parallel/nccl_communicator.h"

namespace kvscope {
namespace {

TEST(NcclCommunicatorTest, CollectivesOverAllDevices) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<int32_t> devices;
  for (int d = 0; d < count; ++d) devices.push_back(d);
  auto group = NcclGroup::create(devices);
  ASSERT_TRUE(group.ok()) << group.error();
  const int64_t n = 17;
  std::vector<std::vector<float>> reduced(devices.size()), gathered(devices.size());
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < count; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(devices[static_cast<size_t>(r)]);
      Communicator& c = (*group)->communicator(r);
      std::vector<float> host(n, static_cast<float>(r + 1));
      float *data = nullptr, *all = nullptr;
      cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(float));
      cudaMalloc(reinterpret_cast<void**>(&all), n * count * sizeof(float));
      cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      c.all_gather(data, n, all);
      c.all_reduce_sum(data, n);
      c.barrier();
      reduced[static_cast<size_t>(r)].resize(n);
      gathered[static_cast<size_t>(r)].resize(static_cast<size_t>(n * count));
      cudaMemcpy(reduced[static_cast<size_t>(r)].data(), data, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(gathered[static_cast<size_t>(r)].data(), all, n * count * sizeof(float), cudaMemcpyDeviceToHost);
      cudaFree(data);
      cudaFree(all);
    });
  }
  for (auto& t : threads) t.join();
  const float sum = static_cast<float>(count * (count + 1) / 2);
  for (int32_t r = 0; r < count; ++r) {
    for (float x : reduced[static_cast<size_t>(r)]) EXPECT_EQ(x, sum);
    for (int32_t src = 0; src < count; ++src) {
      EXPECT_EQ(gathered[static_cast<size_t>(r)][static_cast<size_t>(src * n)], static_cast<float>(src + 1));
    }
  }
}

}  // namespace
}  // namespace kvscope
