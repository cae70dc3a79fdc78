// `kvscope-cli bench-seeds --quick --only 2` on the default model (a few
// seconds): the JSON, CSV and Markdown it writes have what the report needs,
// and contiguous KV never holds more sequences than its budget of full-length
// reservations. Skips without the model. Label: model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "kvscope/backend_choice.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using ::testing::HasSubstr;

std::string read_text(const fs::path& path) {
  std::stringstream s;
  s << std::ifstream(path, std::ios::binary).rdbuf();
  return s.str();
}

TEST(CliSeedBench, QuickTableTwoWritesEveryOutput) {
  const std::string model = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!model.empty(), test::TestData::kDefaultModel);
  const fs::path dir = fs::temp_directory_path() / ("kvscope-seed-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);

  auto r = run_cli({"bench-seeds", "--model", model, "--quick", "--only", "2", "--out-dir", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Table 2"));
  EXPECT_THAT(r.out, HasSubstr("Goals"));

  auto j = nlohmann::json::parse(read_text(dir / "seeds.json"), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["command"], "bench-seeds");
  EXPECT_EQ(j["quick"], true);
  EXPECT_FALSE(j["machine"]["cpu"]["model_name"].get<std::string>().empty());
  EXPECT_EQ(j["machine"]["cpu"]["threads_used"], j["machine"]["threads"]);
  EXPECT_FALSE(j["machine"]["cpu"]["isa"].get<std::string>().empty());
  EXPECT_EQ(j["machine"]["load_average_start"].size(), 3u);
  EXPECT_EQ(j["machine"]["load_average_end"].size(), 3u);
  EXPECT_GT(j["model"]["kv_bytes_per_token"].get<int64_t>(), 0);
  // The lab's tables are CPU runs unless --backend says otherwise, and the record says so.
  EXPECT_EQ(j["machine"]["backend"], "CPU: backend = cpu");

  // Quick table 2: batch sizes 1 and 4, each ON (block 16), OFF (contiguous), OFF (block = max length).
  const auto& runs = j["runs"];
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& run : runs) {
    SCOPED_TRACE(run["label"].get<std::string>());
    EXPECT_EQ(run["table"], 2);
    EXPECT_EQ(run["config"]["backend"], "cpu");
    for (const char* key : {"block_size", "paged", "policy", "prefix_caching", "kv_budget_bytes", "max_seqs",
                            "max_model_len", "backend"}) {
      EXPECT_TRUE(run["config"].contains(key)) << key;
    }
    const auto& m = run["metrics"];
    for (const char* key : {"latency_s", "throughput_tok_s", "decode_tok_s", "mean_ttft_s", "max_running",
                            "mean_waste_percent", "peak_waste_percent", "num_preemptions"}) {
      EXPECT_TRUE(m.contains(key)) << key;
    }
    EXPECT_EQ(m["num_errors"], 0) << m["first_error"];
    // Every reply is exactly 16 tokens (quick), whatever the mode.
    EXPECT_EQ(m["num_generated_tokens"].get<int64_t>(), 16 * m["num_requests"].get<int64_t>());
    EXPECT_GT(m["throughput_tok_s"].get<double>(), 0.0);
    EXPECT_GE(m["max_running"].get<int>(), 1);
    // The budget holds two full-length reservations: no OFF mode may admit more.
    if (run["mode"] != "paged16") {
      EXPECT_LE(m["max_running"].get<int>(), 2);
    }
  }

  const auto& goals = j["goals"];
  ASSERT_EQ(goals.size(), 4u);
  for (const auto& g : goals) {
    EXPECT_TRUE(g.contains("goal") && g.contains("target") && g.contains("value") && g.contains("passed"));
  }

  const std::string csv = read_text(dir / "seeds.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);  // header + one row per run
  EXPECT_THAT(read_text(dir / "seeds.md"), HasSubstr("Table 3"));
  // The machine, as on stdout: a copied seeds.md says where it ran.
  EXPECT_THAT(read_text(dir / "seeds.md"), HasSubstr("## kvscope bench-seeds: "));
  fs::remove_all(dir);
}

// --backend takes the engine's backend names; one this machine cannot run
// (cuda without a CUDA build or device) fails at once with the engine's
// reason, before any table runs; an unknown name is a usage error.
TEST(CliSeedBench, BackendOptionUsesTheEnginesChoice) {
  const std::string model = test::default_model_path();
  KVSCOPE_REQUIRE_DATA(!model.empty(), test::TestData::kDefaultModel);
  auto bad = run_cli({"bench-seeds", "--model", model, "--quick", "--only", "2", "--backend", "gpu"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("gpu not in {cpu,cuda,auto}"));
  const Result<BackendChoice> cuda = choose_backend(BackendKind::Cuda);
  if (cuda.ok()) GTEST_SKIP() << "this machine runs CUDA: " << cuda->reason;
  auto r = run_cli({"bench-seeds", "--model", model, "--quick", "--only", "2", "--backend", "cuda"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(cuda.error()));
  EXPECT_THAT(r.out, Not(HasSubstr("Table 2")));
}

}  // namespace
}  // namespace kvscope
