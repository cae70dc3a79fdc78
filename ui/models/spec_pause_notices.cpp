// SpecPauseNotices (see spec_pause_notices.h).
#include "models/spec_pause_notices.h"

#include <algorithm>

#include <QCoreApplication>
#include <QStringList>

namespace kvscope::ui {
namespace {

QString tr(const char* text, int n = -1) {
  return QCoreApplication::translate("SpecPauseNotices", text, nullptr, n);
}

constexpr int kMaxNamed = 4;  // requests listed by number in one note; more are counted

}  // namespace

void SpecPauseNotices::clear() { *this = SpecPauseNotices{}; }

QString SpecPauseNotices::update(const EngineSnapshot& snapshot, qint64 now_ms) {
  if (snapshot.step < last_step_) clear();  // a new engine
  last_step_ = snapshot.step;

  std::set<RequestId> present;
  for (const SequenceSnapshot& seq : snapshot.sequences) {
    present.insert(seq.id);
    if (!seq.spec_paused || named_.count(seq.id)) continue;
    named_.insert(seq.id);
    unreported_.push_back(seq.id);
  }
  // Requests that ended are forgotten: the set stays as small as the batch.
  for (auto it = named_.begin(); it != named_.end();) {
    it = present.count(*it) ? std::next(it) : named_.erase(it);
  }

  if (unreported_.empty()) return QString();
  if (noted_ && now_ms - last_note_ms_ < kMinIntervalMs) return QString();
  QStringList ids;
  for (size_t i = 0; i < unreported_.size() && i < static_cast<size_t>(kMaxNamed); ++i) {
    ids << QString::number(unreported_[i]);
  }
  const int more = static_cast<int>(unreported_.size()) - static_cast<int>(ids.size());
  QString who = unreported_.size() == 1 ? tr("request %1").arg(ids.front())
                                        : tr("requests %1").arg(ids.join(QStringLiteral(", ")));
  if (more > 0) who += tr(" and %n more", more);
  const QString note = tr("Speculation paused for %1: drafts were not paying (it tries again later).").arg(who);
  unreported_.clear();
  noted_ = true;
  last_note_ms_ = now_ms;
  return note;
}

}  // namespace kvscope::ui
