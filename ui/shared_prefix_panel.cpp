// SharedPrefixPanel (see shared_prefix_panel.h).
#include "shared_prefix_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "models/shared_prefix_model.h"

namespace kvscope::ui {

SharedPrefixPanel::SharedPrefixPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  total_ = new QLabel(this);
  total_->setObjectName(QStringLiteral("sharedPrefixTotal"));
  model_ = new SharedPrefixModel(this);
  view_ = new QTableView(this);
  view_->setAccessibleName(tr("Shared prefixes"));
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setStretchLastSection(false);
  view_->horizontalHeader()->setSectionResizeMode(SharedPrefixModel::Requests, QHeaderView::Stretch);
  view_->horizontalHeader()->setSectionResizeMode(SharedPrefixModel::Blocks, QHeaderView::Stretch);
  layout->addWidget(total_);
  layout->addWidget(view_, 1);
  connect(model_, &SharedPrefixModel::totalsChanged, this, &SharedPrefixPanel::showTotals);
  showTotals(0, 0);
}

void SharedPrefixPanel::setSnapshot(const SnapshotPtr& snapshot) { model_->setSnapshot(snapshot); }

void SharedPrefixPanel::setModelInfo(const ModelInfo& info) {
  model_->setKvBytesPerToken(static_cast<qint64>(info.kv_bytes_per_token));
}

void SharedPrefixPanel::clear() { model_->setSnapshot(nullptr); }

QString SharedPrefixPanel::totalText() const { return total_->text(); }

void SharedPrefixPanel::showTotals(qint64 tokens_saved, qint64 bytes_saved) {
  if (model_->rowCount() == 0) {
    total_->setText(tr("No blocks are shared by several sequences now."));
    return;
  }
  const QString bytes = model_->kvBytesPerToken() > 0 ? SharedPrefixModel::formatBytes(bytes_saved) : QStringLiteral("—");
  total_->setText(tr("Prefix sharing saves %1 tokens (%2) of K/V across %3 groups.")
                      .arg(tokens_saved)
                      .arg(bytes)
                      .arg(model_->rowCount()));
}

}  // namespace kvscope::ui
