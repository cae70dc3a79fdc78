// TokenText: what a run of token ids says, for the inspector's tooltips (a
// KV block's tokens, a sequence's). The UI never calls the engine: the engine
// worker sends the bytes of every token id once per model (TokenBytesTable,
// from Engine::token_bytes) and these pure functions read the snapshot's ids
// against it. Tested by tests/ui/token_text_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <QMetaType>
#include <QString>

#include "kvscope/engine_snapshot.h"

namespace kvscope::ui {

// [vocab_size] the raw bytes each token id stands for (control tokens as
// their text, "<|im_start|>"). Immutable, shared between threads.
using TokenBytesTable = std::shared_ptr<const std::vector<std::string>>;

// Where physical block `block` sits in a sequence of the snapshot that holds
// it (waiting or running; a swapped sequence's table holds swap-space ids).
struct BlockTokens {
  const SequenceSnapshot* sequence = nullptr;  // null: no sequence holds the block
  int32_t position = -1;                       // logical block number in its table
  int32_t first_token = 0;                     // [first_token, first_token + ids.size()) of its tokens
  std::span<const int32_t> ids;                // the tokens whose K/V the block holds
};

// A block at logical position p of a sequence holds its tokens
// [p * block_size, p * block_size + fill), clipped to the tokens it has.
// Every owner of a shared block holds the same tokens there (that is what
// sharing it means), so the first owner found is asked.
BlockTokens blockTokens(const EngineSnapshot& snapshot, int block);

// The bytes of `ids` concatenated and decoded as UTF-8, so that a character
// split over several tokens comes out whole. A character cut by either end
// of the run (split across two blocks) shows as one U+FFFD there; other
// malformed bytes as U+FFFD each. Ids outside the table add nothing.
QString tokenText(const std::vector<std::string>& table, std::span<const int32_t> ids);

// `text` readable on one line: newline as "↵", tab as "→", other control
// characters as their Unicode control pictures ("␀", "␛", "␡"); longer than
// max_chars, the middle is replaced by " … " (never splitting a surrogate pair).
QString visibleText(const QString& text, int max_chars);

// `text` HTML-escaped in a span that keeps its spaces (leading, trailing,
// runs of them), for a rich-text tooltip.
QString preservedSpacesHtml(const QString& text);

}  // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::TokenBytesTable)
