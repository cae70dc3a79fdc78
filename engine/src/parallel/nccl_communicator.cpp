#include "parallel/nccl_communicator.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace kvscope {
namespace {

// A failing collective inside a forward pass cannot be recovered from here:
// report and abort, as a failing CUDA launch would.
void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "kvscope: %s failed: %s\n", what, ncclGetErrorString(r));
  std::abort();
}

void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "kvscope: %s failed: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

}  // namespace

struct NcclCommunicator::Handles {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

NcclCommunicator::NcclCommunicator(int32_t rank, int32_t world_size, int32_t device, std::unique_ptr<Handles> h)
    : rank_(rank), world_size_(world_size), device_(device), handles_(std::move(h)) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  check_cuda(cudaStreamCreate(&handles_->stream), "cudaStreamCreate");
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&barrier_word_), sizeof(float)), "cudaMalloc");
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (barrier_word_) cudaFree(barrier_word_);
  if (handles_->stream) cudaStreamDestroy(handles_->stream);
  if (handles_->comm) ncclCommDestroy(handles_->comm);
}

void NcclCommunicator::synchronize() { check_cuda(cudaStreamSynchronize(handles_->stream), "cudaStreamSynchronize"); }

void NcclCommunicator::all_reduce_sum(float* data, int64_t n) {
  check_nccl(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat, ncclSum, handles_->comm, handles_->stream),
             "ncclAllReduce");
  synchronize();
}

void NcclCommunicator::all_gather(const float* mine, int64_t n, float* all) {
  check_nccl(ncclAllGather(mine, all, static_cast<size_t>(n), ncclFloat, handles_->comm, handles_->stream),
             "ncclAllGather");
  synchronize();
}

void NcclCommunicator::broadcast(float* data, int64_t n, int32_t root) {
  check_nccl(ncclBroadcast(data, data, static_cast<size_t>(n), ncclFloat, root, handles_->comm, handles_->stream),
             "ncclBroadcast");
  synchronize();
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier: an all-reduce of one word completes on a rank only
  // after every rank has joined it.
  all_reduce_sum(barrier_word_, 1);
}

Result<std::unique_ptr<NcclGroup>> NcclGroup::create(const std::vector<int32_t>& devices) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    return Error{fmt::format("NCCL tensor parallelism needs CUDA devices; found none ({})",
                             e == cudaSuccess ? "no device" : cudaGetErrorString(e))};
  }
  for (int32_t d : devices) {
    if (d < 0 || d >= count) return Error{fmt::format("CUDA device {} does not exist (this machine has {})", d, count)};
  }
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(devices.size());
  std::vector<int> devlist(devices.begin(), devices.end());
  if (ncclResult_t r = ncclCommInitAll(comms.data(), n, devlist.data()); r != ncclSuccess) {
    return Error{fmt::format("ncclCommInitAll over {} devices failed: {}", n, ncclGetErrorString(r))};
  }
  auto group = std::unique_ptr<NcclGroup>(new NcclGroup());
  for (int r = 0; r < n; ++r) {
    auto h = std::make_unique<NcclCommunicator::Handles>();
    h->comm = comms[static_cast<size_t>(r)];
    group->comms_.emplace_back(new NcclCommunicator(r, n, devices[static_cast<size_t>(r)], std::move(h)));
  }
  return group;
}

}  // namespace kvscope
