// Synthetic workload prompts and presets (see workload_prompts.h).
#include "workload_prompts.h"

#include <algorithm>
#include <random>
#include <set>

#include <QCoreApplication>

namespace kvscope::ui {
namespace {

std::vector<int32_t> seededIds(std::mt19937_64& rng, int n, int32_t vocab_size) {
  const int32_t vocab = std::max(vocab_size, 2);
  const int32_t lo = vocab >= 1024 ? vocab / 64 + 256 : std::min(4, vocab - 1);
  const int32_t hi = vocab >= 1024 ? vocab - vocab / 8 : vocab;
  std::uniform_int_distribution<int32_t> dist(lo, std::max(lo, hi - 1));
  std::vector<int32_t> ids(static_cast<size_t>(std::max(n, 0)));
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

}  // namespace

WorkloadSpec systemPromptWorkload(int num_requests) {
  WorkloadSpec spec;
  spec.num_requests = std::max(num_requests, 1);
  spec.shared_prefix_len = kSystemPromptTokens;
  spec.prompt_len = kSystemPromptTokens + 16;  // a short question of its own
  spec.output_len = 128;  // long enough to switch cascade on and off while it decodes
  spec.arrival_rate_per_s = 0.0;
  return spec;
}

std::vector<WorkloadPreset> workloadPresets() {
  return {{QStringLiteral("system-prompt"),
           QCoreApplication::translate("kvscope::ui::WorkloadPreset",
                                       "N requests sharing a 2,000-token system prompt"),
           systemPromptWorkload()}};
}

bool findWorkloadPreset(const QString& key, int num_requests, WorkloadSpec* spec) {
  for (const WorkloadPreset& preset : workloadPresets()) {
    if (preset.key != key) continue;
    *spec = preset.spec;
    if (num_requests > 0) spec->num_requests = num_requests;
    return true;
  }
  return false;
}

std::vector<std::vector<int32_t>> workloadPrompts(const WorkloadSpec& spec, int32_t vocab_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int prompt_len = std::max(spec.prompt_len, 1);
  const int prefix_len = std::clamp(spec.shared_prefix_len, 0, prompt_len);
  const int suffix_len = std::max(1, prompt_len - prefix_len);
  const std::vector<int32_t> prefix = seededIds(rng, prefix_len, vocab_size);
  std::vector<std::vector<int32_t>> prompts;
  std::set<std::vector<int32_t>> suffixes;
  for (int i = 0; i < std::max(spec.num_requests, 0); ++i) {
    // A repeat would make two requests identical (one a prefix-cache copy
    // of the other); draw again, a few times, in case the vocabulary is tiny.
    std::vector<int32_t> suffix = seededIds(rng, suffix_len, vocab_size);
    for (int retry = 0; retry < 16 && suffixes.count(suffix) > 0; ++retry) suffix = seededIds(rng, suffix_len, vocab_size);
    suffixes.insert(suffix);
    std::vector<int32_t> prompt = prefix;
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    prompts.push_back(std::move(prompt));
  }
  return prompts;
}

}  // namespace kvscope::ui
