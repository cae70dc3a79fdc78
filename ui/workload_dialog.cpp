// WorkloadDialog (see workload_dialog.h).
#include "workload_dialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSpinBox>

namespace kvscope::ui {

WorkloadDialog::WorkloadDialog(const WorkloadSpec& spec, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Synthetic workload"));
  auto spin = [this](int lo, int hi, int value, const QString& suffix) {
    auto* box = new QSpinBox(this);
    box->setRange(lo, hi);
    box->setValue(value);
    box->setSuffix(suffix);
    return box;
  };
  num_requests_ = spin(1, 1024, spec.num_requests, QString());
  prompt_len_ = spin(1, 8192, spec.prompt_len, tr(" tokens"));
  output_len_ = spin(1, 8192, spec.output_len, tr(" tokens"));
  shared_prefix_len_ = spin(0, 8192, spec.shared_prefix_len, tr(" tokens"));
  connect(prompt_len_, &QSpinBox::valueChanged, shared_prefix_len_, &QSpinBox::setMaximum);
  shared_prefix_len_->setMaximum(prompt_len_->value());
  arrival_rate_ = new QDoubleSpinBox(this);
  arrival_rate_->setRange(0.0, 1000.0);
  arrival_rate_->setDecimals(1);
  arrival_rate_->setValue(spec.arrival_rate_per_s);
  arrival_rate_->setSuffix(tr(" /s"));
  arrival_rate_->setSpecialValueText(tr("all at once"));
  arrival_rate_->setToolTip(tr("Requests arriving per second (random, Poisson); all at once shows a burst"));
  num_requests_->setAccessibleName(tr("Requests"));
  prompt_len_->setAccessibleName(tr("Prompt length"));
  output_len_->setAccessibleName(tr("Output length"));
  shared_prefix_len_->setAccessibleName(tr("Shared prefix length"));
  arrival_rate_->setAccessibleName(tr("Arrival rate"));

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Requests:"), num_requests_);
  form->addRow(tr("Prompt length:"), prompt_len_);
  form->addRow(tr("Shared prefix:"), shared_prefix_len_);
  form->addRow(tr("Output length:"), output_len_);
  form->addRow(tr("Arrival rate:"), arrival_rate_);
  form->addRow(buttons);
}

WorkloadSpec WorkloadDialog::spec() const {
  return {num_requests_->value(), prompt_len_->value(), output_len_->value(), shared_prefix_len_->value(),
          arrival_rate_->value()};
}

}  // namespace kvscope::ui
