// The setting table (kvscope/setting_table.h): every row is well formed, its
// default is valid, its text form round-trips, its range is enforced by
// validate() under its own key, and the generic helpers (set_setting,
// changed_settings, needs_reload) treat every row alike. Together with the
// per-row checks of the consumers (tests/app/cli_settings_test.cpp: a CLI
// option per row; tests/ui/settings_dialog_test.cpp: a control per row;
// tests/ui/engine_settings_test.cpp: an INI key per row), this is what makes
// a new setting one row plus the code that uses it.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "kvscope/backend_choice.h"
#include "kvscope/engine_config.h"
#include "kvscope/setting_table.h"

namespace kvscope {
namespace {

EngineConfig usable() {
  EngineConfig c;
  c.model_path = "model.gguf";
  return c;
}

// A value of the row's type other than the default (and in range).
SettingValue other_value(const SettingSpec& s) {
  const SettingValue d = s.default_value();
  switch (s.type) {
    case SettingType::Int:
    case SettingType::Bytes: {
      const int64_t v = std::get<int64_t>(d);
      return v < s.max ? v + 1 : v - 1;
    }
    case SettingType::Bool: return !std::get<bool>(d);
    case SettingType::Choice: return s.choices.at(s.choices.at(0) == std::get<std::string>(d) ? 1 : 0);
    case SettingType::Path: return std::string("other/model.gguf");
  }
  return d;
}

TEST(SettingTable, RowsAreWellFormed) {
  std::set<std::string> keys, options;
  const std::regex snake("[a-z][a-z0-9_]*");
  for (const SettingSpec& s : engine_settings()) {
    SCOPED_TRACE(s.key);
    EXPECT_TRUE(std::regex_match(s.key, snake));
    EXPECT_TRUE(keys.insert(s.key).second) << "duplicate key";
    EXPECT_TRUE(options.insert(s.cli_option()).second) << "duplicate CLI option";
    if (!s.cli_negation.empty()) {
      EXPECT_TRUE(options.insert(s.cli_negation).second);
    }
    EXPECT_FALSE(s.label.empty());
    EXPECT_FALSE(s.help.empty());
    EXPECT_FALSE(s.group.empty());
    EXPECT_TRUE(s.get && s.set);
    EXPECT_EQ(find_setting(s.key), &s);
    if (s.type == SettingType::Int || s.type == SettingType::Bytes) {
      EXPECT_LT(s.min, s.max);
    }
    if (s.type == SettingType::Choice) {
      EXPECT_GE(s.choices.size(), 2u);
      EXPECT_EQ(s.choice_labels.size(), s.choices.size());
    }
    if (!s.zero_means.empty()) {
      EXPECT_EQ(s.min, 0) << "0 must be allowed to mean something";
    }
  }
  EXPECT_EQ(find_setting("no_such_setting"), nullptr);
}

TEST(SettingTable, DefaultsAreValidAndComeFromEngineConfig) {
  EXPECT_TRUE(usable().validate().empty());
  const EngineConfig d;
  for (const SettingSpec& s : engine_settings()) {
    SCOPED_TRACE(s.key);
    EXPECT_EQ(s.default_value(), s.get(d));
    EXPECT_FALSE(s.check(s.default_value()).has_value());
  }
  EXPECT_EQ(std::get<int64_t>(find_setting("block_size")->default_value()), d.block_size);
}

TEST(SettingTable, TextFormRoundTripsForEveryRow) {
  for (const SettingSpec& s : engine_settings()) {
    SCOPED_TRACE(s.key);
    for (const SettingValue& v : {s.default_value(), other_value(s)}) {
      const std::string text = s.format(v);
      Result<SettingValue> back = s.parse(text);
      ASSERT_TRUE(back.ok()) << text << ": " << back.error();
      EXPECT_EQ(*back, v) << text;
    }
    if (s.type != SettingType::Path) {
      Result<SettingValue> bad = s.parse("not a value");
      ASSERT_FALSE(bad.ok());
      EXPECT_EQ(bad.error().rfind(s.key + ":", 0), 0u) << "the message names the setting: " << bad.error();
    }
  }
}

// setting_text is the value set_setting reads back, for every row.
TEST(SettingTable, SettingTextIsWhatSetSettingReads) {
  for (const SettingSpec& s : engine_settings()) {
    SCOPED_TRACE(s.key);
    EngineConfig c;
    s.set(c, other_value(s));
    const std::string text = setting_text(c, s.key);
    EXPECT_EQ(text, s.format(other_value(s)));
    EngineConfig back;
    ASSERT_TRUE(set_setting(back, s.key, text).ok()) << text;
    EXPECT_EQ(s.get(back), other_value(s));
  }
  EXPECT_EQ(setting_text(EngineConfig{}, "no_such_setting"), "");
}

TEST(SettingTable, RangesAreEnforcedUnderTheirOwnKey) {
  for (const SettingSpec& s : engine_settings()) {
    if (s.type != SettingType::Int && s.type != SettingType::Bytes) continue;
    for (const int64_t v : {s.min - 1, s.max + 1}) {
      SCOPED_TRACE(s.key + " = " + std::to_string(v));
      EngineConfig c = usable();
      s.set(c, SettingValue(v));
      const std::vector<SettingProblem> problems = c.validate();
      ASSERT_EQ(problems.size(), 1u);
      EXPECT_EQ(problems[0].field, s.key);
      EXPECT_NE(problems[0].message.find("out of range"), std::string::npos) << problems[0].message;
    }
    EngineConfig edge = usable();
    s.set(edge, SettingValue(s.min));
    EXPECT_FALSE(s.check(s.get(edge)).has_value()) << s.key;
  }
}

TEST(SettingTable, EveryRowIsSetAndComparedAlike) {
  for (const SettingSpec& s : engine_settings()) {
    SCOPED_TRACE(s.key);
    EngineConfig c = usable();
    const EngineConfig before = c;
    ASSERT_TRUE(set_setting(c, s.key, s.format(other_value(s))).ok());
    EXPECT_EQ(changed_settings(before, c), std::vector<std::string>{s.key});
    EXPECT_FALSE(same_settings(before, c));
    EXPECT_EQ(needs_reload(before, c), s.effect == SettingEffect::Reload);
  }
  EngineConfig c = usable();
  EXPECT_FALSE(set_setting(c, "colour", "blue").ok());
  Status bad = set_setting(c, "block_size", "sixteen");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "block_size: 'sixteen' is not a whole number");
  EngineConfig snap = usable();
  snap.record_snapshots = true;
  EXPECT_TRUE(same_settings(usable(), snap)) << "record_snapshots is the front end's, not a setting";
}

TEST(SettingTable, OnlyTheModelNeedsAReload) {
  for (const SettingSpec& s : engine_settings()) {
    EXPECT_EQ(s.effect == SettingEffect::Reload, s.key == "model_path") << s.key;
  }
}

TEST(SettingTable, AppliesSaysWhenAValueMatters) {
  EngineConfig c = usable();
  const SettingSpec& swap = *find_setting("swap_space");
  const SettingSpec& budget = *find_setting("kv_budget");
  EXPECT_FALSE(swap.applies(c));
  c.preemption = PreemptionMode::Swap;
  EXPECT_TRUE(swap.applies(c));
  EXPECT_TRUE(budget.applies(c));
  c.num_blocks = 10;
  EXPECT_FALSE(budget.applies(c));
}

// gpu_matmul picks the CUDA backend's matmul math by the names the CLI and
// the settings file use: f32 until more GPUs are measured, tensor_cores, and
// nothing else (not the old development switch's "tensor"); it matters only
// where a GPU may run the model.
TEST(SettingTable, GpuMatmulIsF32OrTensorCores) {
  const SettingSpec& matmul = *find_setting("gpu_matmul");
  EXPECT_EQ(matmul.group, "Compute");
  EXPECT_EQ(matmul.cli_option(), "gpu-matmul");
  EXPECT_EQ(matmul.choices, (std::vector<std::string>{"f32", "tensor_cores"}));
  EXPECT_EQ(matmul.default_value(), SettingValue(std::string("f32")));
  EXPECT_EQ(EngineConfig{}.gpu_matmul, GpuMatmul::F32);

  EngineConfig c = usable();
  ASSERT_TRUE(set_setting(c, "gpu_matmul", "tensor_cores").ok());
  EXPECT_EQ(c.gpu_matmul, GpuMatmul::TensorCores);
  EXPECT_EQ(matmul.format(matmul.get(c)), "tensor_cores");
  EXPECT_TRUE(c.validate().empty()) << "valid on any backend; the CPU ignores it";
  ASSERT_TRUE(set_setting(c, "gpu_matmul", " F32 ").ok());
  EXPECT_EQ(c.gpu_matmul, GpuMatmul::F32);

  for (const char* bad : {"tensor", "bf16", ""}) {
    Status refused = set_setting(c, "gpu_matmul", bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error(), "gpu_matmul: '" + std::string(bad) + "' is not one of f32, tensor_cores");
    EXPECT_EQ(c.gpu_matmul, GpuMatmul::F32) << "a refused value changes nothing";
  }

  c.backend = BackendKind::Cpu;
  EXPECT_FALSE(matmul.applies(c));
  c.backend = BackendKind::Cuda;
  EXPECT_TRUE(matmul.applies(c));
  c.backend = BackendKind::Auto;
  EXPECT_EQ(matmul.applies(c), build_has_cuda());  // without the CUDA backend, auto is the CPU
}

// The GPU's on-by-default switches: each is on in a default EngineConfig,
// has its --no-... flag, turns off by its key, and matters only where a GPU
// may run the model.
TEST(SettingTable, GpuSwitchesAreOnByDefaultAndTurnOffByName) {
  struct Switch {
    const char* key;
    const char* negation;
    bool EngineConfig::*member;
  };
  const Switch switches[] = {
      {"gpu_sampling", "no-gpu-sampling", &EngineConfig::gpu_sampling},
      {"gpu_graphs", "no-gpu-graphs", &EngineConfig::gpu_graphs},
      {"gpu_overlap_launches", "no-gpu-overlap", &EngineConfig::gpu_overlap_launches},
      {"gpu_attention_timing", "no-gpu-attention-timing", &EngineConfig::gpu_attention_timing},
  };
  for (const Switch& w : switches) {
    SCOPED_TRACE(w.key);
    const SettingSpec* spec = find_setting(w.key);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->group, "Compute");
    EXPECT_EQ(spec->default_value(), SettingValue(true));
    EXPECT_TRUE(EngineConfig{}.*w.member);
    EXPECT_EQ(spec->cli_negation, w.negation);
    EngineConfig c = usable();
    ASSERT_TRUE(set_setting(c, w.key, "off").ok());
    EXPECT_FALSE(c.*w.member);
    c.backend = BackendKind::Cpu;
    EXPECT_FALSE(spec->applies(c));
    c.backend = BackendKind::Cuda;
    EXPECT_TRUE(spec->applies(c));
  }
}

// Norm fusion is a choice (auto by default: where the H200 measured it
// faster), set by name, and applies only where a GPU may run the model.
TEST(SettingTable, NormFusionIsAutoByDefaultAndSetByName) {
  const SettingSpec* spec = find_setting("gpu_norm_fusion");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->group, "Compute");
  EXPECT_EQ(spec->type, SettingType::Choice);
  EXPECT_EQ(spec->default_value(), SettingValue(std::string("auto")));
  EXPECT_EQ(EngineConfig{}.gpu_norm_fusion, GpuNormFusion::Auto);
  EXPECT_EQ(spec->cli_option(), "gpu-norm-fusion");
  EngineConfig c = usable();
  ASSERT_TRUE(set_setting(c, "gpu_norm_fusion", "off").ok());
  EXPECT_EQ(c.gpu_norm_fusion, GpuNormFusion::Off);
  ASSERT_TRUE(set_setting(c, "gpu_norm_fusion", "on").ok());
  EXPECT_EQ(c.gpu_norm_fusion, GpuNormFusion::On);
  const Status bad = set_setting(c, "gpu_norm_fusion", "true");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("auto, on, off"), std::string::npos) << bad.error();
  c.backend = BackendKind::Cpu;
  EXPECT_FALSE(spec->applies(c));
  c.backend = BackendKind::Auto;
  EXPECT_EQ(spec->applies(c), build_has_cuda());
}

TEST(SettingTable, ParsesWhatPeopleType) {
  const SettingSpec& paged = *find_setting("paged");
  for (const char* t : {"true", "on", "YES", "1", " true "}) {
    EXPECT_EQ(*paged.parse(t), SettingValue(true)) << t;
  }
  for (const char* t : {"false", "off", "No", "0"}) {
    EXPECT_EQ(*paged.parse(t), SettingValue(false)) << t;
  }
  EXPECT_EQ(*find_setting("policy")->parse("Static"), SettingValue(std::string("static")));
  Result<SettingValue> bogus = find_setting("preemption")->parse("later");
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.error(), "preemption: 'later' is not one of recompute, swap");
  EXPECT_FALSE(find_setting("threads")->parse("1e3").ok());
  EXPECT_FALSE(find_setting("threads")->parse("99999999999999999999").ok());
  // Past int32 the row would saturate: the error quotes the number typed,
  // not 2147483647 (and -2147483648 below).
  Result<SettingValue> huge = find_setting("num_blocks")->parse("99999999999");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().find("= 99999999999 is out of range"), std::string::npos) << huge.error();
  Result<SettingValue> below = find_setting("block_size")->parse("-99999999999");
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.error().find("= -99999999999 is out of range"), std::string::npos) << below.error();
  EXPECT_TRUE(find_setting("num_blocks")->parse("2147483647").ok()) << "validate() says int32 values are out of range";
}

TEST(ByteSize, ParseAndFormat) {
  EXPECT_EQ(parse_byte_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5g"), int64_t{3} << 29);
  EXPECT_EQ(parse_byte_size("64KiB"), 65536);
  EXPECT_EQ(parse_byte_size("1048576"), 1048576);
  for (const char* bad : {"", "M", "1.2.3", "12Q", "-5", "0", "1e30"}) {
    EXPECT_FALSE(parse_byte_size(bad)) << bad;
  }
  EXPECT_EQ(format_byte_size(int64_t{512} << 20), "512M");
  EXPECT_EQ(format_byte_size(int64_t{3} << 29), "1536M");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(0), "0");
  for (const int64_t v : {int64_t{1}, int64_t{1023}, int64_t{1} << 40, (int64_t{1} << 40) + 1024, int64_t{999999}}) {
    EXPECT_EQ(parse_byte_size(format_byte_size(v)), v) << v;
  }
}

TEST(ProblemsStatus, FirstMessageAndCount) {
  EXPECT_TRUE(problems_status({}).ok());
  EXPECT_EQ(problems_status({{"a", "one"}}).error(), "one");
  EXPECT_EQ(problems_status({{"a", "one"}, {"b", "two"}}).error(), "one (and 1 more problem)");
  EXPECT_EQ(problems_status({{"a", "one"}, {"b", "two"}, {"", "three"}}).error(), "one (and 2 more problems)");
}

}  // namespace
}  // namespace kvscope
