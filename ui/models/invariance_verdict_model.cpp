// InvarianceVerdictModel (see invariance_verdict_model.h).
#include "invariance_verdict_model.h"

#include "models/invariance_text.h"
#include "models/token_text.h"

namespace kvscope::ui {
namespace {

// A token as a cell shows it: its text on one line, in quotes so that a
// space-only token is visible; "—" for a side that had already ended.
QString tokenCell(int32_t id, const std::string& bytes) {
  if (id < 0) return QStringLiteral("—");
  return QStringLiteral("“%1” (%2)").arg(visibleText(QString::fromStdString(bytes), 24)).arg(id);
}

}  // namespace

InvarianceVerdictModel::InvarianceVerdictModel(QObject* parent) : QAbstractTableModel(parent) {}

void InvarianceVerdictModel::setVerdicts(std::vector<PromptVerdict> verdicts) {
  // A new report replaces the old one whole: rows are prompts of one run.
  beginResetModel();
  verdicts_ = std::move(verdicts);
  endResetModel();
}

const PromptVerdict* InvarianceVerdictModel::verdictAt(int row) const {
  if (row < 0 || row >= rowCount()) return nullptr;
  return &verdicts_[static_cast<size_t>(row)];
}

int InvarianceVerdictModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(verdicts_.size());
}

int InvarianceVerdictModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NumColumns; }

QVariant InvarianceVerdictModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const PromptVerdict& v = verdicts_[static_cast<size_t>(index.row())];
  if (role == IdenticalRole) return v.identical;
  if (role == Qt::ToolTipRole && index.column() == Prompt) return QString::fromStdString(v.prompt);
  if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(Qt::AlignVCenter | (index.column() == MaxLogitDiff ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role != Qt::DisplayRole) return {};
  const bool diverged = !v.identical && v.first_divergence >= 0;
  switch (index.column()) {
    case Prompt: return visibleText(QString::fromStdString(v.prompt), kPromptChars);
    case Verdict: return verdictText(v);
    case Generated: {
      // "32 (length)": an identical 8 that stopped at the end of the reply
      // is not a 32-token comparison.
      const auto side = [](const std::vector<int32_t>& tokens, const std::string& finish) {
        return finish.empty() ? QString::number(tokens.size())
                              : QStringLiteral("%1 (%2)").arg(tokens.size()).arg(QString::fromStdString(finish));
      };
      const QString a = side(v.tokens_a, v.finish_a), b = side(v.tokens_b, v.finish_b);
      return a == b ? a : tr("A %1, B %2").arg(a, b);
    }
    case MaxLogitDiff: return QString::number(static_cast<double>(v.max_logit_diff), 'g', 3);
    case TokenA: return diverged ? tokenCell(v.token_a, v.token_text_a) : QString();
    case TokenB: return diverged ? tokenCell(v.token_b, v.token_text_b) : QString();
    default: return {};
  }
}

QVariant InvarianceVerdictModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == Generated) {
    return tr("Tokens each side generated, and why it stopped (length: the tokens asked for; stop: the model ended "
              "its reply)");
  }
  if (role == Qt::ToolTipRole && section == MaxLogitDiff) {
    return tr("The largest |logit a − logit b| over the vocabulary at every generated position up to the first "
              "divergence (all of them when identical); 0: bit for bit the same");
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Prompt: return tr("Prompt");
    case Verdict: return tr("Verdict");
    case Generated: return tr("Generated");
    case MaxLogitDiff: return tr("Max logit diff");
    case TokenA: return tr("Token A");
    case TokenB: return tr("Token B");
    default: return {};
  }
}

}  // namespace kvscope::ui
