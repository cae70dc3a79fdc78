// Writes a few small, valid GGUF files made with the test GgufWriter into the
// directory given as argv[1], as seeds for gguf_fuzzer (scripts/run_fuzz.sh).
#include <cstdio>
#include <string>
#include <vector>

#include "support/gguf_writer.h"

using kvscope::GgufValueType;
using kvscope::TensorType;
using kvscope::test::GgufWriter;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<GgufWriter> seeds(4);

  seeds[0].set_string("general.architecture", "llama");
  seeds[0].set_u32("llama.block_count", 2);
  seeds[0].set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  seeds[0].add_f32_tensor("output_norm.weight", {8}, std::vector<float>(8, 1.0f));

  const std::vector<std::string> tokens = {"<s>", "</s>", "a", "b", "ab", " "};
  seeds[1].set_string_array("tokenizer.ggml.tokens", tokens);
  seeds[1].set_f32_array("tokenizer.ggml.scores", std::vector<float>{0, 0, -1, -2, -3, -4});
  seeds[1].set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>{3, 3, 1, 1, 1, 1});
  seeds[1].set_bool("tokenizer.ggml.add_bos_token", true);

  const kvscope::test::GgufEncodedValue inner[] = {
      kvscope::test::gguf_i32_array(std::vector<int32_t>{1, 2}),
      kvscope::test::gguf_i32_array(std::vector<int32_t>{3})};
  seeds[2].set_value("nested", kvscope::test::gguf_array(GgufValueType::Array, inner));
  seeds[2].set_u64("big", 1ull << 40);
  seeds[2].add_tensor("q", TensorType::Q4_0, {32, 2}, std::vector<uint8_t>(36, 0x11));
  seeds[2].add_tensor("k", TensorType::Q8_0, {64}, std::vector<uint8_t>(68, 0x22));

  seeds[3].set_i8("i8", -3);
  seeds[3].set_f64("f64", 2.5);
  seeds[3].add_tensor("h", TensorType::F16, {4, 2, 2}, std::vector<uint8_t>(32, 0));

  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = dir + "/writer-" + std::to_string(i) + ".gguf";
    kvscope::Status s = seeds[i].write(path, i == 2 ? 64 : 32);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.error().c_str());
      return 1;
    }
  }
  return 0;
}
