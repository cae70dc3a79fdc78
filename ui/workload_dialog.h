// WorkloadDialog: asks for a synthetic workload (N concurrent requests with a
// shared prefix, arriving at once or at a rate) to watch batching, block
// sharing and preemption live. A preset list (models/workload_prompts.h)
// fills the form, e.g. N requests sharing a 2,000-token system prompt for
// watching cascade attention; the number of requests stays editable, and
// editing another field turns the preset back to Custom.
#pragma once

#include <QDialog>

#include "engine_types.h"

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace kvscope::ui {

class WorkloadDialog : public QDialog {
  Q_OBJECT
 public:
  explicit WorkloadDialog(const WorkloadSpec& spec, QWidget* parent = nullptr);
  WorkloadSpec spec() const;
  // Fills the form with preset `index` of workloadPresets() (0-based; the
  // combo box's first entry is Custom), keeping nothing of what was there.
  void applyPreset(int index);

 private:
  // Shows the preset the form matches (the number of requests aside), or Custom.
  void showMatchingPreset();

  QComboBox* preset_ = nullptr;
  QSpinBox* num_requests_ = nullptr;
  QSpinBox* prompt_len_ = nullptr;
  QSpinBox* output_len_ = nullptr;
  QSpinBox* shared_prefix_len_ = nullptr;
  QDoubleSpinBox* arrival_rate_ = nullptr;
};

}  // namespace kvscope::ui
