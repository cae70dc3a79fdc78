// InvarianceReport's reading of a check (see kvscope/invariance_check.h):
// the verdict counts, the settings a side asked for but never exercised
// (unexercised), and the settings that change numbers by design
// (expected_differences). Pure functions of the report: tested without an
// engine in tests/engine/runtime/invariance_expected_test.cpp and
// invariance_check_test.cpp.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "context_shift.h"
#include "kernels/cpu/paged_attention.h"
#include "kvscope/invariance_check.h"
#include "kvscope/setting_table.h"
#include "runtime/cascade_plan.h"

namespace kvscope {

bool InvarianceReport::all_identical() const {
  return std::all_of(prompts.begin(), prompts.end(), [](const PromptVerdict& v) { return v.identical; });
}

std::vector<std::string> InvarianceReport::unexercised() const {
  std::vector<std::string> notes;
  const auto check = [&notes](const char* name, const InvarianceSide& side, const InvarianceSide& other,
                              const InvarianceRunStats& stats, const InvarianceRunStats& other_stats) {
    const EngineConfig& c = side.config;
    const EngineConfig& o = other.config;
    // auto against on is on against not-on: auto staying out is the point.
    const bool auto_against_on = c.cascade == CascadeMode::Auto && o.cascade == CascadeMode::On;
    if (c.cascade != CascadeMode::Off && c.cascade != o.cascade && !auto_against_on && stats.num_cascade_steps == 0) {
      // A group's prefix is whole shared blocks already computed, rounded
      // down to attention tiles (runtime/cascade_plan.h): the block that
      // holds a prompt's last token is never shared.
      // Sequences share blocks only when paged through the prefix cache
      // (the checker's runs are separate requests): name that cause first.
      // auto also needs enough sequences sharing enough (cascade_plan.h).
      const bool is_auto = c.cascade == CascadeMode::Auto;
      const int32_t min_seqs = is_auto ? kAutoCascadeMinSeqs : 2;
      const int32_t min_shared = is_auto ? std::max(kAutoCascadeMinSharedTokens, kAttentionTile) : kAttentionTile;
      std::string why;
      if (!c.paged) {
        why = "paged attention is off: a contiguous request shares no block";
      } else if (!c.prefix_caching) {
        why = "prefix caching is off: separate requests share no block";
      } else if (side.concurrency < min_seqs) {
        why = is_auto ? fmt::format("auto groups at least {} sequences sharing a prefix; concurrency = {} runs "
                                    "fewer: set concurrency={} or more",
                                    min_seqs, side.concurrency, min_seqs)
                      : fmt::format("concurrency = {}: one sequence has no other to share a prefix with; set "
                                    "concurrency=2 or more",
                                    side.concurrency);
      } else if (stats.max_batch_seqs < min_seqs) {
        why = fmt::format("no step ran {} sequences together (at most {}{}), and a pass needs {}", min_seqs,
                          stats.max_batch_seqs,
                          c.max_seqs < min_seqs ? fmt::format(": max_seqs = {} limits a step", c.max_seqs) : "",
                          min_seqs);
      } else {
        why = fmt::format("sequences running together must share at least {} computed tokens of whole "
                          "{}-token blocks: longer prompts with a common start, of {} tokens or more",
                          min_shared, c.block_size,
                          (min_shared + c.block_size - 1) / c.block_size * c.block_size + 1);
      }
      notes.push_back(fmt::format("{}: cascade = {}, but no step ran a cascade pass ({})", name,
                                  cascade_mode_name(c.cascade), why));
    }
    if (side.concurrency > 1 && side.concurrency != other.concurrency && stats.max_checked_batch_seqs <= 1) {
      notes.push_back(fmt::format("{}: concurrency = {}, but no step ran the checked request beside another "
                                  "sequence{}",
                                  name, side.concurrency,
                                  c.policy == SchedulingPolicy::Static
                                      ? " (policy = static runs a batch to its end before admitting more)"
                                      : ""));
    }
    // Only when neither side preempted: one that did exercised the
    // difference against the other's unpreempted run (a side that never
    // asked for its mode, the default, was then noted for nothing).
    if (c.preemption != o.preemption && stats.num_preemptions == 0 && other_stats.num_preemptions == 0) {
      notes.push_back(fmt::format("{}: preemption = {}, but no sequence was preempted (the KV pool never ran "
                                  "out: fewer num_blocks and more concurrency make it)",
                                  name, preemption_mode_name(c.preemption)));
    } else if (c.preemption == PreemptionMode::Swap && o.preemption != PreemptionMode::Swap &&
               stats.num_preemptions > 0 && stats.num_swapped_out_blocks == 0) {
      notes.push_back(fmt::format("{}: preemption = swap, but every preemption recomputed (the swap space never "
                                  "had room for the sequence's blocks: raise swap_space)",
                                  name));
    }
    if (c.spec != SpecMethod::Off && c.spec != o.spec) {
      if (stats.num_draft_tokens == 0) {
        notes.push_back(fmt::format("{}: spec = {}, but no draft token was verified", name, spec_method_name(c.spec)));
      } else if (stats.num_spec_steps * 4 < stats.num_decode_steps) {
        // Speculation pauses for a sequence whose drafts do not pay (a draft
        // priced like the model never does): then few steps verified any.
        notes.push_back(fmt::format("{}: spec = {}, but only {} of {} decoding steps verified draft tokens "
                                    "(speculation pauses where drafts do not pay)",
                                    name, spec_method_name(c.spec), stats.num_spec_steps, stats.num_decode_steps));
      }
    }
    if (c.prefix_caching && !o.prefix_caching && stats.num_prefix_hit_tokens == 0) {
      notes.push_back(fmt::format("{}: prefix caching is on, but no prompt token came from the cache (no prompt "
                                  "repeated a whole block of an earlier one)",
                                  name));
    }
  };
  check("a", a, b, stats_a, stats_b);
  check("b", b, a, stats_b, stats_a);
  return notes;
}

std::vector<std::string> InvarianceReport::expected_differences() const {
  std::vector<std::string> notes;
  const EngineConfig& x = a.config;
  const EngineConfig& y = b.config;
  const auto differs = [&](std::string_view key, std::string_view why) {
    const std::string va = setting_text(x, key), vb = setting_text(y, key);
    if (va != vb) notes.push_back(fmt::format("{} differs (a: {}, b: {}): {}", key, va, vb, why));
  };
  differs("model_path", "the sides run different models");
  differs("kv_cache_type", "the two types store different numbers, so a divergence is expected; invariance holds "
                           "within one type");
  if (!stats_a.backend.empty() && !stats_b.backend.empty() && stats_a.backend != stats_b.backend) {
    notes.push_back(fmt::format("the sides ran on different backends (a: {}, b: {}): their kernels add in other "
                                "orders, so the logits differ by rounding and a near-tie may go either way",
                                stats_a.backend, stats_b.backend));
  }
  // The GPU settings do nothing on the CPU ("" : not known, as in a report
  // built by hand).
  const bool on_gpu = stats_a.backend != "cpu" || stats_b.backend != "cpu";
  if (on_gpu) {
    differs("gpu_matmul", "the two matmuls round differently (about 1e-6), so the logits differ and a near-tie may "
                          "go either way");
    if (x.gpu_prefill_gemm || y.gpu_prefill_gemm) {
      notes.push_back(fmt::format("gpu_prefill_gemm is on (a: {}, b: {}): a prompt row's bits then depend on how "
                                  "its prefill is chunked and batched",
                                  x.gpu_prefill_gemm, y.gpu_prefill_gemm));
    }
  }
  // Context shifts drop whole blocks after context_keep's: sides that cut
  // at other places hold different contexts after the first shift.
  const bool shifted = stats_a.num_context_shifts > 0 || stats_b.num_context_shifts > 0;
  if (shifted && x.context_overflow == ContextOverflow::Shift && y.context_overflow == ContextOverflow::Shift) {
    const auto kept_blocks = [](const EngineConfig& c) {
      return plan_context_shift(c.max_model_len - 1, c.block_size, c.context_keep, c.max_model_len);
    };
    const ContextShiftPlan pa = kept_blocks(x), pb = kept_blocks(y);
    if (pa.keep_blocks * x.block_size != pb.keep_blocks * y.block_size ||
        pa.drop_blocks * x.block_size != pb.drop_blocks * y.block_size) {
      notes.push_back(fmt::format("the sides' context shifts drop different tokens (a: keeps {} and drops {}, b: "
                                  "keeps {} and drops {}; a shift works in whole {}- and {}-token blocks after "
                                  "context_keep), so after the first shift they hold different contexts",
                                  pa.keep_blocks * x.block_size, pa.drop_blocks * x.block_size,
                                  pb.keep_blocks * y.block_size, pb.drop_blocks * y.block_size, x.block_size,
                                  y.block_size));
    }
  }
  // Recompute after a shift prefills the kept tokens without the dropped
  // middle (docs/context-overflow.md): the one exception to preemption
  // keeping the numbers.
  for (const auto& [name, c, st] : {std::tuple{"a", &x, &stats_a}, std::tuple{"b", &y, &stats_b}}) {
    const bool recomputed = c->preemption == PreemptionMode::Recompute || st->num_swapped_out_blocks == 0;
    if (st->num_context_shifts > 0 && st->num_preemptions > 0 && recomputed) {
      notes.push_back(fmt::format("{}: sequences were preempted and recomputed where contexts shift: a shifted "
                                  "sequence recomputed prefills its kept tokens without the dropped middle, so its "
                                  "later tokens may differ (preemption = swap, with room in swap_space, keeps them)",
                                  name));
    }
  }
  // The order of a layer's sums: fast at tp = 1 is the plain runner's; fast
  // at tp > 1 adds the ranks' parts after them; deterministic adds fixed
  // chunks in a fixed order at every tp, which is the same at every tp but
  // not the plain runner's order (docs/tensor-parallel.md). Sides with the
  // same order keep the invariance; sides with different ones round apart.
  // On the CPU only: the CUDA backend runs one rank and ignores tp_reduce.
  const bool on_cuda = stats_a.backend == "cuda" || stats_b.backend == "cuda";
  const auto sum_order = [](const EngineConfig& c) { return c.tp_reduce == TpReduce::Deterministic ? 0 : c.tp; };
  if (!on_cuda && sum_order(x) != sum_order(y)) {
    notes.push_back(fmt::format("tensor parallelism differs (a: tp {} {}, b: tp {} {}): the sides add a layer's "
                                "sums in different orders (tp_reduce = fast at tp 1 is the plain sum, at tp > 1 "
                                "the ranks' parts are added after it; deterministic adds fixed chunks, the same at "
                                "every tp), so the logits change by rounding and a near-tie may go either way",
                                x.tp, setting_text(x, "tp_reduce"), y.tp, setting_text(y, "tp_reduce")));
  }
  return notes;
}

std::string InvarianceReport::different_prompt_reason() const {
  return a.config.model_path != b.config.model_path ? "the two models tokenize the prompt differently"
                                                    : "their settings cut the prompt differently; each side's "
                                                      "warnings say how";
}

int32_t InvarianceReport::num_identical() const {
  return static_cast<int32_t>(
      std::count_if(prompts.begin(), prompts.end(), [](const PromptVerdict& v) { return v.identical; }));
}

}  // namespace kvscope
