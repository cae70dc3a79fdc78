// Hugging Face directories: a random tiny model written both as GGUF and as an
// HF safetensors directory must give the same logits (ModelRunner) and the same
// greedy tokens (Engine). This pins the Q/K row permutation of llama GGUFs:
// adjacent-pair rope on permuted rows == half-split rope on HF rows. Also the
// safetensors and config.json error paths, and tiny Gemma 3 / quantised GGUFs.
//
// Run: ctest -R hf_model_test   (label: unit)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "kernels/cpu/thread_pool.h"
#include "kernels/reference/dequantize.h"
#include "kv/kv_storage.h"
#include "kvscope/engine.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "model/hf_model_loader.h"
#include "model/safetensors_file.h"
#include "runtime/model_runner.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;
using test::TinyModelSpec;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("kvscope_hf_") + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised names contain '/'
    path_ = (fs::path(::testing::TempDir()) / name).string();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// Replaces the one occurrence of `from` in a file.
void edit_file(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = read_text(path);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from << " not in " << path;
  text.replace(at, from.size(), to);
  write_text(path, text);
}

std::shared_ptr<const ModelWeights> load_gguf(const std::string& path) {
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.error();
  if (!file.ok()) return nullptr;
  auto w = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  EXPECT_TRUE(w.ok()) << w.error();
  return w.ok() ? std::move(w).value() : nullptr;
}

std::shared_ptr<const ModelWeights> load_hf(const std::string& dir) {
  auto m = load_hf_directory(dir);
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? m->weights : nullptr;
}

// Logits of every prompt row of a prefill of tokens[0..n-2], then of one
// decode step with tokens[n-1] (which reads the cache): [n][vocab].
std::vector<float> run_logits(std::shared_ptr<const ModelWeights> weights, const std::vector<int32_t>& tokens) {
  const ModelConfig& c = weights->config;
  const int32_t block_size = 4;
  const int32_t n = static_cast<int32_t>(tokens.size());
  const int32_t num_blocks = (n + block_size - 1) / block_size;
  KvStorage kv(c.num_layers, num_blocks, block_size, c.kv_size());
  ThreadPool pool(2);
  ModelRunner runner(weights, kv, pool);
  std::vector<int32_t> table(static_cast<size_t>(num_blocks));
  for (int32_t b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = num_blocks - 1 - b;  // not identity
  auto slot = [&](int32_t pos) { return int64_t{table[static_cast<size_t>(pos / block_size)]} * block_size + pos % block_size; };

  std::vector<float> all, logits;
  StepBatch prefill;
  std::vector<int64_t> slots;
  for (int32_t p = 0; p + 1 < n; ++p) slots.push_back(slot(p));
  prefill.add_sequence(tokens.data(), n - 1, 0, slots.data(), table, /*want_logits=*/true);
  prefill.logits_rows.clear();
  for (int32_t r = 0; r < n - 1; ++r) prefill.logits_rows.push_back(r);
  runner.forward(prefill, logits);
  all = logits;

  StepBatch decode;
  const int64_t last_slot = slot(n - 1);
  decode.add_sequence(tokens.data() + n - 1, 1, n - 1, &last_slot, table, true);
  runner.forward(decode, logits);
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

const std::vector<int32_t> kPrompt = {test::kTinyImStart, 72, 101, 108, 108, 111, 32, 259, 44, 32, 100, 260, 33,
                                      test::kTinyImEnd, 10, 7, 200, 31};

// Greedy generation through the whole engine.
std::vector<int32_t> generate(const std::string& model_path, GenerationRequest req, int32_t max_tokens = 16) {
  EngineConfig cfg;
  cfg.model_path = model_path;
  cfg.num_threads = 2;
  cfg.block_size = 4;
  cfg.num_blocks = 64;
  auto engine = Engine::create(cfg);
  EXPECT_TRUE(engine.ok()) << engine.error();
  if (!engine.ok()) return {};
  std::vector<int32_t> out;
  req.sampling.temperature = 0.0f;
  req.sampling.max_tokens = max_tokens;
  req.sampling.ignore_eos = true;
  req.on_event = [&out](const TokenEvent& ev) {
    if (ev.token >= 0) out.push_back(ev.token);
  };
  auto id = (*engine)->submit(std::move(req));
  EXPECT_TRUE(id.ok()) << id.error();
  (*engine)->run_until_idle();
  return out;
}

std::vector<int32_t> generate_tokens(const std::string& model_path, const std::vector<int32_t>& prompt) {
  GenerationRequest req;
  req.prompt_tokens = prompt;
  return generate(model_path, std::move(req));
}

// ---- GGUF == HF -------------------------------------------------------------

struct EquivCase {
  const char* name;
  TinyModelSpec spec;
};

TinyModelSpec spec_with(void (*edit)(TinyModelSpec&)) {
  TinyModelSpec s;
  edit(s);
  return s;
}

class GgufVsHf : public ::testing::TestWithParam<EquivCase> {};

TEST_P(GgufVsHf, SameLogits) {
  const TinyModelSpec& spec = GetParam().spec;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "tiny.gguf").ok());
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir / "hf").ok());
  auto gguf = load_gguf(dir / "tiny.gguf");
  auto hf = load_hf(dir / "hf");
  ASSERT_TRUE(gguf && hf);
  EXPECT_EQ(hf->config.rope_style, RopeStyle::kHalfSplit);
  EXPECT_EQ(hf->config.qkv_bias, spec.qkv_bias);
  EXPECT_EQ(hf->config.vocab_size, spec.vocab);

  const std::vector<float> a = run_logits(gguf, kPrompt);
  const std::vector<float> b = run_logits(hf, kPrompt);
  ASSERT_EQ(a.size(), kPrompt.size() * static_cast<size_t>(spec.vocab));
  EXPECT_TRUE(all_finite(a));
  EXPECT_LT(max_abs_diff(a, b), 1e-4f);
}

TEST_P(GgufVsHf, SameGreedyTokens) {
  const TinyModelSpec& spec = GetParam().spec;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "tiny.gguf").ok());
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir / "hf").ok());
  const std::vector<int32_t> a = generate_tokens(dir / "tiny.gguf", kPrompt);
  const std::vector<int32_t> b = generate_tokens(dir / "hf", kPrompt);
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(
    Tiny, GgufVsHf,
    ::testing::Values(
        EquivCase{"llama_f32", TinyModelSpec{}},
        EquivCase{"llama_untied_gqa1", spec_with([](TinyModelSpec& s) {
                    s.tied = false;
                    s.kv_heads = 1;
                    s.head_dim = 32;  // hidden 64 != heads * head_dim 128
                    s.seed = 7;
                  })},
        EquivCase{"qwen2_bias", spec_with([](TinyModelSpec& s) {
                    s.qkv_bias = true;
                    s.seed = 3;
                  })},
        EquivCase{"llama_f16_sharded", spec_with([](TinyModelSpec& s) {
                    s.matrix_type = TensorType::F16;
                    s.hf_matrix_type = TensorType::F16;
                    s.hf_num_shards = 3;
                    s.seed = 11;
                  })},
        EquivCase{"llama_bf16", spec_with([](TinyModelSpec& s) {
                    s.matrix_type = TensorType::BF16;
                    s.hf_matrix_type = TensorType::BF16;
                    s.seed = 5;
                  })}),
    [](const ::testing::TestParamInfo<EquivCase>& info) { return std::string(info.param.name); });

// A Q8_0 GGUF against an F32 directory of the same (dequantised) values: the
// quantised matmul may round activations, so they only agree loosely.
TEST(GgufVsHfQuantised, Q8WeightsCloseToF32) {
  TinyModelSpec spec;
  spec.matrix_type = TensorType::Q8_0;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "tiny.gguf").ok());
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir / "hf").ok());
  const std::vector<float> a = run_logits(load_gguf(dir / "tiny.gguf"), kPrompt);
  const std::vector<float> b = run_logits(load_hf(dir / "hf"), kPrompt);
  ASSERT_EQ(a.size(), b.size());
  double err = 0.0, ref = 0.0;  // normalised error, as the op tests measure it
  for (size_t i = 0; i < a.size(); ++i) {
    err += (a[i] - b[i]) * double{a[i] - b[i]};
    ref += b[i] * double{b[i]};
  }
  EXPECT_LT(std::sqrt(err / ref), 0.05) << "max abs diff " << max_abs_diff(a, b);
}

// The equivalence above is not vacuous: HF rows with adjacent-pair rope differ.
TEST(HfModel, WrongRopeStyleChangesLogits) {
  TinyModelSpec spec;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir / "hf").ok());
  auto hf = load_hf(dir / "hf");
  ASSERT_TRUE(hf);
  auto wrong = std::make_shared<ModelWeights>(*hf);
  wrong->config.rope_style = RopeStyle::kAdjacentPairs;
  EXPECT_GT(max_abs_diff(run_logits(hf, kPrompt), run_logits(wrong, kPrompt)), 1e-3f);
}

TEST(HfModel, EngineLoadsDirectoryWithTokenizerAndChatTemplate) {
  TinyModelSpec spec;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "tiny.gguf").ok());
  ASSERT_TRUE(test::write_tiny_hf_dir(spec, dir / "hf").ok());
  EngineConfig cfg;
  cfg.model_path = dir / "hf";
  cfg.num_threads = 1;
  cfg.num_blocks = 16;
  auto hf = Engine::create(cfg);
  ASSERT_TRUE(hf.ok()) << hf.error();
  cfg.model_path = dir / "tiny.gguf";
  auto gguf = Engine::create(cfg);
  ASSERT_TRUE(gguf.ok()) << gguf.error();

  const ModelInfo& info = (*hf)->model_info();
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.num_layers, spec.layers);
  EXPECT_EQ(info.vocab_size, spec.vocab);
  EXPECT_EQ(info.chat_template_family, "chatml");

  const std::string text = "<|im_start|>user\nthe cat ate in the rain<|im_end|>\n";
  const std::vector<int32_t> ids = (*hf)->tokenize(text, true);
  EXPECT_EQ(ids, (*gguf)->tokenize(text, true));
  EXPECT_EQ(ids.front(), test::kTinyImStart);
  EXPECT_EQ((*hf)->detokenize((*hf)->tokenize("the rain", false)), "the rain");

  const std::vector<ChatMessage> chat = {{"user", "the cat"}};
  EXPECT_EQ((*hf)->render_chat(chat, true), (*gguf)->render_chat(chat, true));
  GenerationRequest a, b;
  a.messages = chat;
  b.messages = chat;
  EXPECT_EQ(generate(dir / "hf", std::move(a)), generate(dir / "tiny.gguf", std::move(b)));
}

// ---- tiny models on their own -------------------------------------------------

TEST(TinyModel, QuantiserAgreesWithReferenceDequantiser) {
  std::vector<float> x(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + 0.01f * i);
  for (TensorType t : {TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_1}) {
    const std::vector<uint8_t> q = test::quantize_row(t, x.data(), 96);
    ASSERT_EQ(q.size(), row_bytes(t, 96)) << traits_of(t).name;
    std::vector<float> y(96);
    dequantize_row_ref(t, q.data(), y.data(), 96);
    for (size_t b = 0; b < 96; b += 32) {
      float lo = x[b], hi = x[b], amax = 0.0f;
      for (size_t j = b; j < b + 32; ++j) {
        lo = std::min(lo, x[j]);
        hi = std::max(hi, x[j]);
        amax = std::max(amax, std::fabs(x[j]));
      }
      // Half a quantisation step, plus f16 rounding of the scale (and min).
      const float tol = t == TensorType::Q8_0 ? amax / 127.0f * 0.5f + amax * 2e-3f
                      : t == TensorType::Q4_1 ? (hi - lo) / 15.0f * 0.5f + 2e-3f * (std::fabs(lo) + hi - lo)
                      : t == TensorType::F16  ? amax * 1e-3f
                                              : amax * 8e-3f;
      for (size_t j = b; j < b + 32; ++j) EXPECT_NEAR(y[j], x[j], tol) << traits_of(t).name << " element " << j;
    }
  }
}

TEST(TinyModel, QuantisedLlamaGgufsGenerateDeterministically) {
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_1, TensorType::F16}) {
    TinyModelSpec spec;
    spec.matrix_type = t;
    TempDir dir;
    ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "tiny.gguf").ok());
    const std::vector<float> logits = run_logits(load_gguf(dir / "tiny.gguf"), kPrompt);
    EXPECT_TRUE(all_finite(logits)) << traits_of(t).name;
    const std::vector<int32_t> a = generate_tokens(dir / "tiny.gguf", kPrompt);
    EXPECT_EQ(a.size(), 16u) << traits_of(t).name;
    EXPECT_EQ(a, generate_tokens(dir / "tiny.gguf", kPrompt)) << traits_of(t).name;
  }
}

TEST(TinyModel, Gemma3GgufLoadsAndGeneratesDeterministically) {
  TinyModelSpec spec;
  spec.arch = Architecture::Gemma3;
  spec.heads = 4;
  spec.kv_heads = 1;
  spec.head_dim = 32;
  spec.sliding_window = 8;  // shorter than the prompt + generation
  spec.seed = 21;
  TempDir dir;
  ASSERT_TRUE(test::write_tiny_gguf(spec, dir / "gemma.gguf").ok());
  auto w = load_gguf(dir / "gemma.gguf");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->config.arch, Architecture::Gemma3);
  EXPECT_EQ(w->config.sliding_window, 8);
  EXPECT_TRUE(w->config.qk_norm);
  const std::vector<float> logits = run_logits(w, kPrompt);
  EXPECT_TRUE(all_finite(logits));
  const std::vector<int32_t> a = generate_tokens(dir / "gemma.gguf", kPrompt);
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a, generate_tokens(dir / "gemma.gguf", kPrompt));
  EXPECT_FALSE(test::write_tiny_hf_dir(spec, dir / "hf").ok());  // no Gemma HF loader
}

// ---- safetensors errors -------------------------------------------------------

std::vector<uint8_t> f32_bytes(std::initializer_list<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

// u64 header length + header text + data.
std::vector<uint8_t> raw_file(const std::string& header, size_t num_data_bytes, uint64_t header_len_override = 0) {
  std::vector<uint8_t> out;
  const uint64_t len = header_len_override ? header_len_override : header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>((len >> (8 * i)) & 0xff));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + num_data_bytes, 0);
  return out;
}

std::string open_error(const std::vector<uint8_t>& bytes) {
  auto f = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "test.safetensors");
  return f.ok() ? std::string("(opened)") : f.error();
}

// A block_count the file cannot back is refused before the layers are
// allocated (the weight-loader fuzzer found 2^24 layers asking for 7 GB).
TEST(TinyModel, LayerCountBeyondTheTensorsIsAnError) {
  const std::string path = (fs::temp_directory_path() / ("kvscope_layers_" + std::to_string(::getpid()) + ".gguf")).string();
  test::TinyModelSpec spec;
  spec.layers = 2;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  // The value follows the key and its u32 type tag.
  std::string bytes = read_text(path);
  const std::string key = "llama.block_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  const uint32_t huge = 1u << 24;
  std::memcpy(&bytes[at + key.size() + 4], &huge, sizeof huge);
  write_text(path, bytes);
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error();
  auto w = load_gguf_weights(std::shared_ptr<const GgufFile>(std::move(file).value()));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find("says it has 16777216 layers"), std::string::npos) << w.error();
  fs::remove(path);
}

TEST(Safetensors, ReadsValidFile) {
  const std::vector<uint8_t> bytes = test::build_safetensors(
      {{"a.weight", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})}, {"b.bias", "F16", {1}, {0x00, 0x3c}}},
      {{"format", "pt"}});
  auto f = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "ok.safetensors");
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  const SafetensorsTensor* a = (*f)->find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  float v[4];
  std::memcpy(v, a->data, 16);
  EXPECT_EQ(v[3], 4.0f);
  EXPECT_EQ((*f)->find("b.bias")->dtype, SafetensorsDtype::F16);
  EXPECT_EQ((*f)->find("missing"), nullptr);
}

TEST(Safetensors, RejectsMalformedFiles) {
  const std::string w = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  EXPECT_EQ(open_error(raw_file(w, 16)), "(opened)");

  EXPECT_NE(open_error({1, 2, 3}).find("too short"), std::string::npos);
  // Truncated: the header claims more bytes than the file has.
  EXPECT_NE(open_error(raw_file(w, 16, 4096)).find("header length 4096"), std::string::npos);
  EXPECT_NE(open_error(raw_file("[1, 2]", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(open_error(raw_file("{\"w\": ", 0)).find("not valid JSON"), std::string::npos);

  // Offsets past the data section, and offsets that disagree with the shape.
  std::string e = open_error(raw_file(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,64]}})", 16));
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the data section"), std::string::npos) << e;
  e = open_error(raw_file(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12));
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("needs 16"), std::string::npos) << e;
  e = open_error(raw_file(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[16,0]}})", 16));
  EXPECT_NE(e.find("'w'"), std::string::npos) << e;
  e = open_error(raw_file(R"({"w":{"dtype":"F32","shape":[2,-2],"data_offsets":[0,16]}})", 16));
  EXPECT_NE(e.find("shape"), std::string::npos) << e;

  // Unknown dtype: the message names the tensor and the dtype.
  e = open_error(raw_file(R"({"layer.w":{"dtype":"Q9","shape":[4],"data_offsets":[0,4]}})", 4));
  EXPECT_NE(e.find("'layer.w'"), std::string::npos) << e;
  EXPECT_NE(e.find("'Q9'"), std::string::npos) << e;

  // Overlapping tensors, and bytes no tensor claims.
  e = open_error(raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                          R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", 24));
  EXPECT_NE(e.find("overlap"), std::string::npos) << e;
  e = open_error(raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 20));
  EXPECT_NE(e.find("cover 16"), std::string::npos) << e;
  e = open_error(raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[4,20]}})", 20));
  EXPECT_NE(e.find("belong to no tensor"), std::string::npos) << e;
  e = open_error(raw_file(R"({"__metadata__":{"n":1}})", 0));
  EXPECT_NE(e.find("__metadata__"), std::string::npos) << e;
}

// ---- HF directory errors ------------------------------------------------------

class HfDirErrors : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(test::write_tiny_hf_dir(TinyModelSpec{}, dir_ / "hf").ok()); }
  std::string load_error() {
    auto m = load_hf_directory(dir_ / "hf");
    return m.ok() ? std::string("(loaded)") : m.error();
  }
  // Rewrites model.safetensors through `edit` on its entries.
  void rewrite_tensors(void (*edit)(std::vector<test::SafetensorsEntry>&)) {
    const std::string path = dir_ / "hf/model.safetensors";
    std::vector<test::SafetensorsEntry> entries;
    {
      auto f = SafetensorsFile::open(path);
      ASSERT_TRUE(f.ok()) << f.error();
      for (const SafetensorsTensor& t : (*f)->tensors()) {
        entries.push_back({t.name, std::string(safetensors_dtype_name(t.dtype)), t.shape,
                           std::vector<uint8_t>(t.data, t.data + t.num_bytes)});
      }
    }
    edit(entries);
    const std::vector<uint8_t> bytes = test::build_safetensors(entries);
    write_text(path, std::string(bytes.begin(), bytes.end()));
  }
  TempDir dir_;
};

TEST_F(HfDirErrors, LoadsWhenUntouched) { EXPECT_EQ(load_error(), "(loaded)"); }

TEST_F(HfDirErrors, MissingConfig) {
  fs::remove(dir_ / "hf/config.json");
  EXPECT_NE(load_error().find("config.json"), std::string::npos);
  EXPECT_TRUE(is_hf_directory(dir_ / "hf"));  // a directory: the HF loader explains what is missing
  EngineConfig cfg;
  cfg.model_path = dir_ / "hf";
  auto e = Engine::create(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("no config.json"), std::string::npos) << e.error();
}

TEST_F(HfDirErrors, UnsupportedArchitecture) {
  edit_file(dir_ / "hf/config.json", "\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"");
  const std::string e = load_error();
  EXPECT_NE(e.find("GPT2LMHeadModel"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported"), std::string::npos) << e;
}

TEST_F(HfDirErrors, RopeScaling) {
  edit_file(dir_ / "hf/config.json", "\"rope_scaling\": null",
            R"("rope_scaling": {"type": "linear", "factor": 2.0})");
  EXPECT_NE(load_error().find("rope_scaling"), std::string::npos);
}

TEST_F(HfDirErrors, WrongShapeNamesTensorAndBothShapes) {
  edit_file(dir_ / "hf/config.json", "\"intermediate_size\": 128", "\"intermediate_size\": 96");
  const std::string e = load_error();
  EXPECT_NE(e.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[128, 64]"), std::string::npos) << e;
  EXPECT_NE(e.find("[96, 64]"), std::string::npos) << e;
}

TEST_F(HfDirErrors, MissingTensor) {
  rewrite_tensors([](std::vector<test::SafetensorsEntry>& t) {
    std::erase_if(t, [](const auto& e) { return e.name == "model.layers.1.mlp.up_proj.weight"; });
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("'model.layers.1.mlp.up_proj.weight' is missing"), std::string::npos) << e;
}

TEST_F(HfDirErrors, UnsupportedDtype) {
  rewrite_tensors([](std::vector<test::SafetensorsEntry>& t) {
    for (auto& e : t) {
      if (e.name == "model.layers.0.self_attn.k_proj.weight") e.dtype = "I32";  // same byte count
    }
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("I32"), std::string::npos) << e;
}

TEST_F(HfDirErrors, UntiedWithoutLmHead) {
  edit_file(dir_ / "hf/config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
  EXPECT_NE(load_error().find("lm_head.weight"), std::string::npos);
}

TEST_F(HfDirErrors, IndexNamingMissingShardOrEscapingPath) {
  write_text(dir_ / "hf/model.safetensors.index.json",
             R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})");
  EXPECT_NE(load_error().find("model-00001-of-00002.safetensors"), std::string::npos);
  write_text(dir_ / "hf/model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": "../x.safetensors"}})");
  EXPECT_NE(load_error().find("not a file name"), std::string::npos);
}

TEST(HfEngine, DirectoryErrorsComeBackFromCreate) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  write_text(dir / "empty/config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  EngineConfig cfg;
  cfg.model_path = dir / "empty";
  auto e = Engine::create(cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("num_hidden_layers"), std::string::npos) << e.error();
}

}  // namespace
}  // namespace kvscope
