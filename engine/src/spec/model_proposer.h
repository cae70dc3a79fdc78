// ModelProposer: drafts with a model's forward passes, greedily (each draft
// token is the argmax of the draft's logits), for every speculating sequence
// of a step at once. Two methods share it (docs/speculative.md):
//   - draft (SpecMethod::Draft): a second, smaller model with the same
//     vocabulary. Its K/V live in a KvStorage of its own shape with the same
//     blocks as the target's pool, indexed by the target's block ids: a
//     sequence's block table serves both. To keep them complete it also runs
//     over every row the target computes (prefill chunks, plain decodes),
//     asking logits of none of them.
//   - early exit (SpecMethod::EarlyExit): the target's own first L layers,
//     final norm and head. It reads and writes the target's K/V of layers
//     < L, which are exactly what it computes (same weights, tokens and
//     positions), and writes only slots the scheduler prepared for this
//     step: the last token's row and the draft rows, all of which the
//     target's verification pass writes again, every layer.
//
// Greedy drafts keep q one-hot, so the exact deterministic verification
// (spec/rejection_sampler.h) holds for sampled requests too (vLLM's EAGLE
// drafts the same way).
//
// One call: forward 0 feeds each sequence's rows [first_row, end_row) (for a
// drafting sequence end_row is its length: the last row's logits give draft
// token 0); forward j = 1 .. max(num_draft) - 1 feeds one row per sequence
// still drafting, draft token j - 1 at position end_row - 1 + j, whose
// logits give draft token j. Each is a StepBatch, as the target's pass.
//
// Tests: tests/engine/runtime/speculative_model_proposer_test.cpp.
#pragma once

#include <atomic>
#include <span>

#include "kv/block_table.h"
#include "runtime/backend.h"
#include "runtime/step_batch.h"
#include "spec/proposer.h"

namespace kvscope {

// One sequence's part of a draft call.
struct DraftSequence {
  std::span<const int32_t> tokens;  // its known tokens (prompt + generated)
  int32_t first_row = 0;            // first position fed; the draft's K/V before it are in place
  int32_t end_row = 0;              // rows fed end here (exclusive), <= tokens.size()
  const BlockTable* table = nullptr;  // covers every fed position and the draft rows'
  int32_t num_draft = 0;            // tokens to draft (then end_row == tokens.size()); 0: K/V only
  std::vector<int32_t>* draft = nullptr;  // out: exactly num_draft tokens
};

class ModelProposer final : public Proposer {
 public:
  explicit ModelProposer(SpecMethod method) : method_(method) {}

  std::vector<int32_t> propose(std::span<const int32_t>, int32_t) override { return {}; }  // not used
  bool deterministic() const override { return true; }
  const char* name() const override { return spec_method_name(method_); }
  bool needs_forward() const override { return true; }

  // Whether the draft keeps K/V of its own (a draft model): draft() must then
  // also see every row the target computes, and each sequence's
  // Sequence::draft_num_computed says how far that K/V is complete.
  bool has_own_kv() const { return method_ == SpecMethod::Draft; }
  // The backend that drafts (the draft model's own, or the target's for
  // early exit: runtime/backend.h says why both go through a Backend) and
  // the layers it runs (0: all). Before the first draft().
  void attach(Backend& backend, int32_t num_layers) {
    backend_ = &backend;
    num_layers_ = num_layers;
  }
  int32_t num_layers() const { return num_layers_; }

  // Fills every sequence's draft (see the header comment). Returns false when
  // `interrupt` was set (drafts then unset). Precondition: attach() called;
  // each drafting sequence has first_row < end_row == tokens.size().
  bool draft(std::span<DraftSequence> seqs, const std::atomic<bool>* interrupt = nullptr);
  int32_t last_num_forwards() const { return last_num_forwards_; }  // forward passes of the last draft()
  int32_t last_num_rows() const { return last_num_rows_; }          // and their query rows

 private:
  SpecMethod method_;
  Backend* backend_ = nullptr;  // not owned
  int32_t num_layers_ = 0;
  int32_t last_num_forwards_ = 0;
  int32_t last_num_rows_ = 0;
  StepBatch batch_;
  std::vector<float> logits_;
  std::vector<int64_t> slots_;
  std::vector<int32_t> row_tokens_;
};

}  // namespace kvscope
