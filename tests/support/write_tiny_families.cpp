// Writes every tiny family model (support/tiny_families.h) as DIR/<name>.gguf
// and prints "<name> <fnv1a64>" per file, for
// scripts/dev/record_family_references.py.
#include <cstdio>
#include <filesystem>

#include "support/tiny_families.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  for (const kvscope::test::TinyFamilyCase& c : kvscope::test::tiny_family_cases()) {
    const std::string path = (std::filesystem::path(argv[1]) / (c.name + ".gguf")).string();
    if (kvscope::Status st = kvscope::test::write_tiny_gguf(c.spec, path); !st.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), st.error().c_str());
      return 1;
    }
    std::printf("%s %llu\n", c.name.c_str(), static_cast<unsigned long long>(kvscope::test::fnv1a64_file(path)));
  }
  return 0;
}
