// EngineConfig: every knob of the engine that is fixed while it runs.
// The defaults are the member initialisers below; names, ranges, units and
// help for the user-facing knobs are rows of the setting table
// (setting_table.h), which validate() checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/kv_cache_type.h"
#include "kvscope/result.h"
#include "kvscope/setting_table.h"

namespace kvscope {

// How requests get into a batch.
enum class SchedulingPolicy {
  Continuous,  // iteration-level: a request joins or leaves at any step (vLLM)
  Static,      // a batch is admitted together; none joins until all in it finish
               // (Hugging Face generate), the baseline continuous batching beats
};

// What happens to a running request when KV blocks run out.
enum class PreemptionMode {
  Recompute,  // free its blocks, requeue it first; its tokens are computed again
  Swap,       // copy its blocks to host swap space, bring them back later
};

// Cascade attention: when running sequences share the physical blocks of a
// prefix, attend to that prefix once for all their query rows (each K/V tile
// read once per step instead of once per sequence), then to each sequence's
// own blocks, merging the partial states. Bitwise the same logits as off.
enum class CascadeMode {
  Off,   // every sequence reads its whole table itself
  Auto,  // only where it pays (runtime/cascade_plan.h says when)
  On,    // for every group of two or more sequences sharing a tile-aligned prefix
};
// Where Auto runs a shared pass: this many sequences sharing at least this
// many tokens (runtime/cascade_plan.h says why).
inline constexpr int32_t kAutoCascadeMinSharedTokens = 128;
inline constexpr int32_t kAutoCascadeMinSeqs = 4;

// Speculative decoding (docs/speculative.md): a proposer guesses a few
// tokens ahead and the model checks them all in one forward pass, keeping
// those it would have produced itself. Same output, faster when guesses hold.
enum class SpecMethod {
  Off,    // one token per sequence per step
  Ngram,  // prompt lookup: what followed the last few tokens earlier in the sequence (spec/ngram_proposer.h)
  Draft,  // a second, smaller model with the same vocabulary drafts greedily (spec/model_proposer.h)
  EarlyExit,  // the target's first spec_early_exit_layer layers + final norm + head draft greedily
};

// What happens when a sequence's context (max_model_len) is full
// (docs/context-overflow.md).
enum class ContextOverflow {
  Stop,            // the sequence finishes (FinishReason::ContextFull); prompts that do not fit are refused
  Shift,           // drop whole blocks after the first context_keep tokens, re-rotate the later keys, go on
  TruncateMiddle,  // a prompt that does not fit loses its middle at submit; running sequences stop
};

// How the partial products of the row-parallel matmuls are summed under
// tensor parallelism (tp; docs/tensor-parallel.md).
enum class TpReduce {
  Fast,           // each rank's whole K slice, then the ranks in rank order: tp changes the rounding
  Deterministic,  // a fixed set of K chunks summed in chunk order at every tp: tp = 1, 2, 4 give the same bits
};

// Which backend runs the model (runtime/backend.h; kvscope/backend_choice.h
// says what each becomes on this build and machine).
enum class BackendKind {
  Cpu,   // the CPU kernels (kernels/cpu), with or without tensor parallelism
  Cuda,  // an NVIDIA GPU; loading fails, saying why, where it cannot run
  Auto,  // CUDA when the build has it and a device is present, else the CPU
};

// How the CUDA backend's quantised matmuls (matvec_q, every row's) multiply
// (kernels/cuda/matvec_q.cuh's MatvecMath). Either is one math for every
// row, so each keeps the bitwise invariance; they round differently from
// each other, so logits under one are not bitwise those under the other.
enum class GpuMatmul {
  F32,          // f32 FMA chains: the faster for one sequence
  TensorCores,  // f16 tensor-core products (quants exact, activations as two f16 parts), f32 sums:
                // ~2.4x the throughput from 64 sequences and ~1.9x the prefill (H200)
};

// Whether the CUDA backend computes each RMSNorm inside the matmul that reads
// it and each residual add inside the matmul that produces it (7 kernels per
// layer instead of 9). The same arithmetic either way, so the same bits; only
// the speed differs (runtime/norm_fusion.h has the rule and the measurements).
enum class GpuNormFusion {
  Auto,  // where measured faster: always with f32 matmuls, with tensor cores in steps of at most 16 rows
  On,
  Off,
};

const char* backend_kind_name(BackendKind kind);  // "cpu", "cuda", "auto"
const char* scheduling_policy_name(SchedulingPolicy policy);
const char* spec_method_name(SpecMethod method);
const char* cascade_mode_name(CascadeMode mode);
const char* preemption_mode_name(PreemptionMode mode);

struct EngineConfig {
  std::string model_path;          // a .gguf file or a Hugging Face model directory
  BackendKind backend = BackendKind::Auto;  // what runs the model (ModelInfo::backend_reason says why)
  // The CUDA backend: a sequence with more than 16 rows in a step (a prompt)
  // multiplies through the tensor cores (weights dequantised to bf16 tile by
  // tile, cuBLAS) instead of matvec_q: much faster prefill, but activations
  // rounded to bf16 and a row's bits then depend on how its prompt was
  // chunked or cached, so the bitwise invariance of those rows is given up
  // (docs/cuda.md). Ignored on the CPU.
  bool gpu_prefill_gemm = false;
  // The backend draws the next token of a row that needs nothing but the
  // token (no grammar, no logprobs, not a speculative verification, not the
  // first token of parallel samples), by the sampler's rule with the
  // sequence's own random numbers, so only the token id leaves the GPU. Off:
  // every row's logits come back and the engine's sampler draws. The tokens
  // are the same, but for a draw at a near-tie (the GPU sums in another
  // order); on the CPU both run the same host code (runtime/token_draw.h),
  // the backend's on the engine's threads.
  bool gpu_sampling = true;
  // The CUDA backend replays a step's launches (embedding to the head) as one
  // CUDA graph, captured the second time a step of the same shape comes (a
  // decode batch's, every step): the same kernels with the same arguments,
  // so the same bits, with one launch instead of ~210 (~270 without norm
  // fusion). Off: every kernel launched one by one. Ignored on the CPU.
  bool gpu_graphs = true;
  // How the CUDA backend's quantised matmuls multiply (GpuMatmul above;
  // docs/cuda.md has the measurements). Ignored on the CPU.
  GpuMatmul gpu_matmul = GpuMatmul::F32;
  // The CUDA backend lets each kernel of a step be scheduled while the one
  // before it still runs (programmatic dependent launch, Hopper or later;
  // kernels/cuda/overlapped_launch.h): every kernel waits for its
  // predecessor's results before touching memory, so the same work in the
  // same order and the same bits, without the gap between small kernels.
  // Process-wide while a backend runs. Ignored on the CPU and before Hopper.
  bool gpu_overlap_launches = true;
  // The CUDA backend times each layer's attention with a pair of CUDA events
  // (StepStats::attention_time_s, the inspector's attention plot) in one step
  // of every kAttentionTimingInterval (cuda_backend.h): the events sit between
  // a step's kernels, where they cost the overlap of launches (every step
  // timed, one sequence decoded 14% slower on an H200). The other steps, and
  // every step when off, have no attention time. Ignored on the CPU, which
  // always times its attention.
  bool gpu_attention_timing = true;
  // GpuNormFusion above. Ignored on the CPU and in steps with tensor-core
  // prefill GEMM rows.
  GpuNormFusion gpu_norm_fusion = GpuNormFusion::Auto;
  int32_t num_threads = 0;         // 0: one per available core
  int32_t tp = 1;                  // tensor-parallel ranks (threads of this process), each a slice of the model
  TpReduce tp_reduce = TpReduce::Fast;
  int32_t block_size = 16;         // token slots per KV block
  int64_t kv_budget_bytes = 512ll << 20;  // memory for the KV pool; ignored when num_blocks > 0
  // On the CUDA backend (and num_blocks 0): this percent of the GPU's free
  // memory, read when the model loads, holds the weights, the workspace and
  // the KV pool, which gets the rest (vLLM's gpu_memory_utilization, as a
  // percent). 0: kv_budget sizes the pool as on the CPU. Ignored on the CPU.
  int32_t gpu_memory_percent = 0;
  int32_t num_blocks = 0;          // exact pool size when > 0
  int32_t max_seqs = 64;           // sequences in one step
  int32_t max_batched_tokens = 512;  // query rows in one step (prefill is chunked to fit)
  int32_t max_model_len = 0;       // 0: the model's trained context length, or the KV pool's tokens if fewer
  ContextOverflow context_overflow = ContextOverflow::Stop;
  // Tokens at the start (the system prompt) a shift or truncate_middle keeps;
  // at most half the context is kept whatever this says.
  int32_t context_keep = 256;

  // Paged attention off: each admitted request reserves its whole maximum
  // length (prompt + max_tokens, capped by max_model_len) up front in one
  // piece, as static engines do. Same kernels; only allocation differs.
  bool paged = true;
  bool prefix_caching = true;      // reuse KV blocks of identical prompt prefixes
  KvCacheType kv_cache_type = KvCacheType::F32;  // element type of cached K and V
  SchedulingPolicy policy = SchedulingPolicy::Continuous;
  PreemptionMode preemption = PreemptionMode::Recompute;
  int64_t swap_space_bytes = 256ll << 20;  // host swap pool for PreemptionMode::Swap
  CascadeMode cascade = CascadeMode::Auto;
  SpecMethod spec = SpecMethod::Off;
  int32_t spec_k = 4;          // draft tokens per proposal, at most
  int32_t spec_ngram_min = 1;  // n-gram proposer: shortest suffix it matches (above the max: the max)
  int32_t spec_ngram_max = 4;  // and longest (tried first)
  std::string spec_draft_model;    // spec = draft: the draft model's file (same vocabulary as the model)
  // spec = early_exit: layers the draft runs (1..the model's layers; 0: half of them, rounded down, at least 1).
  int32_t spec_early_exit_layer = 0;
  bool record_snapshots = false;   // build an EngineSnapshot after every step
  // Speculate in every decode step, even where the auto-disable rule
  // (spec/spec_tracker.h) would pause: for benchmarks of the raw cost and
  // for studying a proposer's acceptance.
  bool spec_never_pause = false;

  // Every problem: each setting against its table row's range, then the
  // rules that tie settings together. Empty when the config is usable.
  std::vector<SettingProblem> validate() const;

  bool operator==(const EngineConfig&) const = default;
};

}  // namespace kvscope
