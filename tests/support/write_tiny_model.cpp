// Writes one random tiny model (support/tiny_model.h) as a GGUF file, sized
// from the command line, for hand measurements that need an engine of a given
// speed: scripts/dev/gui_frame_times.sh loads the desktop app with one whose
// steps run at a GPU's rate on this CPU.
//   write_tiny_model PATH [--layers N] [--hidden N] [--ffn N] [--heads N]
//                         [--kv-heads N] [--head-dim N] [--context N] [--q8]
#include <CLI/CLI.hpp>

#include <cstdio>

#include "support/tiny_model.h"

int main(int argc, char** argv) {
  CLI::App app{"Writes a random tiny Llama-family model (byte-level BPE, ChatML) as GGUF."};
  std::string path;
  kvscope::test::TinyModelSpec spec;
  bool q8 = false;
  app.add_option("path", path, "the GGUF file to write")->required();
  app.add_option("--layers", spec.layers)->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--hidden", spec.hidden)->check(CLI::Range(32, 16384))->capture_default_str();
  app.add_option("--ffn", spec.ffn)->check(CLI::Range(32, 65536))->capture_default_str();
  app.add_option("--heads", spec.heads)->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--kv-heads", spec.kv_heads)->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--head-dim", spec.head_dim)->check(CLI::Range(2, 512))->capture_default_str();
  app.add_option("--context", spec.context_length, "context length in tokens")
      ->check(CLI::Range(16, 1 << 20))
      ->capture_default_str();
  app.add_flag("--q8", q8, "Q8_0 matrices instead of F32 (rows a multiple of 32)");
  CLI11_PARSE(app, argc, argv);
  if (q8) spec.matrix_type = kvscope::TensorType::Q8_0;
  if (const kvscope::Status st = kvscope::test::write_tiny_gguf(spec, path); !st.ok()) {
    std::fprintf(stderr, "write_tiny_model: %s\n", st.error().c_str());
    return 1;
  }
  return 0;
}
