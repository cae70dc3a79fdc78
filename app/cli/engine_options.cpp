// kvscope-cli's engine options from the setting table (see engine_options.h).
#include "engine_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common_options.h"
#include "kvscope/setting_table.h"

namespace kvscope::cli {
namespace {

std::string option_help(const SettingSpec& spec) {
  std::string help = spec.help;
  if (!spec.zero_means.empty()) help += fmt::format(" (0: {})", spec.zero_means);
  if (spec.type == SettingType::Bytes) help += " Bytes, or 512M, 2G, ...";
  if (spec.type == SettingType::Choice) help += fmt::format(" One of: {}.", fmt::join(spec.choices, ", "));
  return help;
}

}  // namespace

void add_engine_options(CLI::App& cmd, EngineOptions& opts) {
  for (const SettingSpec& spec : engine_settings()) {
    const std::string name = "--" + spec.cli_option();
    const std::string key = spec.key;
    if (spec.type == SettingType::Bool) {
      const bool on = std::get<bool>(spec.get(opts.defaults));
      CLI::Option* positive = cmd.add_flag_callback(name, [&opts, key] { opts.given[key] = "true"; },
                                                    option_help(spec) + (on ? " (the default)" : ""));
      if (!spec.cli_negation.empty()) {
        CLI::Option* negative =
            cmd.add_flag_callback("--" + spec.cli_negation, [&opts, key] { opts.given[key] = "false"; },
                                  fmt::format("{} off{}", spec.label, on ? "" : " (the default)"));
        // Both given is a mistake to say, not settle: the flags' callbacks run
        // in the order they were defined, so "off" always won, silently.
        negative->excludes(positive);
      }
      continue;
    }
    std::string help = option_help(spec);
    if (spec.key == "model_path") {
      help = fmt::format("GGUF model file or Hugging Face model directory (default: {} in {})", kDefaultModelFile,
                         default_model_dir());
    }
    CLI::Option* option = cmd.add_option_function<std::string>(
        name, [&opts, key](const std::string& text) { opts.given[key] = text; }, help);
    if (spec.type == SettingType::Choice) option->check(CLI::IsMember(spec.choices, CLI::ignore_case));
    if (spec.key != "model_path") option->default_str(spec.format(spec.get(opts.defaults)));
    // An Int row's range beside its type, as CLI11 shows its own Range checks;
    // the check itself stays validate()'s, whose message names the setting.
    if (spec.type == SettingType::Int) {
      option->type_name(spec.min < spec.max ? fmt::format("INT in [{} - {}]", spec.min, spec.max) : "INT");
    } else {
      option->type_name(spec.type == SettingType::Bytes ? "SIZE" : "TEXT");
    }
  }
}

Result<EngineConfig> engine_config_from(const EngineOptions& opts) {
  EngineConfig config = opts.defaults;
  std::vector<std::string> errors;
  for (const auto& [key, text] : opts.given) {
    const SettingSpec* spec = find_setting(key);
    Result<SettingValue> value = spec->parse(text);
    if (!value.ok()) {
      errors.push_back(fmt::format("--{}: {}", spec->cli_option(), value.error()));
      continue;
    }
    spec->set(config, *value);
  }
  if (config.model_path.empty()) config.model_path = "(default model)";  // resolved by open_engine
  for (const SettingProblem& p : config.validate()) {
    const SettingSpec* spec = find_setting(p.field);
    errors.push_back(spec ? fmt::format("--{}: {}", spec->cli_option(), p.message) : p.message);
  }
  if (!errors.empty()) return Error{fmt::format("{}", fmt::join(errors, "\n  "))};
  return config;
}

std::vector<std::string> ignored_options(const EngineOptions& opts, const EngineConfig& config) {
  std::vector<std::string> out;
  for (const auto& [key, text] : opts.given) {
    const SettingSpec* spec = find_setting(key);
    if (spec && spec->applies && !spec->applies(config)) {
      out.push_back(fmt::format("--{} has no effect with these settings (as the settings dialog greys it out): "
                                "ignored",
                                spec->cli_option()));
    }
  }
  return out;
}

std::vector<InputFile> model_files_given(const EngineOptions& opts) {
  std::vector<InputFile> files;
  for (const auto& [key, what] : {std::pair{"model_path", "the model"}, {"spec_draft_model", "the draft model"}}) {
    if (auto it = opts.given.find(key); it != opts.given.end()) files.push_back({what, it->second});
  }
  return files;
}

std::unique_ptr<Engine> open_engine(const EngineOptions& opts, int& exit_code) {
  Result<EngineConfig> config = engine_config_from(opts);
  if (!config.ok()) {
    print_error(config.error());
    exit_code = kExitUsage;
    return nullptr;
  }
  const auto model = opts.given.find("model_path");
  const std::optional<std::string> path =
      resolve_model_path(model != opts.given.end() ? model->second : opts.defaults.model_path);
  if (!path) {
    exit_code = kExitRuntime;
    return nullptr;
  }
  config->model_path = *path;
  for (const std::string& w : ignored_options(opts, *config)) print_warning(w);
  auto engine = Engine::create(*config);
  if (!engine.ok()) {
    print_error(engine.error());
    exit_code = kExitRuntime;
    return nullptr;
  }
  for (const std::string& warning : (*engine)->warnings()) print_warning(warning);
  exit_code = kExitOk;
  return std::move(engine).value();
}

}  // namespace kvscope::cli
