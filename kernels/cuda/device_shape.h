// The current device's compute capability (major) and multiprocessor count,
// read once per device and kept: launchers ask at every launch (also while a
// CUDA graph is captured, where these queries are allowed) whether Hopper's
// features apply and how many blocks fill the GPU.
#pragma once

namespace kvscope::cuda {

struct DeviceShape {
  int major = 0;  // 0: no device, or the query failed
  int sms = 0;
};

DeviceShape current_device_shape();

}  // namespace kvscope::cuda
