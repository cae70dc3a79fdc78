// read_gguf_sampling / read_generation_config: see recommended_sampling.h.
#include "model/recommended_sampling.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvscope {
namespace {

// Sets one recommended field after checking it the way a request is checked:
// the value goes into kvscope's defaults and SamplingParams::validate() judges.
class Recorder {
 public:
  explicit Recorder(RecommendedSampling& out) : out_(out) {}

  template <typename T>
  void set(const std::string& key, std::string_view field, T value, std::optional<T>& into) {
    SamplingParams trial = kvscope_sampling_defaults();
    set_field(trial, field, value);
    if (const Status s = trial.validate(); !s.ok()) {
      out_.ignored.push_back(fmt::format("{}: {}", key, s.error()));
      return;
    }
    into = value;
  }
  void wrong_type(const std::string& key, const char* wanted) {
    out_.ignored.push_back(fmt::format("{}: not {}", key, wanted));
  }

 private:
  template <typename T>
  static void set_field(SamplingParams& p, std::string_view field, T value) {
    if (field == "temperature") p.temperature = static_cast<float>(value);
    else if (field == "top_k") p.top_k = static_cast<int32_t>(value);
    else if (field == "top_p") p.top_p = static_cast<float>(value);
    else if (field == "min_p") p.min_p = static_cast<float>(value);
    else if (field == "repetition_penalty") p.repetition_penalty = static_cast<float>(value);
    else if (field == "repeat_last_n") p.repeat_last_n = static_cast<int32_t>(value);
  }
  RecommendedSampling& out_;
};

// Integers beyond int32 are out of every range validate() accepts.
int32_t clamp_int(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

}  // namespace

RecommendedSampling read_gguf_sampling(const GgufFile& f) {
  RecommendedSampling r;
  Recorder rec(r);
  auto real = [&](const char* name, std::string_view field, std::optional<float>& into) {
    const std::string key = std::string("general.sampling.") + name;
    if (!f.find(key)) return;
    const auto v = f.get_float(key);
    if (!v) return rec.wrong_type(key, "a number");
    float value = static_cast<float>(*v);
    // llama.cpp samples greedily at temp <= 0; kvscope says so with 0.
    if (field == "temperature" && value < 0.0f) value = 0.0f;
    rec.set(key, field, value, into);
  };
  auto integer = [&](const char* name, std::string_view field, std::optional<int32_t>& into) {
    const std::string key = std::string("general.sampling.") + name;
    if (!f.find(key)) return;
    const auto v = f.get_int(key);
    if (!v) return rec.wrong_type(key, "an integer");
    int32_t value = clamp_int(*v);
    // llama.cpp: top_k <= 0 means the whole vocabulary, which is kvscope's 0 (off).
    if (field == "top_k" && value < 0) value = 0;
    rec.set(key, field, value, into);
  };
  real("temp", "temperature", r.temperature);
  integer("top_k", "top_k", r.top_k);
  real("top_p", "top_p", r.top_p);
  real("min_p", "min_p", r.min_p);
  real("penalty_repeat", "repetition_penalty", r.repetition_penalty);
  integer("penalty_last_n", "repeat_last_n", r.repeat_last_n);
  if (!r.empty()) r.source = "GGUF general.sampling.*";
  return r;
}

RecommendedSampling read_generation_config(const std::string& dir) {
  RecommendedSampling r;
  const std::filesystem::path path = std::filesystem::path(dir) / "generation_config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return r;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    r.ignored.push_back(fmt::format("{}: not a JSON object", path.string()));
    return r;
  }
  Recorder rec(r);
  // Only the values written there count. do_sample is not read: transformers
  // defaults it to false (greedy), and many files that recommend a
  // temperature leave it out.
  auto real = [&](const char* key, std::string_view field, std::optional<float>& into) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number()) return rec.wrong_type(std::string("generation_config.json ") + key, "a number");
    rec.set(std::string("generation_config.json ") + key, field, it->get<float>(), into);
  };
  auto integer = [&](const char* key, std::string_view field, std::optional<int32_t>& into) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number_integer()) return rec.wrong_type(std::string("generation_config.json ") + key, "an integer");
    rec.set(std::string("generation_config.json ") + key, field, clamp_int(it->get<int64_t>()), into);
  };
  real("temperature", "temperature", r.temperature);
  integer("top_k", "top_k", r.top_k);
  real("top_p", "top_p", r.top_p);
  real("min_p", "min_p", r.min_p);
  real("repetition_penalty", "repetition_penalty", r.repetition_penalty);
  if (!r.empty()) r.source = "generation_config.json";
  return r;
}

}  // namespace kvscope
