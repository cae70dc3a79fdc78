// libFuzzer target for the GGUF weight loader: any bytes that parse as GGUF
// must either load as a model whose every weight lies inside the input and
// has the shape the architecture asks for, or fail with a message — never
// crash, read out of bounds (ASan) or allocate without bound. Mirrors the GGUF
// branch of load_model (model_loader.cpp): weights, vocabulary, tokenizer.
// Seeds: tiny models made by GgufWriter (gguf_fuzz_seeds writes them).
// Run: scripts/run_fuzz.sh [seconds]
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/reference/dequantize.h"
#include "model/gguf_file.h"
#include "model/gguf_model_loader.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "model_loader_fuzzer: %s\n", what.c_str());
  std::abort();
}

// A loaded matrix must lie inside the input and have the rows x row_len the
// config implies; its first row must dequantise (reads the claimed type).
void check_matrix(const kvscope::WeightMatrix& m, const char* name, int64_t num_rows, int64_t row_len,
                  const uint8_t* data, size_t size) {
  if (!m.present()) fail(std::string(name) + ": loaded without data");
  if (m.num_rows != num_rows || m.row_len != row_len) {
    fail(std::string(name) + ": shape " + std::to_string(m.num_rows) + " x " + std::to_string(m.row_len) +
         ", config says " + std::to_string(num_rows) + " x " + std::to_string(row_len));
  }
  const auto* begin = static_cast<const uint8_t*>(m.data);
  if (begin < data || begin + m.num_bytes() > data + size) fail(std::string(name) + ": bytes outside the input");
  std::vector<float> row(static_cast<size_t>(row_len));
  kvscope::dequantize_row(m.type, m.data, row.data(), row_len);
}

void check_vector(const std::vector<float>& v, const char* name, size_t n, bool optional) {
  if (v.size() != n && !(optional && v.empty())) {
    fail(std::string(name) + ": " + std::to_string(v.size()) + " values, config says " + std::to_string(n));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = kvscope::GgufFile::from_memory(data, size, "fuzz.gguf");
  if (!parsed.ok()) return 0;  // the GGUF reader's own fuzzer covers this path
  std::shared_ptr<const kvscope::GgufFile> file = std::move(parsed).value();

  auto loaded = kvscope::load_gguf_weights(file);
  if (!loaded.ok()) {
    if (loaded.error().empty()) fail("load_gguf_weights failed without a message");
  } else {
    const kvscope::ModelWeights& w = **loaded;
    const kvscope::ModelConfig& c = w.config;
    const int64_t hidden = c.hidden_size, q = c.q_size(), kv = c.kv_size(), ffn = c.ffn_size;
    if (static_cast<int64_t>(w.layers.size()) != c.num_layers) fail("layer count differs from the config");
    check_matrix(w.token_embd, "token_embd", c.vocab_size, hidden, data, size);
    check_matrix(w.output, "output", c.vocab_size, hidden, data, size);
    check_vector(w.output_norm, "output_norm", hidden, false);
    for (const kvscope::LayerWeights& L : w.layers) {
      check_matrix(L.wq, "attn_q", q, hidden, data, size);
      check_matrix(L.wk, "attn_k", kv, hidden, data, size);
      check_matrix(L.wv, "attn_v", kv, hidden, data, size);
      check_matrix(L.wo, "attn_output", hidden, q, data, size);
      check_matrix(L.w_gate, "ffn_gate", ffn, hidden, data, size);
      check_matrix(L.w_up, "ffn_up", ffn, hidden, data, size);
      check_matrix(L.w_down, "ffn_down", hidden, ffn, data, size);
      check_vector(L.attn_norm, "attn_norm", hidden, false);
      check_vector(L.ffn_norm, "ffn_norm", hidden, false);
      check_vector(L.bq, "attn_q.bias", q, true);
      check_vector(L.bk, "attn_k.bias", kv, true);
      check_vector(L.bv, "attn_v.bias", kv, true);
      check_vector(L.q_norm, "attn_q_norm", c.head_dim, true);
      check_vector(L.k_norm, "attn_k_norm", c.head_dim, true);
    }
  }

  // The rest of a model file's load: its vocabulary and the tokenizer built on it.
  auto vocab = kvscope::read_vocab(*file);
  if (!vocab.ok()) {
    if (vocab.error().empty()) fail("read_vocab failed without a message");
    return 0;
  }
  auto tokenizer = kvscope::create_tokenizer(*vocab);
  if (!tokenizer.ok()) {
    if (tokenizer.error().empty()) fail("create_tokenizer failed without a message");
    return 0;
  }
  const std::vector<int32_t> ids = (*tokenizer)->encode("Hello, world! 123 \xc3\xa7" "a", false);
  (void)(*tokenizer)->decode(ids);
  return 0;
}
