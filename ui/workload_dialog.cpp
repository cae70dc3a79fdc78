// WorkloadDialog (see workload_dialog.h).
#include "workload_dialog.h"

#include <initializer_list>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSignalBlocker>
#include <QSpinBox>

#include "models/workload_prompts.h"
#include "unit_suffix.h"

namespace kvscope::ui {

WorkloadDialog::WorkloadDialog(const WorkloadSpec& spec, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Synthetic workload"));
  auto spin = [this](int lo, int hi, int value, const QString& unit) {
    auto* box = new QSpinBox(this);
    box->setRange(lo, hi);
    box->setValue(value);
    if (!unit.isEmpty()) setCountedUnit(box, unit);
    return box;
  };
  num_requests_ = spin(1, 1024, spec.num_requests, QString());
  prompt_len_ = spin(1, 8192, spec.prompt_len, tr("tokens"));
  output_len_ = spin(1, 8192, spec.output_len, tr("tokens"));
  shared_prefix_len_ = spin(0, 8192, spec.shared_prefix_len, tr("tokens"));
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

  preset_ = new QComboBox(this);
  preset_->setObjectName(QStringLiteral("workloadPreset"));
  preset_->setAccessibleName(tr("Preset"));
  preset_->addItem(tr("Custom"));
  for (const WorkloadPreset& preset : workloadPresets()) preset_->addItem(preset.label, preset.key);
  connect(preset_, &QComboBox::activated, this, [this](int item) {
    if (item > 0) applyPreset(item - 1);
  });
  for (QSpinBox* box : {prompt_len_, output_len_, shared_prefix_len_}) {
    connect(box, &QSpinBox::valueChanged, this, &WorkloadDialog::showMatchingPreset);
  }
  connect(arrival_rate_, &QDoubleSpinBox::valueChanged, this, &WorkloadDialog::showMatchingPreset);
  showMatchingPreset();

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* form = new QFormLayout(this);
  form->addRow(tr("Preset:"), preset_);
  form->addRow(tr("Requests:"), num_requests_);
  form->addRow(tr("Prompt length:"), prompt_len_);
  form->addRow(tr("Shared prefix:"), shared_prefix_len_);
  form->addRow(tr("Output length:"), output_len_);
  form->addRow(tr("Arrival rate:"), arrival_rate_);
  form->addRow(buttons);
  // Tab goes down the rows as they are shown (the fields were made in
  // another order, which Tab followed).
  QWidget* previous = preset_;
  for (QWidget* next : std::initializer_list<QWidget*>{num_requests_, prompt_len_, shared_prefix_len_, output_len_,
                                                       arrival_rate_, buttons}) {
    setTabOrder(previous, next);
    previous = next;
  }
}

void WorkloadDialog::applyPreset(int index) {
  const std::vector<WorkloadPreset> presets = workloadPresets();
  if (index < 0 || static_cast<size_t>(index) >= presets.size()) return;
  const WorkloadSpec& p = presets[static_cast<size_t>(index)].spec;
  num_requests_->setValue(p.num_requests);
  prompt_len_->setValue(p.prompt_len);  // first: it bounds the shared prefix
  shared_prefix_len_->setValue(p.shared_prefix_len);
  output_len_->setValue(p.output_len);
  arrival_rate_->setValue(p.arrival_rate_per_s);
  showMatchingPreset();
}

void WorkloadDialog::showMatchingPreset() {
  const WorkloadSpec now = spec();
  const std::vector<WorkloadPreset> presets = workloadPresets();
  int item = 0;
  for (size_t i = 0; i < presets.size(); ++i) {
    const WorkloadSpec& p = presets[i].spec;
    if (p.prompt_len == now.prompt_len && p.shared_prefix_len == now.shared_prefix_len &&
        p.output_len == now.output_len && p.arrival_rate_per_s == now.arrival_rate_per_s) {
      item = static_cast<int>(i) + 1;
    }
  }
  const QSignalBlocker quiet(preset_);
  preset_->setCurrentIndex(item);
}

WorkloadSpec WorkloadDialog::spec() const {
  return {num_requests_->value(), prompt_len_->value(), output_len_->value(), shared_prefix_len_->value(),
          arrival_rate_->value()};
}

}  // namespace kvscope::ui
