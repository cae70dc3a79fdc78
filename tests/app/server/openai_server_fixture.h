// The fixture of the server tests that run over loopback on a tiny random
// model (openai_server_test.cpp, completions_echo_test.cpp): a server per
// test on one model file per process, and the request bodies they send.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "support/tiny_model.h"
#include "test_server.h"

namespace kvscope::test {

class OpenAiServerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = test::tiny_model_temp_path("openai_server");
    ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path_).ok());
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }

  static EngineConfig config() {
    EngineConfig c;
    c.model_path = path_;
    c.num_threads = 2;
    c.num_blocks = 128;
    return c;
  }

  void SetUp() override {
    server::ServerOptions options;
    options.model_id = "tiny";
    server_ = test::TestServer::start(config(), options);
    ASSERT_TRUE(server_);
  }

  // A chat body with the user message `text` and extra fields.
  static nlohmann::json chat(const std::string& text, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", text}}}}};
    body.update(extra);
    return body;
  }
  static nlohmann::json completion(nlohmann::json prompt, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json body = {{"model", "tiny"}, {"prompt", std::move(prompt)}};
    body.update(extra);
    return body;
  }

  Reply post(const std::string& path, const nlohmann::json& body, const httplib::Headers& headers = {}) {
    return http_post(server_->port(), path, body, headers);
  }

  static inline std::string path_;
  std::unique_ptr<test::TestServer> server_;
};

// Fixed-length greedy generation: the tiny model's EOS is ignored.
inline const nlohmann::json kGreedy = {{"temperature", 0}, {"ignore_eos", true}};

}  // namespace kvscope::test
