// TraceEventModel (see trace_event_model.h).
#include "models/trace_event_model.h"

#include <algorithm>

#include <QColor>

#include "models/marked_row_colors.h"
#include "models/sequence_label.h"

namespace kvscope::ui {

TraceEventModel::TraceEventModel(QObject* parent) : QAbstractTableModel(parent) {}

void TraceEventModel::setTimeline(const TraceTimeline* timeline) {
  beginResetModel();
  timeline_ = timeline;
  time_ = timeline ? timeline->start_time() : 0.0;
  first_ = last_ = until_ = 0;
  if (timeline_) {
    const auto [first, last] = timeline_->events_around(time_, rows_before_, rows_after_);
    first_ = first;
    last_ = last;
    until_ = timeline_->num_events_until(time_);
  }
  endResetModel();
}

void TraceEventModel::setWindowSize(int rows_before, int rows_after) {
  rows_before_ = static_cast<size_t>(std::max(1, rows_before));
  rows_after_ = static_cast<size_t>(std::max(0, rows_after));
  refresh();
}

void TraceEventModel::setTime(double t) {
  time_ = t;
  refresh();
}

void TraceEventModel::refresh() {
  if (!timeline_) return;
  const size_t old_until = until_;
  until_ = timeline_->num_events_until(time_);
  const auto [first, last] = timeline_->events_around(time_, rows_before_, rows_after_);
  if (first >= last_ || last <= first_) {
    // No overlap with the rows shown (or none shown): start over.
    beginResetModel();
    first_ = first;
    last_ = last;
    endResetModel();
    return;
  }
  // Slide: drop the rows that left the window, then add those that came in,
  // so that a view keeps its place.
  if (first > first_) {
    beginRemoveRows({}, 0, static_cast<int>(first - first_) - 1);
    first_ = first;
    endRemoveRows();
  }
  if (last < last_) {
    beginRemoveRows({}, static_cast<int>(last - first_), static_cast<int>(last_ - first_) - 1);
    last_ = last;
    endRemoveRows();
  }
  if (first < first_) {
    beginInsertRows({}, 0, static_cast<int>(first_ - first) - 1);
    first_ = first;
    endInsertRows();
  }
  if (last > last_) {
    beginInsertRows({}, static_cast<int>(last_ - first_), static_cast<int>(last - first_) - 1);
    last_ = last;
    endInsertRows();
  }
  // The marked event changed: repaint the old and the new one.
  if (old_until == until_) return;
  for (size_t marked : {old_until, until_}) {
    if (marked == 0 || marked - 1 < first_ || marked - 1 >= last_) continue;
    const int row = static_cast<int>(marked - 1 - first_);
    emit dataChanged(index(row, 0), index(row, NumColumns - 1), {Qt::BackgroundRole, Qt::ForegroundRole});
  }
}

int TraceEventModel::currentRow() const {
  if (until_ == 0 || until_ - 1 < first_ || until_ - 1 >= last_) return -1;
  return static_cast<int>(until_ - 1 - first_);
}

int TraceEventModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(last_ - first_);
}

int TraceEventModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NumColumns; }

QString TraceEventModel::finishReasonText(int64_t value) {
  if (value < static_cast<int64_t>(FinishReason::None) || value > static_cast<int64_t>(FinishReason::Error))
    return QStringLiteral("unknown (%1)").arg(value);
  return QString::fromLatin1(finish_reason_name(static_cast<FinishReason>(value)));
}

QString TraceEventModel::describe(const EngineEvent& e) {
  // "1 block", "3 blocks"
  auto count = [](int64_t n, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
  };
  auto blocks = [&](int64_t n) { return count(n, "block", "blocks"); };
  auto tokens = [&](int64_t n) { return count(n, "token", "tokens"); };
  switch (e.type) {
    case EngineEventType::StepBegin: return QStringLiteral("step %1 begins").arg(e.value);
    case EngineEventType::StepEnd:
      return QStringLiteral("step ends: %1, %2").arg(tokens(e.value), count(e.value2, "sequence", "sequences"));
    case EngineEventType::Admit: return QStringLiteral("admitted, %1 of prompt").arg(tokens(e.value));
    case EngineEventType::Schedule: return QStringLiteral("scheduled, %1").arg(count(e.value, "row", "rows"));
    case EngineEventType::Allocate: return QStringLiteral("allocated %1").arg(blocks(e.value));
    case EngineEventType::CacheHit: return QStringLiteral("prefix-cache hit: %1 of prompt").arg(tokens(e.value));
    case EngineEventType::CopyOnWrite: return QStringLiteral("copy-on-write block %1 -> %2").arg(e.value).arg(e.value2);
    case EngineEventType::Preempt:
      return e.value == 1 ? QStringLiteral("preempted (swap)") : QStringLiteral("preempted (recompute)");
    case EngineEventType::SwapOut: return QStringLiteral("swapped out %1").arg(blocks(e.value));
    case EngineEventType::SwapIn: return QStringLiteral("swapped in %1").arg(blocks(e.value));
    case EngineEventType::Evict: return QStringLiteral("evicted %1 of cached prefixes").arg(blocks(e.value));
    case EngineEventType::Finish: return QStringLiteral("finished: %1").arg(finishReasonText(e.value));
    case EngineEventType::KvUsage:
      return QStringLiteral("KV: %1 used, %2 cached-free").arg(blocks(e.value), blocks(e.value2));
    case EngineEventType::Cascade:
      return QStringLiteral("cascade: %1 of shared prefix read once for %2")
          .arg(tokens(e.value), count(e.value2, "sequence", "sequences"));
    case EngineEventType::Verify:
      return QStringLiteral("speculation: %1 of %2 accepted")
          .arg(e.value)
          .arg(count(e.value2, "draft token", "draft tokens"));
    case EngineEventType::RankForward:
      return QStringLiteral("rank %1 forward pass: %2 ms")
          .arg(e.value)
          .arg(static_cast<double>(e.value2) / 1e6, 0, 'f', 2);
  }
  return QStringLiteral("event type %1").arg(static_cast<int>(e.type));
}

QVariant TraceEventModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const size_t i = eventIndex(index.row());
  const EngineEvent& e = timeline_->events()[i];
  if (role == EventIndexRole) return QVariant::fromValue<qulonglong>(i);
  if (role == Qt::BackgroundRole || role == Qt::ForegroundRole) {
    if (index.row() != currentRow()) return {};
    return role == Qt::BackgroundRole ? markedRowBackground() : markedRowForeground();
  }
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() == Time || index.column() == Step;
    return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Time: return QString::number((timeline_->event_time(i) - timeline_->start_time()) * 1e3, 'f', 3);
    case Step: {
      const int64_t step = timeline_->step_index_of_event(i);
      return step < 0 ? QVariant() : QVariant::fromValue<qlonglong>(timeline_->steps()[static_cast<size_t>(step)].step);
    }
    case Type: return QString::fromLatin1(engine_event_type_name(e.type));
    case Request:
      if (e.request == 0) return {};
      // Named as the tables name it ("7", "7 #2"): "7.0" read as a decimal.
      // An event does not say whether its request has siblings, so a first
      // completion is "7" even where the tables write "7 #1".
      return sequenceLabel(e.request, e.index, e.index > 0);
    case Details: return describe(e);
    default: return {};
  }
}

QVariant TraceEventModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Time: return tr("Time (ms)");
    case Step: return tr("Step");
    case Type: return tr("Event");
    case Request: return tr("Request");
    case Details: return tr("What happened");
    default: return {};
  }
}

}  // namespace kvscope::ui
