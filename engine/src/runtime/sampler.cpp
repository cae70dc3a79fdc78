// Sampler and the distribution it draws from. The pipeline and its order are
// explained in sampler.h. Tests: tests/engine/runtime/sampler_test.cpp.
#include "runtime/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace kvscope {
namespace {

constexpr float kFloatMax = std::numeric_limits<float>::max();

// Up to this k, top-k keeps a heap of k and rejects most tokens with one
// compare; above it, nth_element over all candidates is cheaper.
constexpr int32_t kHeapMaxK = 2048;

// Top-p with top-k off sorts the candidates in growing chunks, starting here.
constexpr size_t kFirstTopPChunk = 256;

// Top-p with top-k off first sums the mass per bucket of log-weight x <= 0,
// kBucketsPerUnit buckets per unit of x (weights within a bucket differ by at
// most e^(1/8)), so that only tokens near the cut need sorting. The last bucket
// also takes everything below x = -128, where float weights are 0 anyway.
constexpr float kBucketsPerUnit = 8.0f;
constexpr size_t kNumBuckets = 1024;

size_t bucket_of(float x) {
  const float b = -x * kBucketsPerUnit;  // exact: a power-of-two scale
  return b < float(kNumBuckets - 1) ? size_t(b) : kNumBuckets - 1;
}

// c = (id, w) for every w >= threshold, in id order.
void collect_at_least(const std::vector<float>& w, float threshold, std::vector<TokenProb>& c) {
  c.clear();
  for (int32_t i = 0; i < int32_t(w.size()); ++i) {
    if (w[i] >= threshold) c.emplace_back(i, w[i]);
  }
}

// Higher value first, ties -> lower id. A strict total order, so every cut
// (top-k, top-p) keeps the same set on every run.
bool better(const TokenProb& a, const TokenProb& b) {
  return a.second > b.second || (a.second == b.second && a.first < b.first);
}

// NaN counts as -inf; infinities are clamped so that differences of logits stay
// finite or -inf (never NaN) and the orderings above stay strict weak orders.
float sanitize(float x) {
  if (std::isnan(x)) return -kFloatMax;
  return std::clamp(x, -kFloatMax, kFloatMax);
}

// The k best (id, logit) of row[0, n), sorted by `better`. k >= 1.
void select_top_k(const float* row, int32_t n, int32_t k, std::vector<TokenProb>& out) {
  out.clear();
  if (k >= n) {
    out.resize(n);
    for (int32_t i = 0; i < n; ++i) out[i] = {i, row[i]};
  } else if (k <= kHeapMaxK) {
    out.reserve(k);
    for (int32_t i = 0; i < k; ++i) out.emplace_back(i, row[i]);
    std::make_heap(out.begin(), out.end(), better);  // front: the worst kept token
    float worst = out.front().second;
    for (int32_t i = k; i < n; ++i) {
      // Ids grow, so a token equal to the worst has a higher id and loses the tie.
      if (row[i] > worst) {
        std::pop_heap(out.begin(), out.end(), better);
        out.back() = {i, row[i]};
        std::push_heap(out.begin(), out.end(), better);
        worst = out.front().second;
      }
    }
  } else {
    out.resize(n);
    for (int32_t i = 0; i < n; ++i) out[i] = {i, row[i]};
    std::nth_element(out.begin(), out.begin() + k, out.end(), better);
    out.resize(k);
  }
  std::sort(out.begin(), out.end(), better);
}

// Copies the row into scratch.logits (sanitised) and applies the penalties.
void copy_and_penalise(const float* logits, int32_t n, const SamplingParams& params,
                       std::span<const PenaltyEntry> penalties, SamplerScratch& scratch) {
  std::vector<float>& row = scratch.logits;
  row.resize(n);
  for (int32_t i = 0; i < n; ++i) row[i] = sanitize(logits[i]);
  for (const PenaltyEntry& e : penalties) row[e.id] = penalised_logit(row[e.id], e.count, params);
}

// Max of a sanitised (NaN-free) row. g++ will not vectorise a float max
// reduction without -ffast-math, and at vocab 262144 the scalar chain costs
// ~0.3 ms, so AVX2 does it by hand (max is exact: any order gives the same).
float max_of(const std::vector<float>& row) {
  const float* p = row.data();
  const size_t n = row.size();
  size_t i = 0;
  float max = -kFloatMax;
#if defined(__AVX2__)
  __m256 m8 = _mm256_set1_ps(-kFloatMax);
  for (; i + 8 <= n; i += 8) m8 = _mm256_max_ps(m8, _mm256_loadu_ps(p + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m8);
  for (float x : lanes) max = std::max(max, x);
#endif
  for (; i < n; ++i) max = std::max(max, p[i]);
  return max;
}

// Greedy: the first position holding the maximum of sanitize(p[i]), read
// in place (no copy of the row; at vocab 262144 the copy took most of a
// greedy draw). The AVX2 sanitise is the scalar one: max_ps returns its
// second operand for NaN, so NaN and -inf become -FLT_MAX, and min_ps then
// clamps +inf to FLT_MAX.
int32_t argmax_sanitised(const float* p, int32_t n) {
  float max = -kFloatMax;
  int32_t i = 0;
#if defined(__AVX2__)
  const __m256 lo = _mm256_set1_ps(-kFloatMax), hi = _mm256_set1_ps(kFloatMax);
  auto sanitised = [&](int32_t at) { return _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(p + at), lo), hi); };
  __m256 m8 = lo;
  for (; i + 8 <= n; i += 8) m8 = _mm256_max_ps(m8, sanitised(i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m8);
  for (float x : lanes) max = std::max(max, x);
#endif
  for (; i < n; ++i) max = std::max(max, sanitize(p[i]));
  int32_t j = 0;
#if defined(__AVX2__)
  const __m256 max8 = _mm256_set1_ps(max);
  for (; j + 8 <= n; j += 8) {
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(sanitised(j), max8, _CMP_EQ_OQ));
    if (hits != 0) return j + __builtin_ctz(static_cast<unsigned>(hits));
  }
#endif
  for (; j < n; ++j) {
    if (sanitize(p[j]) == max) return j;
  }
  return 0;  // not reached: max is one of the values
}

// c holds (id, weight). Sorts just enough of c (by `better`) to find the
// smallest prefix whose weight sum >= mass; returns its length (>= 1, or
// c.size() if rounding keeps the sum short). c[0, result) ends up sorted.
size_t top_p_prefix(std::vector<TokenProb>& c, double mass) {
  double cum = 0.0;
  size_t done = 0;
  size_t end = std::min(kFirstTopPChunk, c.size());
  while (true) {
    if (end < c.size()) std::nth_element(c.begin() + done, c.begin() + end, c.end(), better);
    std::sort(c.begin() + done, c.begin() + end, better);
    for (size_t i = done; i < end; ++i) {
      cum += c[i].second;
      if (cum >= mass) return i + 1;
    }
    if (end == c.size()) return c.size();
    done = end;
    end = std::min(end * 4, c.size());
  }
}

// Uniform in [0, 1) from the top 53 bits: exact doubles, and the same on every
// standard library (std::uniform_real_distribution is implementation-defined).
double next_uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

}  // namespace

bool penalties_on(const SamplingParams& params) {
  return params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
}

void penalty_entries(const SamplingParams& params, std::span<const int32_t> recent_tokens, int32_t vocab_size,
                     std::vector<int32_t>& window, std::vector<PenaltyEntry>& out) {
  out.clear();
  if (!penalties_on(params) || params.repeat_last_n == 0 || recent_tokens.empty()) return;
  const size_t num_window = params.repeat_last_n < 0 ? recent_tokens.size()
                                                     : std::min(recent_tokens.size(), size_t(params.repeat_last_n));
  std::span<const int32_t> tail = recent_tokens.last(num_window);
  window.assign(tail.begin(), tail.end());
  std::sort(window.begin(), window.end());  // equal ids become runs: count = run length
  for (size_t i = 0; i < window.size();) {
    const int32_t id = window[i];
    size_t j = i;
    while (j < window.size() && window[j] == id) ++j;
    const float count = float(j - i);
    i = j;
    if (id >= 0 && id < vocab_size) out.push_back({id, count});  // else not a token of this vocabulary
  }
}

float penalised_logit(float logit, float count, const SamplingParams& params) {
  float l = logit > 0.0f ? logit / params.repetition_penalty : logit * params.repetition_penalty;
  // One fused multiply-add, written out, so that the compiler's contraction
  // choice cannot change the bits (the GPU's penalty kernel does the same).
  l -= std::fma(count, params.frequency_penalty, params.presence_penalty);
  return sanitize(l);
}

void probability_distribution(const float* logits, int32_t vocab_size,
                              const SamplingParams& params,
                              std::span<const int32_t> recent_tokens, SamplerScratch& scratch,
                              std::vector<TokenProb>& out) {
  penalty_entries(params, recent_tokens, vocab_size, scratch.window, scratch.penalties);
  probability_distribution(logits, vocab_size, params, std::span<const PenaltyEntry>(scratch.penalties), scratch,
                           out);
}

void probability_distribution(const float* logits, int32_t vocab_size, const SamplingParams& params,
                              std::span<const PenaltyEntry> penalties, SamplerScratch& scratch,
                              std::vector<TokenProb>& out) {
  assert(vocab_size >= 1 && "probability_distribution needs at least one logit");
  out.clear();
  if (params.temperature == 0.0f && penalties.empty()) {
    out.emplace_back(argmax_sanitised(logits, vocab_size), 1.0f);
    return;
  }
  copy_and_penalise(logits, vocab_size, params, penalties, scratch);
  std::vector<float>& row = scratch.logits;

  if (params.temperature == 0.0f) {
    out.emplace_back(argmax_sanitised(row.data(), vocab_size), 1.0f);
    return;
  }

  // After this block c holds (id, w) with w = exp((logit - max) / T) in [0, 1],
  // w = 1 for the best token, and z is the softmax normaliser of the support.
  const float t = params.temperature;
  std::vector<TokenProb>& c = scratch.candidates;
  double z = 0.0;
  bool sorted = false;
  if (params.top_k > 0 && params.top_k < vocab_size) {
    select_top_k(row.data(), vocab_size, params.top_k, c);
    const float max = c.front().second;
    for (TokenProb& e : c) {
      e.second = std::exp((e.second - max) / t);
      z += e.second;
    }
    sorted = true;
  } else {
    const float max = max_of(row);
    const bool top_p_on = params.top_p < 1.0f;
    std::vector<double>& mass_per_bucket = scratch.mass_per_bucket;
    if (top_p_on) mass_per_bucket.assign(kNumBuckets, 0.0);
    for (float& l : row) {
      const float x = (l - max) / t;  // log(w), <= 0
      l = std::exp(x);
      z += l;
      if (top_p_on) mass_per_bucket[bucket_of(x)] += l;
    }
    // Both min-p and top-p keep a prefix of the sorted order, so the candidates
    // can be cut at a weight threshold before anything is sorted: min-p's own,
    // and for top-p the lower edge of the bucket where the mass reaches top_p
    // (everything above it is needed, nothing far below it can be). z keeps
    // the whole vocabulary's mass, which top-p's fraction is measured against.
    float threshold = params.min_p;
    if (top_p_on) {
      const double mass = double(params.top_p) * z;
      double cum = 0.0;
      size_t b = 0;
      for (; b < kNumBuckets; ++b) {
        cum += mass_per_bucket[b];
        if (cum >= mass) break;
      }
      if (b < kNumBuckets - 1) {
        // Bucket b holds x > -(b + 1) / kBucketsPerUnit; the margin covers exp's rounding.
        threshold = std::max(threshold, std::exp(-float(b + 1) / kBucketsPerUnit) * 0.999f);
      }
    }
    collect_at_least(row, threshold, c);
    if (top_p_on && threshold > params.min_p) {
      double kept = 0.0;
      for (const TokenProb& e : c) kept += e.second;
      if (kept < double(params.top_p) * z) collect_at_least(row, params.min_p, c);  // rounding
    }
  }

  if (params.top_p < 1.0f) {
    const double mass = double(params.top_p) * z;
    size_t keep = c.size();
    if (sorted) {
      double cum = 0.0;
      for (size_t i = 0; i < c.size(); ++i) {
        cum += c[i].second;
        if (cum >= mass) {
          keep = i + 1;
          break;
        }
      }
    } else {
      keep = top_p_prefix(c, mass);
    }
    c.resize(keep);
  }

  // min-p: p / p_max == w, since p_max has w == 1. Keeps the best token always.
  if (params.min_p > 0.0f) {
    c.erase(std::remove_if(c.begin(), c.end(),
                           [&](const TokenProb& e) { return e.second < params.min_p; }),
            c.end());
  }

  double sum = 0.0;
  for (const TokenProb& e : c) sum += e.second;
  out.reserve(c.size());
  for (const TokenProb& e : c) out.emplace_back(e.first, float(e.second / sum));
}

int32_t draw_token(std::span<const TokenProb> d, double u) {
  assert(!d.empty() && "draw_token: empty distribution");
  double total = 0.0;
  for (const TokenProb& t : d) total += t.second;
  const double target = u * total;
  double cum = 0.0;
  for (const TokenProb& t : d) {
    cum += t.second;
    if (cum > target) return t.first;
  }
  for (auto it = d.rbegin(); it != d.rend(); ++it) {  // rounding: last token with p > 0
    if (it->second > 0.0f) return it->first;
  }
  return d.front().first;
}

std::vector<TokenProb> probability_distribution(const float* logits, int32_t vocab_size,
                                                const SamplingParams& params,
                                                std::span<const int32_t> recent_tokens) {
  SamplerScratch scratch;
  std::vector<TokenProb> out;
  probability_distribution(logits, vocab_size, params, recent_tokens, scratch, out);
  return out;
}

namespace {
// log sum exp of sanitised logits, in double.
double log_sum_exp(const float* logits, int n) {
  float max = -kFloatMax;
  for (int i = 0; i < n; ++i) max = std::max(max, sanitize(logits[i]));
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += std::exp(double(sanitize(logits[i])) - double(max));
  return double(max) + std::log(s);
}
}  // namespace

bool logits_not_finite(const float* logits, int32_t n) {
  // An integer OR over the row, no early exit: a reduction the compiler
  // vectorises (a float sum would be one serial chain of adds).
  int not_finite = 0;
  for (int32_t i = 0; i < n; ++i) not_finite |= !(std::fabs(logits[i]) <= std::numeric_limits<float>::max());
  return not_finite != 0;
}

float log_softmax_of(const float* logits, int n, int32_t id) {
  assert(n >= 1 && id >= 0 && id < n && "log_softmax_of: id out of range");
  const double lse = log_sum_exp(logits, n);
  return float(double(sanitize(logits[id])) - lse);
}

std::vector<TokenProb> top_n(const float* logits, int n, int k) {
  std::vector<TokenProb> out;
  if (k <= 0 || n <= 0) return out;
  std::vector<float> row(n);
  for (int i = 0; i < n; ++i) row[i] = sanitize(logits[i]);
  select_top_k(row.data(), n, k, out);
  const double lse = log_sum_exp(logits, n);
  for (TokenProb& e : out) e.second = float(double(e.second) - lse);
  return out;
}

Result<Sampler> Sampler::create(const SamplingParams& params) {
  Status status = params.validate();
  if (!status.ok()) return Error{"sampling parameters: " + status.error()};
  return Sampler(params);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), seed_(params.seed) {
  assert(params.validate().ok() && "Sampler needs validated SamplingParams");
  if (seed_ == 0) {
    std::random_device device;
    seed_ = (uint64_t(device()) << 32) ^ uint64_t(device());
    if (seed_ == 0) seed_ = 1;  // 0 would mean "random" again when reported back
  }
  rng_.seed(seed_);
  if (params.constraint) constraint_.emplace(params.constraint);
}

int32_t Sampler::sample(const float* logits, int32_t vocab_size,
                        std::span<const int32_t> recent_tokens) {
  probability_distribution(logits, vocab_size, params_, recent_tokens, scratch_, distribution_);
  if (params_.temperature == 0.0f) return distribution_.front().first;
  return draw_token(distribution_, next_uniform(rng_));
}

double Sampler::take_uniform() { return next_uniform(rng_); }

}  // namespace kvscope
