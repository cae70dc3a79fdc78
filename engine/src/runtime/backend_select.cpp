// Choosing the backend; see kvscope/backend_choice.h and runtime/backend_select.h.
#include "runtime/backend_select.h"

#include <fmt/format.h>

namespace kvscope {
namespace {

// Why the CUDA backend cannot run the model here.
std::string why_not_cuda(const CudaProbe& probe) {
  if (!probe.built_with_cuda) return "this build has no CUDA backend (built with KVSCOPE_CUDA=OFF)";
  if (probe.num_devices == 0) return fmt::format("no CUDA device ({})", probe.problem);
  // kernels/cuda/ has kernels but no CudaBackend runs a forward pass with
  // them yet (issue 13); when one does, a device present means CUDA.
  return fmt::format("the CUDA backend's forward pass is not implemented yet ({} found)", probe.device_name);
}

}  // namespace

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::Cpu: return "cpu";
    case BackendKind::Cuda: return "cuda";
    case BackendKind::Auto: return "auto";
  }
  return "unknown";
}

Result<BackendChoice> choose_backend(BackendKind requested, const CudaProbe& probe) {
  if (requested == BackendKind::Cpu) return BackendChoice{BackendKind::Cpu, "CPU: backend = cpu"};
  const std::string why = why_not_cuda(probe);
  if (requested == BackendKind::Cuda) {
    return Error{fmt::format("backend = cuda cannot run here: {}; use backend = cpu or auto", why)};
  }
  return BackendChoice{BackendKind::Cpu, fmt::format("CPU: {}", why)};
}

Result<BackendChoice> choose_backend(BackendKind requested) { return choose_backend(requested, probe_cuda()); }

}  // namespace kvscope
