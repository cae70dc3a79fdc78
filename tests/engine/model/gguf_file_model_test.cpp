// GgufFile on the default model (label: model; skips when the file is absent).
#include <gtest/gtest.h>

#include <chrono>

#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

TEST(GgufFileModel, DefaultModelLoads) {
  const std::string path = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kDefaultModel);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = GgufFile::open(path);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  RecordProperty("open_ms", static_cast<int>(ms));
  EXPECT_LT(ms, 2000.0) << "opening should only parse headers";
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.tensors().size(), 272u);
  const GgufTensorInfo* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::Q4_1);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{576, 576}));
  EXPECT_EQ(q->num_bytes, 576u / 32 * 20 * 576);
  const std::vector<std::string>* tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->size(), 49152u);
  EXPECT_EQ(f.get_int("llama.block_count"), 30);
}

TEST(GgufFileModel, GemmaLoads) {
  const std::string path = test::gemma_model_path();
  KVSCOPE_REQUIRE_DATA(!path.empty(), test::TestData::kGemmaModel);
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)->get_string("general.architecture"), "gemma3");
  EXPECT_NE((*r)->find_tensor("token_embd.weight"), nullptr);
}

}  // namespace
}  // namespace kvscope
