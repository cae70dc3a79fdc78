// Writes seeds for the fuzzers (scripts/run_fuzz.sh):
//   gguf_fuzz_seeds GGUF_DIR [MODEL_DIR]
// GGUF_DIR gets a few small, valid GGUF files made with the test GgufWriter
// (gguf_fuzzer); MODEL_DIR, when given, gets complete tiny models of each
// architecture and weight type the loader accepts (model_loader_fuzzer), each
// small enough for the fuzzer's input limit.
#include <cstdio>
#include <string>
#include <vector>

#include "support/gguf_writer.h"
#include "support/tiny_model.h"

using kvscope::GgufValueType;
using kvscope::TensorType;
using kvscope::test::GgufWriter;

namespace {

// Tiny models under 64 KiB: one layer, hidden 32, vocabulary 259 (the
// smallest tiny_model.h writes).
int write_model_seeds(const std::string& dir) {
  using kvscope::Architecture;
  using kvscope::test::TinyModelSpec;
  std::vector<TinyModelSpec> specs;
  for (TensorType type : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_1}) {
    TinyModelSpec s;
    s.layers = 1;
    s.hidden = 32;
    s.ffn = 32;
    s.heads = 2;
    s.kv_heads = 1;
    s.head_dim = 16;
    s.vocab = 259;
    s.context_length = 64;
    s.matrix_type = type;
    specs.push_back(s);
  }
  specs[1].qkv_bias = true;  // written as qwen2
  specs[2].tied = false;
  TinyModelSpec gemma = specs[0];
  gemma.arch = Architecture::Gemma3;
  gemma.sliding_window = 16;
  specs.push_back(gemma);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string path = dir + "/tiny-model-" + std::to_string(i) + ".gguf";
    kvscope::Status s = kvscope::test::write_tiny_gguf(specs[i], path);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.error().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s GGUF_DIR [MODEL_DIR]\n", argv[0]);
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
  return argc == 3 ? write_model_seeds(argv[2]) : 0;
}
