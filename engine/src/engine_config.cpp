#include <fmt/format.h>

#include "kvscope/engine_config.h"
#include "kvscope/request.h"
#include "kvscope/setting_table.h"

namespace kvscope {

std::vector<SettingProblem> EngineConfig::validate() const {
  std::vector<SettingProblem> problems;
  for (const SettingSpec& spec : engine_settings()) {
    if (std::optional<SettingProblem> p = spec.check(spec.get(*this))) problems.push_back(std::move(*p));
  }
  // Rules that tie settings together (each row's own range is checked above).
  if (model_path.empty()) problems.push_back({"model_path", "no model file given"});
  if (spec == SpecMethod::Draft && spec_draft_model.empty()) {
    problems.push_back({"spec_draft_model", "speculative decoding with a draft model needs a draft model file"});
  }
  return problems;
}

const char* spec_method_name(SpecMethod method) {
  switch (method) {
    case SpecMethod::Off: return "off";
    case SpecMethod::Ngram: return "ngram";
    case SpecMethod::Draft: return "draft";
    case SpecMethod::EarlyExit: return "early_exit";
  }
  return "unknown";
}

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context_full";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

}  // namespace kvscope
