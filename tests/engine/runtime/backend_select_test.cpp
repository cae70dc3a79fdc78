// The `backend` setting (label `unit`): what cpu, cuda and auto become for
// every kind of machine (no CUDA in the build, no device, a device: faked
// probes), what they become on this one, that backend = cuda fails loading
// and reconfiguring with the reason while auto loads on the CPU and says why
// (here: no device, or the tiny F32 model the CUDA backend refuses), and that
// the settings parser refuses a value that is not a backend.
#include <gtest/gtest.h>

#include "kvscope/engine.h"
#include "kvscope/setting_table.h"
#include "runtime/backend_select.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

CudaProbe no_cuda_build() {
  CudaProbe p;
  p.problem = "built without CUDA";
  return p;
}

CudaProbe no_device() {
  CudaProbe p;
  p.built_with_cuda = true;
  p.problem = "cudaGetDeviceCount: no CUDA-capable device is detected";
  return p;
}

CudaProbe h100() {
  CudaProbe p;
  p.built_with_cuda = true;
  p.num_devices = 1;
  p.device_name = "NVIDIA H100 80GB HBM3";
  return p;
}

TEST(BackendSelect, CpuIsAlwaysTheCpu) {
  for (const CudaProbe& probe : {no_cuda_build(), no_device(), h100()}) {
    auto c = choose_backend(BackendKind::Cpu, probe);
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(c->kind, BackendKind::Cpu);
    EXPECT_EQ(c->reason, "CPU: backend = cpu");
  }
}

TEST(BackendSelect, AutoTakesTheCpuAndSaysWhy) {
  auto build = choose_backend(BackendKind::Auto, no_cuda_build());
  ASSERT_TRUE(build.ok());
  EXPECT_EQ(build->kind, BackendKind::Cpu);
  EXPECT_EQ(build->reason, "CPU: this build has no CUDA backend (built with KVSCOPE_CUDA=OFF)");

  auto device = choose_backend(BackendKind::Auto, no_device());
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(device->kind, BackendKind::Cpu);
  EXPECT_EQ(device->reason, "CPU: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)");
}

TEST(BackendSelect, ADeviceMeansCuda) {
  auto gpu = choose_backend(BackendKind::Auto, h100());
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->kind, BackendKind::Cuda);
  EXPECT_EQ(gpu->reason, "CUDA: NVIDIA H100 80GB HBM3 found (backend = auto)");
  auto asked = choose_backend(BackendKind::Cuda, h100());
  ASSERT_TRUE(asked.ok()) << asked.error();
  EXPECT_EQ(asked->kind, BackendKind::Cuda);
  EXPECT_EQ(asked->reason, "CUDA: NVIDIA H100 80GB HBM3 (backend = cuda)");
}

TEST(BackendSelect, CudaWhereItCannotRunIsAnErrorSayingWhy) {
  auto build = choose_backend(BackendKind::Cuda, no_cuda_build());
  ASSERT_FALSE(build.ok());
  EXPECT_EQ(build.error(), "backend = cuda cannot run here: this build has no CUDA backend (built with "
                           "KVSCOPE_CUDA=OFF); use backend = cpu or auto");
  auto device = choose_backend(BackendKind::Cuda, no_device());
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.error().find("no CUDA device (cudaGetDeviceCount"), std::string::npos) << device.error();
}

TEST(BackendSelect, ThisMachineMatchesItsProbe) {
  const CudaProbe probe = probe_cuda();
  if (!probe.built_with_cuda) {
    EXPECT_EQ(probe.problem, "built without CUDA");
  }
  auto mine = choose_backend(BackendKind::Auto);
  auto expected = choose_backend(BackendKind::Auto, probe);
  ASSERT_TRUE(mine.ok() && expected.ok());
  EXPECT_EQ(mine->kind, probe.built_with_cuda && probe.num_devices > 0 ? BackendKind::Cuda : BackendKind::Cpu);
  EXPECT_EQ(mine->kind, expected->kind);
  EXPECT_EQ(mine->reason, expected->reason);
}

TEST(BackendSetting, ParsesTheThreeAndRefusesOthers) {
  EngineConfig c;
  EXPECT_EQ(c.backend, BackendKind::Auto);
  ASSERT_TRUE(set_setting(c, "backend", "CUDA").ok());
  EXPECT_EQ(c.backend, BackendKind::Cuda);
  ASSERT_TRUE(set_setting(c, "backend", " cpu ").ok());
  EXPECT_EQ(c.backend, BackendKind::Cpu);
  Status bad = set_setting(c, "backend", "gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "backend: 'gpu' is not one of cpu, cuda, auto");
  EXPECT_EQ(c.backend, BackendKind::Cpu) << "a refused value changes nothing";
  EXPECT_STREQ(backend_kind_name(BackendKind::Auto), "auto");
}

EngineConfig tiny_config() {
  static const std::string path = [] {
    const std::string p = test::tiny_model_temp_path("backend_select");
    EXPECT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, p).ok());
    return p;
  }();
  EngineConfig c;
  c.model_path = path;
  c.num_threads = 2;
  c.num_blocks = 32;
  return c;
}

TEST(BackendSetting, CudaFailsTheLoadAutoRunsOnTheCpu) {
  EngineConfig cuda = tiny_config();
  cuda.backend = BackendKind::Cuda;
  // With a device (a CUDA build on a GPU machine) the CUDA backend is there
  // but refuses the tiny model's F32 matrices, and auto falls back to the CPU.
  const CudaProbe probe = probe_cuda();
  const bool device = probe.built_with_cuda && probe.num_devices > 0;
  auto refused = Engine::create(cuda);
  ASSERT_FALSE(refused.ok());
  const std::string refusal =
      device ? "backend = cuda cannot run this model: output (the LM head) is F32" : "backend = cuda cannot run here: ";
  EXPECT_EQ(refused.error().rfind(refusal, 0), 0u) << refused.error();

  auto engine = Engine::create(tiny_config());
  ASSERT_TRUE(engine.ok()) << engine.error();
  EXPECT_EQ((*engine)->model_info().backend, "cpu");
  if (device) {
    EXPECT_EQ((*engine)->model_info().backend_reason.rfind("CPU: the CUDA backend cannot run this model: ", 0), 0u)
        << (*engine)->model_info().backend_reason;
  } else {
    EXPECT_EQ((*engine)->model_info().backend_reason, choose_backend(BackendKind::Auto)->reason);
  }

  // Reconfiguring to cuda fails and changes nothing; to cpu says so.
  Status to_cuda = (*engine)->reconfigure(cuda);
  ASSERT_FALSE(to_cuda.ok());
  EXPECT_EQ(to_cuda.error(), refused.error());
  EXPECT_EQ((*engine)->config().backend, BackendKind::Auto);
  EngineConfig cpu = tiny_config();
  cpu.backend = BackendKind::Cpu;
  ASSERT_TRUE((*engine)->reconfigure(cpu).ok());
  EXPECT_EQ((*engine)->model_info().backend_reason, "CPU: backend = cpu");
  GenerationRequest r;
  r.prompt_tokens = {5, 6, 7, 8};
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 3;
  int32_t num_tokens = 0;
  r.on_event = [&](const TokenEvent& e) { num_tokens += e.token >= 0; };
  ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  (*engine)->run_until_idle();
  EXPECT_EQ(num_tokens, 3) << "the engine runs after the refused reconfigure";
}

}  // namespace
}  // namespace kvscope
