// InProcessCommunicator: every collective for 1..4 ranks on odd lengths, the
// same result on every rank (bitwise), rank-ordered sums, a barrier that
// really blocks, and many calls in a row on one group.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "parallel/in_process_communicator.h"

namespace kvscope {
namespace {

// Runs body(comm) on one thread per rank and joins them.
void run_ranks(int32_t n, const std::function<void(Communicator&)>& body) {
  InProcessGroup group(n);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < n; ++r) threads.emplace_back([&, r] { body(group.communicator(r)); });
  for (auto& t : threads) t.join();
}

// Values whose sum depends on the association, so a wrong order shows. A
// table, so that the compiler cannot contract the arithmetic differently at
// two call sites.
float value(int32_t rank, int64_t i) {
  static const std::vector<float> table = [] {
    const float big[] = {1e8f, -1e8f, 3.0f, 1e-3f};
    std::vector<float> t(4 * 128);
    for (size_t k = 0; k < t.size(); ++k) {
      volatile float scaled = 0.37f * static_cast<float>(k % 11);
      t[k] = big[k / 128] + scaled;
    }
    return t;
  }();
  return table[static_cast<size_t>((rank % 4) * 128 + i % 128)];
}

const int64_t kLengths[] = {1, 7, 17, 97};

class CommunicatorTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(CommunicatorTest, AllReduceSumsInRankOrderOnEveryRank) {
  const int32_t n = GetParam();
  for (int64_t len : kLengths) {
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    run_ranks(n, [&](Communicator& c) {
      EXPECT_EQ(c.world_size(), n);
      std::vector<float> data(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; ++i) data[static_cast<size_t>(i)] = value(c.rank(), i);
      c.all_reduce_sum(data.data(), len);
      out[static_cast<size_t>(c.rank())] = data;
    });
    for (int64_t i = 0; i < len; ++i) {
      float expected = value(0, i);
      for (int32_t r = 1; r < n; ++r) expected += value(r, i);
      for (int32_t r = 0; r < n; ++r) {
        const float got = out[static_cast<size_t>(r)][static_cast<size_t>(i)];
        EXPECT_EQ(std::memcmp(&got, &expected, sizeof(float)), 0) << "rank " << r << " i " << i << " len " << len;
      }
    }
  }
}

TEST_P(CommunicatorTest, AllGatherPutsEachRankInItsPlace) {
  const int32_t n = GetParam();
  for (int64_t len : kLengths) {
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    run_ranks(n, [&](Communicator& c) {
      std::vector<float> mine(static_cast<size_t>(len)), all(static_cast<size_t>(len * n), -1.0f);
      for (int64_t i = 0; i < len; ++i) mine[static_cast<size_t>(i)] = value(c.rank(), i);
      c.all_gather(mine.data(), len, all.data());
      out[static_cast<size_t>(c.rank())] = all;
    });
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t src = 0; src < n; ++src) {
        for (int64_t i = 0; i < len; ++i) {
          EXPECT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(src * len + i)], value(src, i));
        }
      }
    }
  }
}

TEST_P(CommunicatorTest, BroadcastCopiesTheRootsData) {
  const int32_t n = GetParam();
  for (int32_t root = 0; root < n; ++root) {
    for (int64_t len : kLengths) {
      std::vector<std::vector<float>> out(static_cast<size_t>(n));
      run_ranks(n, [&](Communicator& c) {
        std::vector<float> data(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) data[static_cast<size_t>(i)] = value(c.rank(), i);
        c.broadcast(data.data(), len, root);
        out[static_cast<size_t>(c.rank())] = data;
      });
      for (int32_t r = 0; r < n; ++r) {
        for (int64_t i = 0; i < len; ++i) EXPECT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(i)], value(root, i));
      }
    }
  }
}

// The last rank arrives late; nobody may leave the barrier before it came.
TEST_P(CommunicatorTest, BarrierWaitsForTheLastRank) {
  const int32_t n = GetParam();
  std::atomic<bool> last_arrived{false};
  std::atomic<int32_t> left_early{0};
  run_ranks(n, [&](Communicator& c) {
    if (c.rank() == n - 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      last_arrived = true;
    }
    c.barrier();
    if (!last_arrived) ++left_early;
  });
  EXPECT_EQ(left_early.load(), 0);
}

// Many collectives back to back: a barrier that let a fast rank through twice,
// or a buffer reused before the others read it, shows up as a wrong sum.
TEST_P(CommunicatorTest, RepeatedUseStaysCorrect) {
  const int32_t n = GetParam();
  std::atomic<int32_t> wrong{0};
  run_ranks(n, [&](Communicator& c) {
    std::vector<float> data(17), all(static_cast<size_t>(17 * n));
    for (int32_t iter = 0; iter < 500; ++iter) {
      for (float& x : data) x = static_cast<float>(c.rank() + iter);
      c.all_reduce_sum(data.data(), 17);
      const float expected = static_cast<float>(n * iter + n * (n - 1) / 2);
      for (float x : data) wrong += x != expected;
      for (float& x : data) x = static_cast<float>(c.rank() * 1000 + iter);
      c.all_gather(data.data(), 17, all.data());
      for (int32_t r = 0; r < n; ++r) wrong += all[static_cast<size_t>(r * 17)] != static_cast<float>(r * 1000 + iter);
      if (iter % 7 == 0) c.barrier();
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CommunicatorTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace kvscope
