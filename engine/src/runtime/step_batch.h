// StepBatch: everything the model runner needs for one engine step, and the
// only thing it sees (no request objects). Counts plus flat arrays; the rows of
// one sequence are contiguous and in position order. Prefill, chunked prefill,
// decode and speculative verification all look the same here: a sequence
// contributes query rows at some positions, and attends to its cache up to each.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvscope {

// A logits row whose next token the backend draws itself, so that only the
// token id has to come back from its device (Backend::drawn_tokens): the
// sampling rule of runtime/sampler.h with these parameters, the penalties
// given as entries, and the sequence's next random number.
struct TokenDraw {
  int32_t logits_row = 0;  // index into StepBatch::logits_rows; each at most once
  float temperature = 0.0f;  // 0: greedy (uniform unused)
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  double uniform = 0.0;  // in [0, 1)
};

struct StepBatch {
  int32_t num_tokens = 0;  // query rows in this step
  int32_t num_seqs = 0;

  std::vector<int32_t> token_ids;          // [num_tokens]
  std::vector<int32_t> positions;          // [num_tokens] absolute position in its sequence
  std::vector<int64_t> slot_mapping;       // [num_tokens] KV slot written for each row
  std::vector<int32_t> query_start;        // [num_seqs + 1] first row of each sequence (CSR)
  std::vector<int32_t> block_table_start;  // [num_seqs + 1] offsets into block_ids (CSR)
  std::vector<int32_t> block_ids;          // [block_table_start[num_seqs]] physical blocks, logical order
  // [num_logits] rows whose next-token logits are wanted, in row order: a
  // sequence's last row when it reaches the end of its known tokens, or for
  // a speculative verification its last 1 + k rows (the last committed
  // token's and the k drafts'), each row's logits judging the next draft.
  std::vector<int32_t> logits_rows;

  // Cascade attention groups, CSR (runtime/cascade_plan.h fills them; empty:
  // none). The sequences of group g hold the same physical blocks for
  // positions [0, cascade_prefix_len[g]), all their rows at or after it.
  std::vector<int32_t> cascade_prefix_len;  // [num_groups] a multiple of the attention tile
  std::vector<int32_t> cascade_seq_start;   // [num_groups + 1] offsets into cascade_seqs
  std::vector<int32_t> cascade_seqs;        // [cascade_seq_start[num_groups]] sequence indices
  int32_t num_cascade_groups() const { return static_cast<int32_t>(cascade_prefix_len.size()); }

  // Rows the backend samples (empty: every logits row comes back as logits).
  // Draw d penalises the tokens penalty_ids[penalty_start[d] .. penalty_start[d + 1])
  // (distinct, inside the vocabulary), seen penalty_counts[..] times each.
  std::vector<TokenDraw> draws;
  std::vector<int32_t> penalty_start;  // [draws.size() + 1] (CSR)
  std::vector<int32_t> penalty_ids;
  std::vector<float> penalty_counts;
  int32_t num_draws() const { return static_cast<int32_t>(draws.size()); }

  void clear();
  // Appends one sequence: its rows (tokens at consecutive positions starting
  // at first_pos, written to `slots`), its block table, and how many of its
  // last rows need logits: 0, 1 (the next token) or 1 + k (verifying k
  // speculative drafts). Precondition: 0 <= num_logits <= num_rows.
  void add_sequence(const int32_t* tokens, int32_t num_rows, int32_t first_pos, const int64_t* slots,
                    const std::vector<int32_t>& table, int32_t num_logits);
  // Appends a draw for logits row draw.logits_row with its penalised tokens.
  // Preconditions: ids.size() == counts.size(); the row not drawn already.
  void add_draw(const TokenDraw& draw, std::span<const int32_t> ids, std::span<const float> counts);
};

}  // namespace kvscope
