// The differential corpus check shared by tokenizer_corpus_test.cpp (the
// fetched fixture vocabularies, label unit) and
// tokenizer_corpus_model_test.cpp (the SmolLM2 and Gemma 3 models, label
// model): tests/data/tokenizer_corpus.txt against llama.cpp's ids in
// tests/data/tokenizer_corpus_ids.json (scripts/dev/record_tokenizer_corpus.py).
//
// The one allowed difference is kvscope's documented rule for text a
// vocabulary cannot spell (tokenizer.h, EncodeIssues): where encode()
// reports that it replaced something, llama.cpp's ids (which drop such
// bytes) are not required; the check counts those cases and prints them.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "model/gguf_file.h"
#include "support/require_data.h"
#include "support/test_paths.h"
#include "tokenizer/read_vocab.h"
#include "tokenizer/tokenizer.h"

namespace kvscope::test {

using Ids = std::vector<int32_t>;

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One JSON string per line; '#' comments and blank lines skipped; lines end
// at '\n' only (record_tokenizer_corpus.py reads them the same way).
inline std::vector<std::string> read_corpus() {
  std::vector<std::string> texts;
  std::istringstream in(read_all(test_data_dir() + "/tokenizer_corpus.txt"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.find_first_not_of(" \t\r") == std::string::npos) continue;
    texts.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return texts;
}

inline const nlohmann::json& recorded() {
  static const nlohmann::json ids =
      nlohmann::json::parse(read_all(test_data_dir() + "/tokenizer_corpus_ids.json"));
  return ids;
}

inline Ids parse_ids(const std::string& s) {
  Ids ids;
  std::istringstream in(s);
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

inline std::string show(const Ids& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// The file of a vocabulary: a fetched fixture, or one of the two models
// (their whole GGUF is read, but only its tokenizer keys are used).
inline std::pair<std::string, TestData> vocabulary_file(const std::string& name) {
  if (name == "smollm2") return {default_model_path(), TestData::kDefaultModel};
  if (name == "gemma-3") return {gemma_model_path(), TestData::kGemmaModel};
  const std::string dir = tokenizer_fixtures_dir();
  return {dir.empty() ? "" : dir + "/ggml-vocab-" + name + ".gguf", TestData::kTokenizerFixtures};
}

// Every text with and without special-token parsing gives llama.cpp's ids.
inline void expect_corpus_matches_llama_cpp(const std::string& name) {
  const auto [path, data] = vocabulary_file(name);
  KVSCOPE_REQUIRE_DATA(!path.empty() && std::filesystem::is_regular_file(path), data);
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();

  const auto texts = read_corpus();
  const nlohmann::json& expected = recorded()["vocabularies"][name];
  ASSERT_EQ(expected["plain"].size(), texts.size());
  int num_exact = 0, num_unspellable = 0, num_cases = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    for (bool parse_special : {false, true}) {
      const std::string key = std::to_string(i);
      const nlohmann::json& special = expected["special"];
      const Ids want = parse_ids(parse_special && special.contains(key) ? special[key].get<std::string>()
                                                                        : expected["plain"][i].get<std::string>());
      EncodeIssues issues;
      const Ids got = (*tok)->encode(texts[i], parse_special, &issues);
      ++num_cases;
      if (got == want) {
        ++num_exact;
      } else if (issues.any()) {
        ++num_unspellable;
        std::cout << name << " text " << i << (parse_special ? " (special)" : "")
                  << ": differs where kvscope replaced what it cannot spell: " << describe(issues) << "\n";
      } else {
        ADD_FAILURE() << name << ", text " << i << (parse_special ? ", parse_special" : "") << ": '"
                      << texts[i] << "'\n  llama.cpp: " << show(want) << "\n  kvscope:   " << show(got);
      }
    }
  }
  std::cout << name << ": " << num_exact << "/" << num_cases << " exact, " << num_unspellable
            << " differ by the unspellable-text rule\n";
}

// Texts spliced from the corpus and random bytes: never a control token from
// plain text, ids in range, and byte-level BPE gives the text back whenever
// encode() reports nothing replaced.
inline void expect_no_control_tokens_from_splices(const std::string& name) {
  const auto [path, data] = vocabulary_file(name);
  KVSCOPE_REQUIRE_DATA(!path.empty() && std::filesystem::is_regular_file(path), data);
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file) << file.error();
  auto vocab = read_vocab(**file);
  ASSERT_TRUE(vocab) << vocab.error();
  auto tok = create_tokenizer(*vocab);
  ASSERT_TRUE(tok) << tok.error();
  const auto texts = read_corpus();
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> pick(0, texts.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 3);
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int part = 0; part < 3; ++part) {
      const std::string& t = texts[pick(rng)];
      const size_t a = std::uniform_int_distribution<size_t>(0, t.size())(rng);
      text += t.substr(a, 40);
      if (coin(rng) == 0) text += static_cast<char>(byte(rng));
    }
    EncodeIssues issues;
    const Ids ids = (*tok)->encode(text, /*parse_special=*/false, &issues);
    for (int32_t id : ids) {
      ASSERT_TRUE(id >= 0 && id < (*tok)->vocab_size()) << id;
      ASSERT_FALSE((*tok)->is_control(id)) << name << ": control token " << id << " from '" << text << "'";
    }
    if (vocab->model == "gpt2" && !issues.any()) {
      EXPECT_EQ((*tok)->decode(ids), text) << name;
    }
  }
}

}  // namespace kvscope::test
