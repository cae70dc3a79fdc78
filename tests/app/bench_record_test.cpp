// `kvscope-cli bench` on a tiny random model: the record names the CPU it ran
// on and its prefill figure was computed, not read from the prefix cache
// (every run gets a fresh prompt; before, the warm-up's prompt was reused and
// its cached blocks made prefill look ~5x faster). --concurrency N runs N
// sequences at once, each with a prompt of its own; the record names tp and
// tp_reduce, the backend, device and GPU matmul, and splits the step time.
// scripts/bench_gpu.py (the GPU table) runs here on the CPU backend, so the
// script a GPU session relies on is known to work. Label: unit.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli_runner.h"
#include "kvscope/setting_table.h"
#include "support/tiny_model.h"

namespace kvscope {
namespace {

using test::run_cli;

class BenchRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::tiny_model_temp_path("bench_record");
    ASSERT_TRUE(test::write_tiny_gguf(test::TinyModelSpec{}, path_).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(BenchRecord, NamesTheCpuAndNoPrefillTokenCameFromTheCache) {
  // 40 prompt tokens at the default block size (16): with one prompt reused,
  // 32 of them would be prefix-cache hits in every measured run.
  auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "40",
                    "--gen-tokens", "3", "--repeats", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;

  const auto& cpu = j["cpu"];
  ASSERT_TRUE(cpu.is_object()) << r.out;
  EXPECT_FALSE(cpu["model_name"].get<std::string>().empty());
  EXPECT_GE(cpu["num_cpus_online"].get<int>(), 1);
  EXPECT_GE(cpu["num_cpus_usable"].get<int>(), 1);
  EXPECT_EQ(cpu["threads_used"], 1);
  const std::set<std::string> levels = {"scalar", "avx2", "avx512"};
  EXPECT_TRUE(levels.count(cpu["isa"].get<std::string>())) << cpu.dump();
  EXPECT_FALSE(cpu["isa_detail"].get<std::string>().empty());

  // The cache was on, so the 0 below is a measurement, not a setting.
  EXPECT_EQ(j["prefix_caching"], true);
  EXPECT_EQ(j["prefill_cached_prompt_tokens"], 0);
  ASSERT_EQ(j["runs"].size(), 3u);
  std::set<int> first_tokens;
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["cached_prompt_tokens"], 0) << run.dump();
    first_tokens.insert(run["first_prompt_token"].get<int>());
  }
  EXPECT_EQ(first_tokens.size(), 3u) << "every measured run starts with a token of its own";
  EXPECT_EQ(j["prompt_tokens"], 40);
  EXPECT_GT(j["prefill_tok_s_median"].get<double>(), 0.0);
  EXPECT_EQ(j["concurrency"], 1) << "one sequence at a time is the default";
  EXPECT_EQ(j["tp"], 1);
  EXPECT_EQ(j["tp_reduce"], "fast");
}

// Two records differ in their numbers only where their settings say why:
// every engine setting is in the record, and the KV pool the settings made.
// (A q8_0 and an f32 record were the same but for the figures; a run of
// several sequences summed no drafts.)
TEST_F(BenchRecord, HoldsEverySettingAndThePoolTheyMade) {
  // Two sequences of 14 + 6 tokens in 3 blocks of 16: both start in one
  // block each, and the second block one needs is the other's preemption.
  auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "14", "--gen-tokens", "6",
                    "--repeats", "1", "--concurrency", "2", "--kv-cache-type", "f16", "--num-blocks", "3",
                    "--preemption", "swap", "--swap-space", "1M", "--spec", "ngram"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  const auto& settings = j["engine_settings"];
  EXPECT_EQ(settings["kv_cache_type"], "f16");
  EXPECT_EQ(settings["num_blocks"], "3");
  EXPECT_EQ(settings["preemption"], "swap");
  EXPECT_EQ(settings["swap_space"], "1M");
  EXPECT_EQ(settings["spec"], "ngram");
  EXPECT_EQ(settings.size(), engine_settings().size());
  // The tiny model's f16 K and V: 2 * 2 layers * 2 KV heads * 16 dims * 2 bytes.
  const auto& pool = j["kv_pool"];
  EXPECT_EQ(pool["kv_cache_type"], "f16");
  EXPECT_EQ(pool["kv_bytes_per_token"], 256);
  EXPECT_EQ(pool["num_blocks"], 3);
  EXPECT_EQ(pool["pool_bytes"], 3 * 16 * 256);
  EXPECT_EQ(pool["swap_pool_bytes"], (1 << 20) / (16 * 256) * (16 * 256));
  // A run of several sequences sums its requests' drafts and preemptions.
  const auto& run = j["runs"][0];
  int64_t drafted = 0, accepted = 0, preempted = 0;
  for (const auto& q : run["requests"]) {
    drafted += q["draft_tokens"].get<int64_t>();
    accepted += q["accepted_draft_tokens"].get<int64_t>();
    preempted += q["preemptions"].get<int64_t>();
  }
  EXPECT_EQ(run["draft_tokens"], drafted);
  EXPECT_EQ(run["accepted_draft_tokens"], accepted);
  EXPECT_EQ(run["preemptions"], preempted);
  EXPECT_GT(preempted, 0) << "the sum is of something";
}

// The record names what ran the model and with which GPU matmul (f32 by
// default), and where the steps' time went: the shares add up to the whole,
// and with --no-gpu-sampling the engine drew every token itself.
TEST_F(BenchRecord, NamesTheBackendAndSplitsTheStepTime) {
  for (bool gpu_sampling : {true, false}) {
    std::vector<std::string> args = {"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "20",
                                     "--gen-tokens", "5", "--repeats", "2", "--concurrency", "3"};
    if (!gpu_sampling) args.push_back("--no-gpu-sampling");
    auto r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["backend"], "cpu");
    EXPECT_EQ(j["device"].get<std::string>().rfind("CPU (", 0), 0u) << j["device"];
    EXPECT_EQ(j["gpu_sampling"], gpu_sampling);
    EXPECT_EQ(j["gpu_matmul"], "f32");
    EXPECT_EQ(j["gpu_settings_in_effect"], false) << "the CPU ran it: the GPU settings did nothing";
    // At 3 sequences a request's prefill rate counts the others' prefill; the
    // run's rate in all is at least as high.
    EXPECT_GE(j["prefill_tok_s_in_all_median"].get<double>(), j["prefill_tok_s_median"].get<double>() * 0.999);
    EXPECT_EQ(j["num_preemptions"], 0);
    EXPECT_TRUE(j["definitions"].contains("decode_tok_s"));
    EXPECT_FALSE(j["version"].get<std::string>().empty());
    const auto& steps = j["steps"];
    ASSERT_TRUE(steps.is_object()) << r.out;
    EXPECT_GE(steps["count"].get<int>(), 2 * 5);  // at least a prefill and 4 decodes per run
    EXPECT_GT(steps["step_s_median"].get<double>(), 0.0);
    const double forward = steps["forward_share"], sample = steps["sample_share"], other = steps["other_share"];
    EXPECT_GT(forward, 0.0);
    EXPECT_GE(sample, 0.0);
    EXPECT_GE(other, 0.0);
    EXPECT_NEAR(forward + sample + other, 1.0, 1e-9);
    // The CPU backend has no device time of its own: no device share is claimed.
    EXPECT_FALSE(steps.contains("device_share")) << steps;
    EXPECT_FALSE(steps.contains("device_idle_s_median")) << steps;
    // No step was a graph replay: no median of them, rather than a 0 s one.
    EXPECT_TRUE(steps["graph_step_s_median"].is_null()) << steps;
    // 3 sequences x 5 tokens x 2 runs, each drawn by the backend or by the engine.
    EXPECT_EQ(steps["backend_draws"].get<int>(), gpu_sampling ? 30 : 0);
  }
}

// scripts/bench_gpu.py --quick on the CPU: one record of the bench runs at 1
// and 2 sequences plus the host-sampling, no-graphs, no-overlap,
// untimed-attention and norm fusion on / off comparisons, with a stored
// gpu_kernel_bench record summarised beside them; --gpu-matmul reaches every
// run (the CPU ignores it, but the bench records name it); a failing run
// names itself.
TEST_F(BenchRecord, BenchGpuScriptMakesOneRecordAndNamesAFailingRun) {
  const std::string out = path_ + ".bench_gpu.json";
  auto r = test::run_program("python3", {KVSCOPE_BENCH_GPU_SCRIPT, "--backend", "cpu", "--quick", "--cli",
                                         KVSCOPE_CLI_PATH, "--model", path_, "--engine-option=--threads=1",
                                         "--gpu-matmul", "tensor_cores", "--kernel-json", KVSCOPE_H200_KERNEL_RECORD,
                                         "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream file(out);
  const auto j = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  std::remove(out.c_str());
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["device"].get<std::string>().rfind("CPU (", 0), 0u) << j["device"];
  // Which matmul the runs used, as their bench records report it.
  EXPECT_EQ(j["gpu_matmul"], "tensor_cores");
  ASSERT_EQ(j["table"].size(), 8u);
  ASSERT_EQ(j["end_to_end"].size(), 8u);
  const int concurrency[] = {1, 2, 2, 1, 1, 1, 1, 1};
  const bool gpu_sampling[] = {true, true, false, true, true, true, true, true};
  const bool gpu_graphs[] = {true, true, true, false, true, true, true, true};
  const bool gpu_overlap[] = {true, true, true, true, false, true, true, true};
  const bool gpu_attention_timing[] = {true, true, true, true, true, false, true, true};
  const char* gpu_norm_fusion[] = {"auto", "auto", "auto", "auto", "auto", "auto", "on", "off"};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(j["table"][i]["concurrency"], concurrency[i]);
    EXPECT_EQ(j["table"][i]["gpu_sampling"], gpu_sampling[i]);
    EXPECT_EQ(j["table"][i]["gpu_graphs"], gpu_graphs[i]);
    EXPECT_EQ(j["table"][i]["gpu_overlap_launches"], gpu_overlap[i]);
    EXPECT_EQ(j["table"][i]["gpu_attention_timing"], gpu_attention_timing[i]);
    EXPECT_EQ(j["table"][i]["gpu_norm_fusion"], gpu_norm_fusion[i]);
    EXPECT_EQ(j["table"][i]["gpu_matmul"], "tensor_cores");
    EXPECT_EQ(j["table"][i]["graph_steps"], 0);  // the CPU backend never replays a graph
    EXPECT_GT(j["table"][i]["tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(j["end_to_end"][i]["threads"], 1);
  }
  EXPECT_EQ(j["kernels"]["decode_attention"].size(), 9u);  // batch 1, 16, 64 x context 1k, 4k, 16k
  EXPECT_NE(r.err.find("| sequences |"), std::string::npos) << r.err;

  auto bad = test::run_program("python3", {KVSCOPE_BENCH_GPU_SCRIPT, "--backend", "cpu", "--quick", "--cli",
                                           KVSCOPE_CLI_PATH, "--model", path_, "--engine-option=--block-size=0"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bench at 1 sequence(s) failed"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("block"), std::string::npos) << bad.err;
}

// The record says how the model was split: a tp = 2 figure is not a tp = 1 one.
TEST(BenchRecordTp, NamesTpAndTheReduction) {
  const std::string path = test::tiny_model_temp_path("bench_record_tp");
  test::TinyModelSpec spec;  // 4 heads of 32 and an FFN of 8 blocks of 32: splits at tp 2
  spec.head_dim = 32;
  spec.hidden = 128;
  spec.ffn = 256;
  ASSERT_TRUE(test::write_tiny_gguf(spec, path).ok());
  auto r = run_cli({"bench", "--model", path, "--threads", "2", "--prompt-tokens", "20", "--gen-tokens", "3",
                    "--repeats", "1", "--tp", "2", "--tp-reduce", "deterministic"});
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["tp"], 2);
  EXPECT_EQ(j["tp_reduce"], "deterministic");
  EXPECT_GT(j["decode_tok_s_median"].get<double>(), 0.0);
}

TEST_F(BenchRecord, ConcurrencySubmitsThatManySequencesTogetherEachWithItsOwnPrompt) {
  auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "40", "--gen-tokens", "3",
                    "--repeats", "2", "--concurrency", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["concurrency"], 4);
  EXPECT_EQ(j["prefill_cached_prompt_tokens"], 0);
  ASSERT_EQ(j["runs"].size(), 2u);
  std::set<int> first_tokens;
  for (const auto& run : j["runs"]) {
    ASSERT_EQ(run["requests"].size(), 4u) << run.dump();
    EXPECT_EQ(run["generated_tokens"], 4 * 3) << run.dump();
    EXPECT_GT(run["wall_s"].get<double>(), 0.0);
    EXPECT_GT(run["tokens_per_s"].get<double>(), 0.0);
    for (const auto& request : run["requests"]) {
      EXPECT_EQ(request["generated_tokens"], 3) << request.dump();
      EXPECT_EQ(request["cached_prompt_tokens"], 0) << request.dump();
      EXPECT_GT(request["time_to_first_token_s"].get<double>(), 0.0) << request.dump();
      // A request's first token comes before the run (all four) ends.
      EXPECT_LE(request["time_to_first_token_s"].get<double>(), run["wall_s"].get<double>()) << request.dump();
      first_tokens.insert(request["first_prompt_token"].get<int>());
    }
  }
  EXPECT_EQ(first_tokens.size(), 8u) << "every sequence of every run starts with a token of its own";
  const double ttft_median = j["time_to_first_token_s_median"].get<double>();
  EXPECT_GT(ttft_median, 0.0);
  EXPECT_GE(j["time_to_first_token_s_p90"].get<double>(), ttft_median);
  EXPECT_GT(j["tokens_per_s_median"].get<double>(), 0.0);
}

TEST_F(BenchRecord, ConcurrencyBelowOneIsRefusedWithAReason) {
  for (const char* value : {"0", "-2"}) {
    auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--concurrency", value});
    EXPECT_EQ(r.exit_code, 2) << value << "\n" << r.err;
    EXPECT_NE(r.err.find("--concurrency"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(BenchRecord, MoreSequencesThanDistinctFirstTokensIsRefusedNamingConcurrency) {
  // 300-token vocabulary: far fewer than 1000 x 6 distinct first tokens.
  auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "8", "--gen-tokens", "1",
                    "--concurrency", "1000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("distinct first tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--concurrency"), std::string::npos) << r.err;
}

TEST_F(BenchRecord, TooManyRepeatsForDistinctPromptsIsRefusedWithAReason) {
  // The paragraph has a few dozen distinct bytes in the tiny byte-level vocabulary.
  auto r = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "8", "--gen-tokens", "1",
                    "--repeats", "5000"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("distinct first tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--repeats"), std::string::npos) << r.err;
}

// A run that fills the context would time fewer tokens than the record
// names (it generated 30 of 40 under the header "40 generated"): refused
// before the runs; an exact fit runs every token; a shift goes on past it.
TEST_F(BenchRecord, PromptAndGenerationOverTheContextIsRefused) {
  auto over = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "20", "--gen-tokens", "40",
                       "--ctx", "50", "--repeats", "1"});
  EXPECT_EQ(over.exit_code, 2) << over.err;
  EXPECT_NE(over.err.find("do not fit the context of 50 tokens"), std::string::npos) << over.err;
  EXPECT_TRUE(over.out.empty()) << over.out;
  auto exact = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "20", "--gen-tokens", "30",
                        "--ctx", "50", "--repeats", "1"});
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  const nlohmann::json j = nlohmann::json::parse(exact.out);
  EXPECT_EQ(j["runs"][0]["generated_tokens"], 30) << exact.out;
  auto shift = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "20", "--gen-tokens", "40",
                        "--ctx", "48", "--block-size", "8", "--context-keep", "8", "--context-overflow", "shift",
                        "--repeats", "1"});
  ASSERT_EQ(shift.exit_code, 0) << shift.err;
  EXPECT_EQ(nlohmann::json::parse(shift.out)["runs"][0]["generated_tokens"], 40) << shift.out;
  // A shift that cannot happen (paging off) stops as a full context does:
  // the warm-up says so before any measured run.
  auto stuck = run_cli({"bench", "--model", path_, "--threads", "1", "--prompt-tokens", "20", "--gen-tokens", "40",
                        "--ctx", "48", "--block-size", "8", "--context-keep", "8", "--context-overflow", "shift",
                        "--no-paging", "--repeats", "1"});
  EXPECT_EQ(stuck.exit_code, 2) << stuck.err;
  EXPECT_NE(stuck.err.find("the warm-up run generated 28 of --gen-tokens 40"), std::string::npos) << stuck.err;
  EXPECT_TRUE(stuck.out.empty()) << stuck.out;
}

}  // namespace
}  // namespace kvscope
