// WorkloadDialog: asks for a synthetic workload (N concurrent requests with a
// shared prefix, arriving at once or at a rate) to watch batching, block
// sharing and preemption live.
#pragma once

#include <QDialog>

#include "engine_types.h"

class QDoubleSpinBox;
class QSpinBox;

namespace kvscope::ui {

class WorkloadDialog : public QDialog {
  Q_OBJECT
 public:
  explicit WorkloadDialog(const WorkloadSpec& spec, QWidget* parent = nullptr);
  WorkloadSpec spec() const;

 private:
  QSpinBox* num_requests_ = nullptr;
  QSpinBox* prompt_len_ = nullptr;
  QSpinBox* output_len_ = nullptr;
  QSpinBox* shared_prefix_len_ = nullptr;
  QDoubleSpinBox* arrival_rate_ = nullptr;
};

}  // namespace kvscope::ui
