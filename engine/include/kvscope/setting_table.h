// The engine's settings as data: one row per EngineConfig knob a person can
// change. Front ends generate everything from this table instead of
// restating it: the CLI's options (app/cli/engine_options.cpp), the app's
// QSettings keys and `kvscope --settings FILE` (ui/engine_settings.cpp), the
// settings dialog's fields and their ranges (ui/settings_dialog.cpp), and the
// checks in EngineConfig::validate(). A new setting is an EngineConfig member,
// one row in engine/src/setting_table.cpp and the code that uses it
// (docs/architecture.md, "Adding a setting"; tests/engine/settings/setting_table_test.cpp
// checks every row against every consumer).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kvscope/result.h"

namespace kvscope {

struct EngineConfig;

enum class SettingType {
  Int,     // a whole number in [min, max]
  Bytes,   // a size in bytes in [min, max]; typed as 536870912, 512M, 2G, 1.5GiB
  Bool,    // true/false (also on/off, yes/no, 1/0)
  Choice,  // one of `choices`, stored by name
  Path,    // a file or directory path
};

// What applying a changed value costs a running engine.
enum class SettingEffect {
  NextStep,     // each step reads it: Engine::reconfigure changes it in place, nothing is rebuilt
  Reconfigure,  // Engine::reconfigure: pools and scheduler rebuilt, weights kept
  Reload,       // Engine::create: the weights are loaded again
};

// Int, Bytes: int64_t; Bool: bool; Choice: the choice's name; Path: the path.
using SettingValue = std::variant<int64_t, bool, std::string>;

// A problem with one setting (or with none: field empty), as validate() and
// plan_kv() report it. The message is complete on its own ("block size =
// 4096 is out of range [1, 2048]"), so a front end may show it anywhere; a
// front end with per-field controls shows it next to `field`'s.
struct SettingProblem {
  std::string field;  // a SettingSpec::key, or "" when no single setting is at fault
  std::string message;
  bool operator==(const SettingProblem&) const = default;
};

// All problems as one Status: the first message, plus how many more.
Status problems_status(const std::vector<SettingProblem>& problems);

struct SettingSpec {
  std::string key;    // snake_case: the INI and JSON key; the CLI's --key-with-dashes unless cli_name
  SettingType type = SettingType::Int;
  std::string label;  // for a form: "Block size"
  std::string unit;   // "tokens", "sequences", ... ("" for none; Bytes are bytes)
  std::string help;   // one sentence: what it does and what changing it trades
  std::string group;  // the section it belongs to in a form: "Model", "KV cache", "Batching", "Compute"
  SettingEffect effect = SettingEffect::Reconfigure;
  int64_t min = 0;    // Int, Bytes
  int64_t max = 0;
  std::vector<std::string> choices;        // Choice: accepted names, in display order
  std::vector<std::string> choice_labels;  // Choice: how a form shows each (same order)
  std::string zero_means;    // Int: what 0 stands for ("one per core"); empty when 0 is just 0
  std::string cli_name;      // CLI long option when it differs from the key ("ctx")
  std::string cli_negation;  // Bool: the flag that sets false ("no-paging"); the positive flag is --cli_name
  // Reads / writes the field in an EngineConfig. set() takes a value of the
  // row's type (parse() makes one); it does not range-check (validate does).
  std::function<SettingValue(const EngineConfig&)> get;
  std::function<void(EngineConfig&, const SettingValue&)> set;
  // Whether the value matters under config c (swap space only with
  // preemption = swap; the KV budget only when KV blocks is 0); unset: always.
  // Forms disable a control that does not apply.
  std::function<bool(const EngineConfig&)> applies;

  // EngineConfig{}'s value: the struct's initialisers are the one place defaults live.
  SettingValue default_value() const;
  // The CLI's long option name without dashes.
  std::string cli_option() const;
  // Text as typed on a command line or in an INI file -> a value of this
  // row's type, or a message naming the setting ("block_size: 'x' is not a
  // whole number"). Ranges are not checked here.
  Result<SettingValue> parse(std::string_view text) const;
  // A value -> the text parse() reads back ("512M" for 512 MiB, "true", "swap").
  std::string format(const SettingValue& value) const;
  // The range check of one value: nullopt when it is allowed.
  std::optional<SettingProblem> check(const SettingValue& value) const;
};

// Every user setting, in the order forms show them. record_snapshots is not
// here: the front end decides it, not the user.
const std::vector<SettingSpec>& engine_settings();
// The row for `key` (an INI/JSON key), nullptr if there is none.
const SettingSpec* find_setting(std::string_view key);
// The setting whose command-line option is `option` (with or without its
// leading "--"; "ctx" is max_model_len), or whose key it is with dashes for
// underscores ("block-size"); nullptr when none.
const SettingSpec* find_setting_by_cli_option(std::string_view option);

// Parses `text` for `key` and stores it in `config`; the error names the key.
Status set_setting(EngineConfig& config, std::string_view key, std::string_view text);
// `key`'s value in `config` as set_setting reads it back and the settings
// file writes it ("16", "swap", "512M"); "" when `key` is no setting.
std::string setting_text(const EngineConfig& config, std::string_view key);

// Whether every user setting of a and b is equal (record_snapshots ignored).
bool same_settings(const EngineConfig& a, const EngineConfig& b);
// The keys whose values differ between a and b, in table order.
std::vector<std::string> changed_settings(const EngineConfig& a, const EngineConfig& b);
// Whether going from a to b needs the weights loaded again (a Reload row changed).
bool needs_reload(const EngineConfig& a, const EngineConfig& b);

// Whether going from a to b changes only NextStep rows (or nothing): the
// engine then applies b in place, its pool, requests and prefix cache as
// they were. `a` is the config as given (Engine::requested_config), not as
// resolved (Engine::config's max_model_len).
bool applies_in_place(const EngineConfig& a, const EngineConfig& b);

// "512M" -> 536870912: decimal number with an optional binary unit (B, K/KB/KiB,
// M, G, T; case-insensitive). nullopt when malformed, below 1 or beyond int64.
std::optional<int64_t> parse_byte_size(std::string_view text);
// The shortest text parse_byte_size reads back exactly: "512M", "1536K", "1000".
std::string format_byte_size(int64_t bytes);

}  // namespace kvscope
