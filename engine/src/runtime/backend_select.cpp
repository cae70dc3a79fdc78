// Choosing the backend; see kvscope/backend_choice.h and runtime/backend_select.h.
#include "runtime/backend_select.h"

#include <fmt/format.h>

#include "model/model_loader.h"
#if KVSCOPE_HAVE_CUDA
#include "runtime/cuda_weights.h"
#endif

namespace kvscope {
namespace {

// Why the CUDA backend cannot run here; empty when it can (a CUDA build and a
// device). Whether it can run the model is only known once the model is
// loaded: the engine then asks cuda_unsupported() (runtime/cuda_weights.h).
std::string why_not_cuda(const CudaProbe& probe) {
  if (!probe.built_with_cuda) return "this build has no CUDA backend (built with KVSCOPE_CUDA=OFF)";
  if (probe.num_devices == 0) return fmt::format("no CUDA device ({})", probe.problem);
  return {};
}

}  // namespace

bool build_has_cuda() {
#if KVSCOPE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

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
  if (why.empty()) {
    return BackendChoice{BackendKind::Cuda, requested == BackendKind::Cuda
                                                ? fmt::format("CUDA: {} (backend = cuda)", probe.device_name)
                                                : fmt::format("CUDA: {} found (backend = auto)", probe.device_name)};
  }
  if (requested == BackendKind::Cuda) {
    return Error{fmt::format("backend = cuda cannot run here: {}; use backend = cpu or auto", why)};
  }
  return BackendChoice{BackendKind::Cpu, fmt::format("CPU: {}", why)};
}

Result<BackendChoice> choose_backend(BackendKind requested) { return choose_backend(requested, probe_cuda()); }

Result<BackendChoice> settle_backend(BackendChoice choice, [[maybe_unused]] const ModelWeights& weights,
                                     [[maybe_unused]] const EngineConfig& config) {
#if KVSCOPE_HAVE_CUDA
  if (choice.kind == BackendKind::Cuda) {
    if (std::string why = cuda_unsupported(weights, config); !why.empty()) {
      if (config.backend == BackendKind::Cuda) {
        return Error{fmt::format("backend = cuda cannot run this model: {}; use backend = cpu or auto", why)};
      }
      return BackendChoice{BackendKind::Cpu, fmt::format("CPU: the CUDA backend cannot run this model: {}", why)};
    }
  }
#endif
  return choice;
}

Result<BackendChoice> choose_backend_for_model(const EngineConfig& config, const std::string& model_path) {
  auto choice = choose_backend(config.backend);
  if (!choice.ok() || choice->kind != BackendKind::Cuda) return choice;
  auto model = load_model(model_path);  // maps the file: what the CUDA backend can run depends on its tensors
  if (!model.ok()) return Error{model.error()};
  return settle_backend(std::move(choice).value(), *model->weights, config);
}

std::optional<DeviceMemory> probe_device_memory(const BackendChoice& choice, int64_t weight_bytes) {
  if (choice.kind != BackendKind::Cuda) return std::nullopt;
  const CudaProbe probe = probe_cuda(/*with_memory=*/true);
  DeviceMemory d;
  d.free_bytes = static_cast<int64_t>(probe.free_bytes);
  d.total_bytes = static_cast<int64_t>(probe.total_bytes);
  d.weight_bytes = weight_bytes;
  return d;
}

}  // namespace kvscope
