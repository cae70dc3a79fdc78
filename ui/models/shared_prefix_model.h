// SharedPrefixModel: the groups of sequences whose block tables start with
// the same physical blocks (prefix-cache hits and the n > 1 siblings of one
// request), one row per group, from the latest EngineSnapshot.
//
// The groups are the branches of a trie over the running sequences' block
// tables: a row is a run of trie nodes that the same set of (>= 2) sequences
// pass through. Groups nest: siblings of one request that share a whole
// prompt also share, with other requests, the system prompt's blocks before
// it. A nested row lists its whole shared prefix (the enclosing group's
// blocks first, then " | " and its own), but counts as saved only its own
// blocks, (n - 1) x their tokens, so that the rows add up to the total and
// no block is counted twice. Swapped sequences are left out: their tables
// hold swap-space ids, not pool blocks.
//
// The Requests column lists request ids as integers in numeric order ("9, 10,
// 11 #1, 11 #2": a completion number only for parallel completions).
// Rows keep their place while their group lives (keyed by where the group's
// own blocks start), so a view does not jump at 20 Hz. Checked with
// QAbstractItemModelTester in tests/ui/shared_prefix_model_test.cpp.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <QAbstractTableModel>
#include <QSet>

#include "engine_types.h"

namespace kvscope::ui {

struct SharedPrefixGroup {
  std::vector<int32_t> blocks;  // [num_shared_blocks] physical ids of the whole shared prefix
  int32_t first_own_block = 0;  // blocks before this index belong to an enclosing group
  int64_t num_shared_tokens = 0;  // written slots of all the shared blocks
  int64_t num_own_tokens = 0;     // written slots of blocks [first_own_block, end)
  std::vector<std::pair<RequestId, int32_t>> sequences;  // (request id, index), sorted
  int64_t num_tokens_saved() const {
    return sequences.empty() ? 0 : static_cast<int64_t>(sequences.size() - 1) * num_own_tokens;
  }
};

// Every group of >= 2 non-swapped sequences sharing leading blocks, outermost
// first. O(total block-table length): a trie, no string keys.
std::vector<SharedPrefixGroup> findSharedPrefixes(const EngineSnapshot& snapshot);

class SharedPrefixModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Requests, NumSequences, Blocks, SharedTokens, TokensSaved, BytesSaved, NumColumns };

  explicit SharedPrefixModel(QObject* parent = nullptr);

  void setSnapshot(const SnapshotPtr& snapshot);
  // Bytes of K and V per token (ModelInfo::kv_bytes_per_token); 0: unknown,
  // the bytes column shows "—".
  void setKvBytesPerToken(qint64 bytes);

  const std::vector<SharedPrefixGroup>& groups() const { return groups_; }
  int64_t totalTokensSaved() const;
  int64_t totalBytesSaved() const { return totalTokensSaved() * kv_bytes_per_token_; }
  qint64 kvBytesPerToken() const { return kv_bytes_per_token_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // "1.5 MiB", "384 KiB", "12 B".
  static QString formatBytes(int64_t bytes);

 signals:
  // After every setSnapshot / setKvBytesPerToken.
  void totalsChanged(qint64 tokens_saved, qint64 bytes_saved);

 private:
  std::vector<SharedPrefixGroup> groups_;
  QSet<quint64> parallel_;  // requests shown with their completion number (models/sequence_label.h)
  qint64 kv_bytes_per_token_ = 0;
};

}  // namespace kvscope::ui
