// SettingsDialog (see settings_dialog.h).
#include "settings_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QSpinBox>

namespace kvscope::ui {

SettingsDialog::SettingsDialog(const kvscope::EngineConfig& config, QWidget* parent)
    : QDialog(parent), base_(config) {
  setWindowTitle(tr("Engine settings"));
  threads_ = new QSpinBox(this);
  threads_->setRange(0, 256);
  threads_->setSpecialValueText(tr("auto (one per core)"));
  threads_->setValue(config.num_threads);
  block_size_ = new QSpinBox(this);
  block_size_->setRange(1, 2048);
  block_size_->setValue(config.block_size);
  block_size_->setSuffix(tr(" tokens"));
  kv_budget_mib_ = new QSpinBox(this);
  kv_budget_mib_->setRange(1, 1 << 20);
  kv_budget_mib_->setValue(static_cast<int>(config.kv_budget_bytes >> 20));
  kv_budget_mib_->setSuffix(tr(" MiB"));
  max_seqs_ = new QSpinBox(this);
  max_seqs_->setRange(1, 4096);
  max_seqs_->setValue(config.max_seqs);
  paged_ = new QCheckBox(tr("Paged attention (off: contiguous reservation per request)"), this);
  paged_->setChecked(config.paged);
  prefix_caching_ = new QCheckBox(tr("Prefix caching"), this);
  prefix_caching_->setChecked(config.prefix_caching);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* form = new QFormLayout(this);
  form->addRow(tr("Threads:"), threads_);
  form->addRow(tr("Block size:"), block_size_);
  form->addRow(tr("KV budget:"), kv_budget_mib_);
  form->addRow(tr("Max sequences:"), max_seqs_);
  form->addRow(paged_);
  form->addRow(prefix_caching_);
  form->addRow(buttons);
}

kvscope::EngineConfig SettingsDialog::config() const {
  kvscope::EngineConfig c = base_;
  c.num_threads = threads_->value();
  c.block_size = block_size_->value();
  c.kv_budget_bytes = static_cast<int64_t>(kv_budget_mib_->value()) << 20;
  c.num_blocks = 0;
  c.max_seqs = max_seqs_->value();
  c.paged = paged_->isChecked();
  c.prefix_caching = prefix_caching_->isChecked();
  return c;
}

}  // namespace kvscope::ui
