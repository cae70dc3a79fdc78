// libFuzzer target for the GGUF reader: any byte string must parse or fail
// with an Error, never crash, hang or read outside the buffer (ASan).
// Run: scripts/run_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = kvscope::GgufFile::from_memory(data, size, "fuzz.gguf");
  if (!file.ok()) {
    if (file.error().empty()) __builtin_trap();  // every failure carries a message
    return 0;
  }
  // Touch what a loader touches: every value's rendering, every tensor's bytes.
  size_t sink = 0;
  for (const auto& [key, text] : (*file)->describe_metadata()) sink += key.size() + text.size();
  for (const auto& [key, value] : (*file)->metadata()) {
    sink += (*file)->get_string_array(key) ? 1 : 0;
    sink += (*file)->get_float_array(key).has_value() + (*file)->get_int_array(key).has_value();
    sink += (*file)->get_int(key).value_or(0) & 1;
    (void)value;
  }
  for (const kvscope::GgufTensorInfo& t : (*file)->tensors()) {
    if (t.num_bytes > 0) sink += t.data[0] + t.data[t.num_bytes - 1];
    if ((*file)->find_tensor(t.name) != &t) __builtin_trap();
  }
  volatile size_t keep = sink;
  (void)keep;
  return 0;
}
