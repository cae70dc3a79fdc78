#include "support/test_paths.h"

#include <cstdlib>
#include <filesystem>

namespace kvscope::test {
namespace fs = std::filesystem;

namespace {
std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string find_model(const char* file_name) {
  std::string dir = env_or_empty("KVSCOPE_MODEL_DIR");
  if (dir.empty()) {
    const std::string xdg = env_or_empty("XDG_DATA_HOME");
    dir = !xdg.empty() ? xdg + "/kvscope/models" : env_or_empty("HOME") + "/.local/share/kvscope/models";
  }
  const fs::path p = fs::path(dir) / file_name;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}
}  // namespace

std::string tokenizer_fixtures_dir() {
  // The same search order as scripts/fetch_test_data.py's --print-dir.
  std::string d = env_or_empty("KVSCOPE_FIXTURES_DIR");
  if (d.empty()) {
    std::string root = env_or_empty("KVSCOPE_TEST_DATA_DIR");
    if (root.empty()) {
      const std::string xdg = env_or_empty("XDG_CACHE_HOME");
      root = !xdg.empty() ? xdg + "/kvscope/test-data" : env_or_empty("HOME") + "/.cache/kvscope/test-data";
    }
    d = root + "/tokenizer";
  }
  std::error_code ec;
  return fs::is_directory(d, ec) ? d : std::string();
}

// The source tree the tests were built from, or KVSCOPE_SOURCE_DIR when set:
// test binaries built on one machine and run from a copy of the tree on
// another (scripts/gpu_check.sh --prebuilt on a lent GPU machine).
std::string test_data_dir() {
  const std::string source = env_or_empty("KVSCOPE_SOURCE_DIR");
  return (source.empty() ? std::string(KVSCOPE_SOURCE_DIR) : source) + "/tests/data";
}

std::string default_model_path() { return find_model("SmolLM2-135M-Instruct.Q4_1.gguf"); }

std::string gemma_model_path() { return find_model("gemma-3-270m-q4_k_m.gguf"); }

}  // namespace kvscope::test
