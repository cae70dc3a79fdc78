// InvarianceVerdictModel: an invariance check's report (kvscope/invariance_check.h)
// as a table, one row per prompt: the prompt, the verdict ("identical" or
// where the two runs first differ), how many tokens each side generated and
// why it stopped, the largest logit difference up to there,
// and the two tokens at the divergence. The Invariance panel shows the
// selected row's two continuations beside the table. Checked with
// QAbstractItemModelTester in tests/ui/invariance_panel_test.cpp.
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "kvscope/invariance_check.h"

namespace kvscope::ui {

class InvarianceVerdictModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Prompt, Verdict, Generated, MaxLogitDiff, TokenA, TokenB, NumColumns };
  // Qt::UserRole + 1: bool, the row's runs generated the same tokens.
  static constexpr int IdenticalRole = Qt::UserRole + 1;

  explicit InvarianceVerdictModel(QObject* parent = nullptr);

  void setVerdicts(std::vector<PromptVerdict> verdicts);
  void clear() { setVerdicts({}); }
  const std::vector<PromptVerdict>& verdicts() const { return verdicts_; }
  // Null when `row` is out of range.
  const PromptVerdict* verdictAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Characters of a prompt or token shown in a cell (the middle is elided).
  static constexpr int kPromptChars = 60;

 private:
  std::vector<PromptVerdict> verdicts_;
};

}  // namespace kvscope::ui
