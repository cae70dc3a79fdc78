// WorkloadDialog (see workload_dialog.h).
#include "workload_dialog.h"

#include <QDialogButtonBox>
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

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Requests:"), num_requests_);
  form->addRow(tr("Prompt length:"), prompt_len_);
  form->addRow(tr("Shared prefix:"), shared_prefix_len_);
  form->addRow(tr("Output length:"), output_len_);
  form->addRow(buttons);
}

WorkloadSpec WorkloadDialog::spec() const {
  return {num_requests_->value(), prompt_len_->value(), output_len_->value(), shared_prefix_len_->value()};
}

}  // namespace kvscope::ui
