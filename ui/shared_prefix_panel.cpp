// SharedPrefixPanel (see shared_prefix_panel.h).
#include "shared_prefix_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "models/shared_prefix_model.h"
#include "unseen_updates.h"

namespace kvscope::ui {

SharedPrefixPanel::SharedPrefixPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  total_ = new QLabel(this);
  total_->setObjectName(QStringLiteral("sharedPrefixTotal"));
  total_->setWordWrap(true);  // the reasons nothing is shared run longer than a narrow dock
  attention_ = new QLabel(this);
  attention_->setObjectName(QStringLiteral("attentionSummary"));
  attention_->setWordWrap(true);
  model_ = new SharedPrefixModel(this);
  view_ = new QTableView(this);
  view_->setAccessibleName(tr("Shared prefixes"));
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setStretchLastSection(false);
  // Numbers as wide as they need, the two lists share the rest.
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setSectionResizeMode(SharedPrefixModel::Requests, QHeaderView::Stretch);
  view_->horizontalHeader()->setSectionResizeMode(SharedPrefixModel::Blocks, QHeaderView::Stretch);
  layout->addWidget(total_);
  layout->addWidget(attention_);
  layout->addWidget(view_, 1);
  connect(model_, &SharedPrefixModel::totalsChanged, this, &SharedPrefixPanel::showTotals);
  showTotals(0, 0);
  showAttention();
}

void SharedPrefixPanel::setSnapshot(const SnapshotPtr& snapshot) {
  updateWhenSeen(this, [this, snapshot] {
    model_->setSnapshot(snapshot);
    if (snapshot) {
      // A new engine (a reloaded model) counts its steps from 0 again: the
      // last one's figure is not this one's.
      if (last_timed_ && snapshot->step < last_timed_->step) last_timed_.reset();
      for (const StepStats& st : snapshot->steps_reported()) {
        if (st.attention_time_s > 0) last_timed_ = TimedStep{st.step, st.attention_time_s};
      }
    }
    showAttention();
  });
}

void SharedPrefixPanel::setModelInfo(const ModelInfo& info) {
  model_->setKvBytesPerToken(static_cast<qint64>(info.kv_bytes_per_token));
}

void SharedPrefixPanel::setEngineConfig(const kvscope::EngineConfig& config) {
  model_->setCascadeMode(config.cascade);
  paged_ = config.paged;
  prefix_caching_ = config.prefix_caching;
  showTotals(model_->totalTokensSaved(), model_->totalBytesSaved());
}

void SharedPrefixPanel::clear() {
  updateWhenSeen(this, [] {});  // drops a snapshot held for later
  model_->setSnapshot(nullptr);
  last_timed_.reset();
  showAttention();
}

QString SharedPrefixPanel::totalText() const { return total_->text(); }
QString SharedPrefixPanel::attentionText() const { return attention_->text(); }

void SharedPrefixPanel::showAttention() {
  const StepStats& st = model_->lastStep();
  // A step that ran no attention (none yet, or an engine that does not time
  // it) reports 0 s: say so rather than "0.00 ms". A GPU times one step in
  // 16: between those, the last timed step's figure, named as such.
  QString time;
  if (st.attention_time_s > 0) time = tr("attention %1 ms").arg(st.attention_time_s * 1000.0, 0, 'f', 2);
  else if (last_timed_)
    time = tr("attention not timed (step %1, the last timed: %2 ms)")
               .arg(last_timed_->step)
               .arg(last_timed_->attention_s * 1000.0, 0, 'f', 2);
  else time = tr("attention time not measured");
  // Its number: after a workload the last step is history, and beside "no
  // blocks are shared now" its cascade pass read as a contradiction.
  const QString which = tr("Last step (%1)").arg(st.step);
  if (st.num_cascade_groups == 0) {
    attention_->setText(tr("%1: %2 · no cascade pass (each sequence read its whole prefix).").arg(which, time));
    return;
  }
  attention_->setText(tr("%1: %2 · cascade: %3 pass(es) for %4 sequences, %5 shared tokens, "
                         "%6 of K/V not read.")
                          .arg(which)
                          .arg(time)
                          .arg(st.num_cascade_groups)
                          .arg(st.num_cascade_seqs)
                          .arg(st.num_cascade_tokens)
                          .arg(SharedPrefixModel::formatBytes(st.cascade_kv_bytes_saved)));
}

void SharedPrefixPanel::showTotals(qint64 tokens_saved, qint64 bytes_saved) {
  if (model_->rowCount() == 0) {
    // Say why where a setting rules sharing out (a learner saw a workload
    // with a shared prefix share nothing, and no reason).
    if (!paged_) {
      total_->setText(tr("No blocks are shared: with paged attention off, each request holds its own run of "
                         "blocks, and no prefix is shared or cached."));
    } else if (!prefix_caching_) {
      total_->setText(tr("No blocks are shared by several sequences now (prefix caching is off: only the parallel "
                         "replies of one request share their prompt's blocks)."));
    } else {
      total_->setText(tr("No blocks are shared by several sequences now."));
    }
    return;
  }
  const QString bytes = model_->kvBytesPerToken() > 0 ? SharedPrefixModel::formatBytes(bytes_saved) : QStringLiteral("—");
  const int groups = model_->rowCount();
  total_->setText(tr("Prefix sharing saves %1 tokens (%2) of K/V across %3 %4.")
                      .arg(tokens_saved)
                      .arg(bytes)
                      .arg(groups)
                      .arg(groups == 1 ? tr("group") : tr("groups")));
}

}  // namespace kvscope::ui
