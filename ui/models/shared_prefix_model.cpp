// SharedPrefixModel (see shared_prefix_model.h).
#include "shared_prefix_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/sequence_label.h"

namespace kvscope::ui {
namespace {

// One trie node: a physical block at one logical position, reached through
// the same physical blocks before it.
struct Node {
  int32_t block = -1;
  int32_t parent = -1;
  int32_t depth = -1;  // logical block index; the root is -1
  int32_t count = 0;   // sequences whose table passes through here
  int32_t first_child = -1;
  int32_t next_sibling = -1;
  int64_t tokens = 0;  // written slots from logical block 0 through this one
};

std::pair<int32_t, int32_t> keyOf(const SharedPrefixGroup& g) {
  return {g.first_own_block, g.blocks[static_cast<size_t>(g.first_own_block)]};
}

}  // namespace

std::vector<SharedPrefixGroup> findSharedPrefixes(const EngineSnapshot& snapshot) {
  const auto num_blocks = static_cast<int64_t>(snapshot.blocks.size());
  std::vector<Node> nodes(1);  // [0]: the root
  std::vector<int32_t> path_nodes;   // every sequence's trie path, back to back
  std::vector<size_t> path_begin{0};  // [num_seqs + 1] offsets into path_nodes
  std::vector<const SequenceSnapshot*> seqs;
  for (const SequenceSnapshot& seq : snapshot.sequences) {
    if (seq.state == SequenceState::Swapped || seq.block_table.empty()) continue;
    int32_t at = 0;
    for (int32_t block : seq.block_table) {
      if (block < 0 || block >= num_blocks) break;  // not a pool block: the shared run ends
      int32_t child = nodes[static_cast<size_t>(at)].first_child;
      while (child >= 0 && nodes[static_cast<size_t>(child)].block != block) {
        child = nodes[static_cast<size_t>(child)].next_sibling;
      }
      if (child < 0) {
        Node n;
        n.block = block;
        n.parent = at;
        n.depth = nodes[static_cast<size_t>(at)].depth + 1;
        n.tokens = nodes[static_cast<size_t>(at)].tokens + snapshot.blocks[static_cast<size_t>(block)].fill;
        n.next_sibling = nodes[static_cast<size_t>(at)].first_child;
        child = static_cast<int32_t>(nodes.size());
        nodes[static_cast<size_t>(at)].first_child = child;
        nodes.push_back(n);
      }
      ++nodes[static_cast<size_t>(child)].count;
      path_nodes.push_back(child);
      at = child;
    }
    seqs.push_back(&seq);
    path_begin.push_back(path_nodes.size());
  }

  // A group starts where a set of >= 2 sequences first runs together, and
  // ends where it splits (or some of it stops).
  std::vector<SharedPrefixGroup> groups;
  std::vector<int32_t> group_of(nodes.size(), -1);  // at a group's first node
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& start = nodes[i];
    if (start.count < 2 || (start.parent > 0 && nodes[static_cast<size_t>(start.parent)].count == start.count)) {
      continue;
    }
    int32_t end = static_cast<int32_t>(i);
    for (;;) {
      int32_t next = -1;
      for (int32_t c = nodes[static_cast<size_t>(end)].first_child; c >= 0; c = nodes[static_cast<size_t>(c)].next_sibling) {
        if (nodes[static_cast<size_t>(c)].count == start.count) next = c;
      }
      if (next < 0) break;
      end = next;
    }
    SharedPrefixGroup g;
    const Node& last = nodes[static_cast<size_t>(end)];
    g.blocks.resize(static_cast<size_t>(last.depth + 1));
    for (int32_t n = end; n > 0; n = nodes[static_cast<size_t>(n)].parent) {
      g.blocks[static_cast<size_t>(nodes[static_cast<size_t>(n)].depth)] = nodes[static_cast<size_t>(n)].block;
    }
    g.first_own_block = start.depth;
    g.num_shared_tokens = last.tokens;
    g.num_own_tokens = last.tokens - nodes[static_cast<size_t>(start.parent)].tokens;
    group_of[i] = static_cast<int32_t>(groups.size());
    groups.push_back(std::move(g));
  }
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t p = path_begin[s]; p < path_begin[s + 1]; ++p) {
      const int32_t g = group_of[static_cast<size_t>(path_nodes[p])];
      if (g >= 0) groups[static_cast<size_t>(g)].sequences.emplace_back(seqs[s]->id, seqs[s]->index);
    }
  }
  for (SharedPrefixGroup& g : groups) std::sort(g.sequences.begin(), g.sequences.end());
  std::sort(groups.begin(), groups.end(), [](const SharedPrefixGroup& a, const SharedPrefixGroup& b) {
    return keyOf(a) < keyOf(b);
  });
  return groups;
}

void attachCascadePasses(std::vector<SharedPrefixGroup>& groups, const std::vector<CascadeGroupSnapshot>& passes) {
  for (SharedPrefixGroup& g : groups) {
    g.num_cascade_passes = g.num_cascade_tokens = g.num_cascade_seqs = 0;
    g.num_cascade_tokens_not_read = 0;
  }
  for (const CascadeGroupSnapshot& pass : passes) {
    if (pass.blocks.empty()) continue;
    for (SharedPrefixGroup& g : groups) {
      // An enclosing group's blocks come first in a nested group's list, so
      // "holds all" alone would also pick the nested rows: the pass must
      // reach into this group's own blocks.
      bool holds_all = true;
      bool reaches_own = false;
      for (int32_t b : pass.blocks) {
        const auto at = std::find(g.blocks.begin(), g.blocks.end(), b);
        if (at == g.blocks.end()) {
          holds_all = false;
          break;
        }
        if (at - g.blocks.begin() >= g.first_own_block) reaches_own = true;
      }
      if (!holds_all || !reaches_own) continue;
      const auto members = static_cast<int32_t>(pass.request_ids.size());
      ++g.num_cascade_passes;
      g.num_cascade_tokens = std::max(g.num_cascade_tokens, pass.num_shared_tokens);
      g.num_cascade_seqs = std::max(g.num_cascade_seqs, members);
      g.num_cascade_tokens_not_read += static_cast<int64_t>(std::max(members - 1, 0)) * pass.num_shared_tokens;
      break;
    }
  }
}

SharedPrefixModel::SharedPrefixModel(QObject* parent) : QAbstractTableModel(parent) {}

void SharedPrefixModel::setSnapshot(const SnapshotPtr& snapshot) {
  std::vector<SharedPrefixGroup> fresh = snapshot ? findSharedPrefixes(*snapshot) : std::vector<SharedPrefixGroup>{};
  if (snapshot) attachCascadePasses(fresh, snapshot->cascade_groups);
  last_step_ = snapshot ? snapshot->last_step : StepStats{};
  cascade_tokens_not_read_ = 0;
  if (snapshot) {
    for (const CascadeGroupSnapshot& pass : snapshot->cascade_groups) {
      const auto members = static_cast<int64_t>(pass.request_ids.size());
      cascade_tokens_not_read_ += std::max<int64_t>(members - 1, 0) * pass.num_shared_tokens;
    }
  }
  parallel_ = snapshot ? parallelRequests(*snapshot) : QSet<quint64>{};
  std::map<std::pair<int32_t, int32_t>, size_t> fresh_by_key;
  for (size_t i = 0; i < fresh.size(); ++i) fresh_by_key.emplace(keyOf(fresh[i]), i);

  // Rows whose group is gone leave; the others keep their row and take the
  // new values; new groups are appended.
  for (int row = static_cast<int>(groups_.size()) - 1; row >= 0; --row) {
    if (fresh_by_key.count(keyOf(groups_[static_cast<size_t>(row)])) == 0) {
      beginRemoveRows({}, row, row);
      groups_.erase(groups_.begin() + row);
      endRemoveRows();
    }
  }
  std::vector<bool> placed(fresh.size(), false);
  for (SharedPrefixGroup& g : groups_) {
    const size_t i = fresh_by_key.at(keyOf(g));
    g = std::move(fresh[i]);
    placed[i] = true;
  }
  if (!groups_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, NumColumns - 1));
  const auto num_new = static_cast<int>(std::count(placed.begin(), placed.end(), false));
  if (num_new > 0) {
    beginInsertRows({}, rowCount(), rowCount() + num_new - 1);
    for (size_t i = 0; i < fresh.size(); ++i) {
      if (!placed[i]) groups_.push_back(std::move(fresh[i]));
    }
    endInsertRows();
  }
  emit totalsChanged(totalTokensSaved(), totalBytesSaved());
}

void SharedPrefixModel::setKvBytesPerToken(qint64 bytes) {
  kv_bytes_per_token_ = std::max<qint64>(bytes, 0);
  if (!groups_.empty()) emit dataChanged(index(0, BytesSaved), index(rowCount() - 1, KvNotRead));
  emit totalsChanged(totalTokensSaved(), totalBytesSaved());
}

int64_t SharedPrefixModel::kvBytesNotRead(const SharedPrefixGroup& group) const {
  if (group.num_cascade_passes == 0) return -1;
  // The engine counts what its kernel skipped, which depends on its tiling;
  // it is the number to trust, shared out by each pass's ideal saving.
  if (last_step_.cascade_kv_bytes_saved > 0 && cascade_tokens_not_read_ > 0) {
    return static_cast<int64_t>(std::llround(static_cast<double>(last_step_.cascade_kv_bytes_saved) *
                                             static_cast<double>(group.num_cascade_tokens_not_read) /
                                             static_cast<double>(cascade_tokens_not_read_)));
  }
  return kv_bytes_per_token_ > 0 ? group.num_cascade_tokens_not_read * kv_bytes_per_token_ : -1;
}

int64_t SharedPrefixModel::totalTokensSaved() const {
  int64_t total = 0;
  for (const SharedPrefixGroup& g : groups_) total += g.num_tokens_saved();
  return total;
}

int SharedPrefixModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(groups_.size());
}

int SharedPrefixModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NumColumns; }

QString SharedPrefixModel::formatBytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return QStringLiteral("%1 MiB").arg(static_cast<double>(bytes) / (1 << 20), 0, 'f', 2);
  if (bytes >= (int64_t{1} << 10)) return QStringLiteral("%1 KiB").arg(static_cast<double>(bytes) / (1 << 10), 0, 'f', 1);
  return QStringLiteral("%1 B").arg(bytes);
}

QString SharedPrefixModel::noCascadeReason(const SharedPrefixGroup& g) const {
  const int num_seqs = static_cast<int>(g.sequences.size());
  switch (cascade_mode_) {
    case CascadeMode::Off:
      return tr("Cascade attention is off (Settings, Attention): each sequence reads its whole prefix.");
    case CascadeMode::Auto:
      if (num_seqs < kAutoCascadeMinSeqs || g.num_shared_tokens < kAutoCascadeMinSharedTokens) {
        return tr("Cascade is auto: it runs a shared pass where it pays, for %1 or more sequences sharing at least "
                  "%2 tokens. This group: %3 sequences sharing %4 tokens. Set it to on to see the pass anyway.")
            .arg(kAutoCascadeMinSeqs)
            .arg(kAutoCascadeMinSharedTokens)
            .arg(num_seqs)
            .arg(g.num_shared_tokens);
      }
      [[fallthrough]];
    case CascadeMode::On:
      return tr("No shared pass in the last step: its sequences were not all in the step's batch with their shared "
                "tokens computed (a pass needs at least two, sharing whole attention tiles).");
  }
  return {};
}

QVariant SharedPrefixModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const SharedPrefixGroup& g = groups_[static_cast<size_t>(index.row())];
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() != Requests && index.column() != Blocks && index.column() != Cascade;
    return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role == Qt::ToolTipRole && index.column() == Cascade && g.num_cascade_passes == 0) return noCascadeReason(g);
  if (role == Qt::ToolTipRole && index.column() == Blocks && g.first_own_block > 0) {
    return tr("Blocks before \"|\" are shared with a larger group (its row counts them as saved); "
              "this row saves only the blocks after it.");
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Requests: {
      QStringList ids;
      // g.sequences is sorted by (id, index) as numbers, not as text.
      for (const auto& [id, seq_index] : g.sequences) ids << sequenceLabel(id, seq_index, parallel_.contains(id));
      return ids.join(QStringLiteral(", "));
    }
    case NumSequences: return static_cast<int>(g.sequences.size());
    case Blocks: {
      QString text;
      for (size_t i = 0; i < g.blocks.size(); ++i) {
        if (i) text += static_cast<int32_t>(i) == g.first_own_block ? QStringLiteral(" | ") : QStringLiteral(" ");
        text += QString::number(g.blocks[i]);
      }
      return text;
    }
    case SharedTokens: return QVariant::fromValue<qint64>(g.num_shared_tokens);
    case TokensSaved: return QVariant::fromValue<qint64>(g.num_tokens_saved());
    case BytesSaved:
      return kv_bytes_per_token_ > 0 ? formatBytes(g.num_tokens_saved() * kv_bytes_per_token_) : QStringLiteral("—");
    case Cascade:
      if (g.num_cascade_passes == 0) return tr("no");
      return tr("yes: %1 × %2").arg(g.num_cascade_tokens).arg(g.num_cascade_seqs);
    case KvNotRead: {
      const int64_t bytes = kvBytesNotRead(g);
      return bytes < 0 ? QStringLiteral("—") : formatBytes(bytes);
    }
    default: return {};
  }
}

QVariant SharedPrefixModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && (section == TokensSaved || section == BytesSaved)) {
    return tr("(sequences - 1) x the tokens of this group's own shared blocks: the K/V that sharing "
              "keeps from being stored again");
  }
  if (role == Qt::ToolTipRole && section == Cascade) {
    return tr("Whether the last step's cascade attention read this prefix once for its sequences: "
              "\"yes: shared tokens (whole attention tiles) × sequences served\"");
  }
  if (role == Qt::ToolTipRole && section == KvNotRead) {
    return tr("K/V the last step did not read thanks to the shared pass: the engine's count for the step, "
              "shared out over its passes by (sequences - 1) × shared tokens. Less than that ideal when the "
              "pass is split into pieces for the CPU's threads or the GPU's blocks: each piece reads the "
              "prefix once for its own sequences");
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Requests: return tr("Sequences");
    case NumSequences: return tr("n");
    case Blocks: return tr("Shared blocks");
    case SharedTokens: return tr("Shared tokens");
    case TokensSaved: return tr("Tokens saved");
    case BytesSaved: return tr("Bytes saved");
    case Cascade: return tr("Cascade");
    case KvNotRead: return tr("K/V not read");
    default: return {};
  }
}

}  // namespace kvscope::ui
