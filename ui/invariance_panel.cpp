// InvariancePanel (see invariance_panel.h).
#include "invariance_panel.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "models/counted_text.h"
#include "models/invariance_text.h"
#include "models/invariance_verdict_model.h"
#include "palette_colors.h"
#include "unit_suffix.h"

namespace kvscope::ui {

InvariancePanel::InvariancePanel(QWidget* parent) : QWidget(parent) {
  registerInvarianceMetaTypes();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  auto* form = new QFormLayout;
  layout->addLayout(form);

  side_a_ = new QLabel(tr("the engine settings in force"), this);
  side_a_->setObjectName(QStringLiteral("invarianceSideA"));
  side_a_->setWordWrap(true);
  side_a_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  side_a_->setToolTip(tr("The engine loaded, as Settings > Engine set it; a run keeps the settings it started "
                         "with"));
  form->addRow(tr("A:"), side_a_);

  spec_b_ = new QLineEdit(this);
  spec_b_->setObjectName(QStringLiteral("invarianceSpecB"));
  spec_b_->setAccessibleName(tr("Configuration B"));
  spec_b_->setPlaceholderText(QStringLiteral("cascade=on,concurrency=16"));
  spec_b_->setText(exampleSpecs().front());
  spec_b_->setToolTip(tr("A's settings with these changed: engine setting keys (block_size, paged, prefix_caching, "
                         "cascade, max_batched_tokens, ...) and concurrency=N (N-1 other requests with the same "
                         "prompt run beside the checked one)"));
  examples_ = new QComboBox(this);
  examples_->setObjectName(QStringLiteral("invarianceExamples"));
  examples_->setAccessibleName(tr("Example configurations"));
  examples_->addItem(tr("Examples…"));
  examples_->addItems(exampleSpecs());
  connect(examples_, &QComboBox::activated, this, [this](int item) {
    if (item > 0) spec_b_->setText(examples_->itemText(item));
    examples_->setCurrentIndex(0);
  });
  auto* b_row = new QHBoxLayout;
  b_row->addWidget(spec_b_, 1);
  b_row->addWidget(examples_);
  form->addRow(tr("B:"), b_row);
  validation_ = new QLabel(this);
  validation_->setObjectName(QStringLiteral("invarianceValidation"));
  validation_->setWordWrap(true);
  validation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(QString(), validation_);

  use_conversation_ = new QRadioButton(tr("the conversation, as the chat sent its last message"), this);
  use_conversation_->setToolTip(
      tr("The system message and the turns up to the last thing you typed, through the model's chat template: "
         "the very tokens the chat ran. The check samples them its own way (greedy, no repetition penalty), "
         "so its reply may differ from the chat's"));
  use_file_ = new QRadioButton(tr("a file:"), this);
  use_conversation_->setChecked(true);
  auto* group = new QButtonGroup(this);
  group->addButton(use_conversation_);
  group->addButton(use_file_);
  prompt_file_ = new QLineEdit(this);
  prompt_file_->setObjectName(QStringLiteral("invariancePromptFile"));
  prompt_file_->setAccessibleName(tr("Prompt file"));
  prompt_file_->setPlaceholderText(tr("prompts separated by blank lines"));
  auto* browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, &InvariancePanel::browsePromptFile);
  auto* prompts_row = new QHBoxLayout;
  prompts_row->addWidget(use_conversation_);
  prompts_row->addWidget(use_file_);
  prompts_row->addWidget(prompt_file_, 1);
  prompts_row->addWidget(browse);
  form->addRow(tr("Prompts:"), prompts_row);

  max_tokens_ = new QSpinBox(this);
  max_tokens_->setObjectName(QStringLiteral("invarianceMaxTokens"));
  max_tokens_->setAccessibleName(tr("Tokens to generate"));
  max_tokens_->setRange(1, 4096);  // the checker refuses what its kept logits could not hold
  max_tokens_->setValue(InvarianceOptions{}.max_tokens);
  setCountedUnit(max_tokens_, tr("tokens"));
  form->addRow(tr("Generate:"), max_tokens_);

  run_ = new QPushButton(tr("Run check"), this);
  run_->setObjectName(QStringLiteral("invarianceRun"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName(QStringLiteral("invarianceCancel"));
  progress_ = new QProgressBar(this);
  progress_->setFormat(tr("%v / %m runs"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  auto* run_row = new QHBoxLayout;
  run_row->addWidget(run_);
  run_row->addWidget(cancel_);
  run_row->addWidget(progress_, 1);
  layout->addLayout(run_row);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("invarianceStatus"));
  status_->setWordWrap(true);
  layout->addWidget(status_);

  model_ = new InvarianceVerdictModel(this);
  view_ = new QTableView(this);
  view_->setAccessibleName(tr("Invariance verdicts"));
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->setVisible(false);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setSectionResizeMode(InvarianceVerdictModel::Prompt, QHeaderView::Stretch);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showRow(current.isValid() ? current.row() : -1); });

  auto makeSide = [this](const QString& title, QLabel** label, QTextBrowser** text, const QString& name) {
    auto* side = new QWidget(this);
    auto* v = new QVBoxLayout(side);
    v->setContentsMargins(0, 0, 0, 0);
    *label = new QLabel(title, side);
    *text = new QTextBrowser(side);
    (*text)->setObjectName(name);
    (*text)->setAccessibleName(title);
    v->addWidget(*label);
    v->addWidget(*text, 1);
    return side;
  };
  QLabel* title_a = nullptr;
  auto* sides = new QSplitter(Qt::Horizontal, this);
  sides->addWidget(makeSide(tr("A (settings in force)"), &title_a, &text_a_, QStringLiteral("invarianceTextA")));
  sides->addWidget(makeSide(tr("B"), &title_b_, &text_b_, QStringLiteral("invarianceTextB")));
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(view_);
  split->addWidget(sides);
  layout->addWidget(split, 1);

  connect(spec_b_, &QLineEdit::textChanged, this, &InvariancePanel::revalidate);
  connect(prompt_file_, &QLineEdit::textChanged, this, [this] {
    if (!prompt_file_->text().isEmpty()) use_file_->setChecked(true);
    revalidate();
  });
  connect(use_conversation_, &QRadioButton::toggled, this, &InvariancePanel::revalidate);
  connect(run_, &QPushButton::clicked, this, &InvariancePanel::run);
  connect(cancel_, &QPushButton::clicked, this, &InvariancePanel::cancel);
  setRunning(false);
  status_->setText(idleStatus());
  revalidate();
}

QStringList InvariancePanel::exampleSpecs() {
  return {QStringLiteral("cascade=on,concurrency=16"), QStringLiteral("cascade=off,concurrency=16"),
          QStringLiteral("block_size=1"),              QStringLiteral("prefix_caching=off,concurrency=8"),
          QStringLiteral("max_batched_tokens=16"),     QStringLiteral("paged=off")};
}

void InvariancePanel::setBaseConfig(const kvscope::EngineConfig& config) {
  base_ = config;
  base_.record_snapshots = false;
  side_a_->setText(base_.model_path.empty() ? tr("the engine settings in force (no model loaded)")
                                            : tr("the engine in force: %1").arg(checkedSettingsText(base_)));
  revalidate();
}

void InvariancePanel::setTokenBytes(const TokenBytesTable& table) {
  token_bytes_ = table;
  const QModelIndex current = view_->currentIndex();
  showRow(current.isValid() ? current.row() : -1);
}

void InvariancePanel::setSpecB(const QString& spec) { spec_b_->setText(spec); }

void InvariancePanel::setPromptFile(const QString& path) {
  prompt_file_->setText(path);
  (path.isEmpty() ? use_conversation_ : use_file_)->setChecked(true);
}

kvscope::Result<InvarianceJob> InvariancePanel::buildJob() const {
  if (base_.model_path.empty()) return Error{tr("Load a model first: A is the engine loaded.").toStdString()};
  InvarianceJob job;
  auto a = parse_invariance_side("", base_);
  if (!a.ok()) return Error{tr("A: %1").arg(QString::fromStdString(a.error())).toStdString()};
  auto b = parse_invariance_side(spec_b_->text().toStdString(), base_);
  if (!b.ok()) return Error{tr("B: %1").arg(QString::fromStdString(b.error())).toStdString()};
  job.a = std::move(a).value();
  job.b = std::move(b).value();
  job.options.max_tokens = max_tokens_->value();
  if (use_file_->isChecked()) {
    const QString path = prompt_file_->text();
    if (path.isEmpty()) return Error{tr("Choose a prompt file.").toStdString()};
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
      return Error{tr("Cannot read %1: %2").arg(path, file.errorString()).toStdString()};
    }
    for (std::string& block : split_prompt_blocks(file.readAll().toStdString())) job.prompts.emplace_back(std::move(block));
    if (job.prompts.empty()) return Error{tr("%1 holds no prompt.").arg(path).toStdString()};
  } else {
    ChatHistory conversation = prompt_source_ ? prompt_source_() : ChatHistory{};
    const bool asked = !conversation.empty() &&
                       QString::fromStdString(conversation.back().content).trimmed().size() > 0;
    if (!asked) return Error{tr("The conversation has no prompt yet.").toStdString()};
    job.prompts.push_back(InvariancePrompt::chat(std::move(conversation)));
  }
  return job;
}

bool InvariancePanel::canRun() const { return run_->isEnabled(); }
QString InvariancePanel::validationText() const { return validation_->text(); }
QString InvariancePanel::statusText() const { return status_->text(); }

void InvariancePanel::promptSourceChanged() { revalidate(); }

void InvariancePanel::revalidate() {
  // B's syntax and values are checked as typed; the prompts (a file may
  // change on disk, the conversation grows) when Run is pressed. A
  // refusal of the last Run described inputs that have changed since.
  if (refused_ && !running()) {
    refused_ = false;
    status_->setText(idleStatus());
  }
  QString message;
  bool ok = false;
  if (base_.model_path.empty()) {
    message = tr("Load a model first: A is the engine loaded.");
  } else if (auto b = parse_invariance_side(spec_b_->text().toStdString(), base_); !b.ok()) {
    message = QString::fromStdString(b.error());
  } else {
    ok = true;
    message = b->spec.empty() ? tr("B is A itself (a run-to-run check).")
                              : tr("B: A with %1").arg(QString::fromStdString(b->spec));
    title_b_->setText(tr("B (%1)").arg(b->spec.empty() ? tr("= A") : QString::fromStdString(b->spec)));
  }
  QPalette pal = validation_->palette();
  pal.setColor(QPalette::WindowText, ok ? palette().color(QPalette::WindowText) : errorTextColor(palette()));
  validation_->setPalette(pal);
  validation_->setText(message);
  run_->setEnabled(ok && !running());
}

void InvariancePanel::run() {
  auto job = buildJob();
  if (!job.ok()) {
    // The last run's results would read as this one's: they go. (A run
    // still going keeps its own; the refusal then only reports.)
    if (!running()) {
      model_->clear();
      showRow(-1);
      progress_->setValue(0);
      refused_ = true;
    }
    status_->setText(QString::fromStdString(job.error()));
    return;
  }
  refused_ = false;
  if (running()) emit cancelRequested(current_job_);  // the old run's result will be dropped
  current_job_ = ++next_job_;
  model_->clear();
  showRow(-1);
  const int total = 2 * static_cast<int>(job->prompts.size());
  progress_->setRange(0, total);
  progress_->setValue(0);
  status_->setText(tr("Checking %1 under A, then B…")
                       .arg(counted(static_cast<int>(job->prompts.size()), tr("prompt"), tr("prompts"))));
  setRunning(true);
  emit runRequested(current_job_, *job);
}

void InvariancePanel::cancel() {
  if (!running()) return;
  emit cancelRequested(current_job_);
  current_job_ = 0;  // whatever it still sends is stale now
  setRunning(false);
  status_->setText(tr("Cancelled."));
}

void InvariancePanel::onProgress(quint64 job_id, int done, int total) {
  if (job_id != current_job_ || current_job_ == 0) return;
  progress_->setRange(0, std::max(total, 1));
  progress_->setValue(std::clamp(done, 0, std::max(total, 1)));
}

void InvariancePanel::onFinished(quint64 job_id, const InvarianceOutcome& outcome) {
  if (job_id != current_job_ || current_job_ == 0) return;  // a run given up on
  current_job_ = 0;
  refused_ = false;  // what follows is this run's outcome, not a refusal
  setRunning(false);
  if (!outcome.ok()) {
    status_->setText(tr("The check failed: %1").arg(QString::fromStdString(outcome.error)));
    return;
  }
  const InvarianceReport& report = outcome.report;
  progress_->setValue(progress_->maximum());
  model_->setVerdicts(report.prompts);
  const int total = static_cast<int>(report.prompts.size());
  const int same = report.num_identical();
  QString verdict = same == total ? (total == 1 ? tr("The prompt is identical under A and B.")
                                                : tr("All %1 prompts identical under A and B.").arg(total))
                                  : tr("%1 of %2 identical; the others diverge (marked below).")
                                        .arg(same)
                                        .arg(counted(total, tr("prompt"), tr("prompts")));
  // A reply that ended at once compared one position only: say so, or
  // "identical" would claim more than was checked.
  int ended_at_once = 0;
  for (const PromptVerdict& v : report.prompts) ended_at_once += v.ended_at_once();
  if (ended_at_once > 0)
    verdict += QLatin1Char(' ') + tr("%1 of them generated nothing on either side (the model ended the reply at "
                                     "once): only their first position was compared; try another prompt.")
                                      .arg(ended_at_once);
  // What each side's engine did: "identical" means little if B never ran
  // the mode it was meant to test (no shared prefix, no cascade pass).
  QString text = verdict + QStringLiteral("\n") + tr("A: %1.").arg(runStatsText(report.stats_a)) +
                 QStringLiteral("\n") + tr("B: %1.").arg(runStatsText(report.stats_b));
  // The settings the results belong to: the engine's may change after.
  text += QStringLiteral("\n") + tr("A ran with %1; B with %2.")
                                     .arg(checkedSettingsText(report.a.config),
                                          report.b.spec.empty() ? tr("the same")
                                                                : tr("those and %1").arg(QString::fromStdString(report.b.spec)));
  for (const std::string& note : report.unexercised())
    text += QStringLiteral("\n") + tr("Note: %1.").arg(QString::fromStdString(note));
  for (const std::string& note : report.expected_differences())
    text += QStringLiteral("\n") + tr("Note: %1.").arg(QString::fromStdString(note));
  int different_prompts = 0;
  for (const PromptVerdict& v : report.prompts) different_prompts += !v.same_prompt;
  if (different_prompts > 0)
    text += QStringLiteral("\n") + tr("Note: %1 ran as different tokens under A and B (%2): those outputs "
                                       "are of different inputs.")
                                        .arg(counted(different_prompts, tr("prompt"), tr("prompts")))
                                        .arg(QString::fromStdString(report.different_prompt_reason()));
  for (const auto& [name, stats] : {std::pair{"A", &report.stats_a}, std::pair{"B", &report.stats_b}}) {
    for (const std::string& w : stats->warnings)
      text += QStringLiteral("\n") + tr("%1: warning: %2").arg(QLatin1String(name), QString::fromStdString(w));
  }
  status_->setText(text);
  // Show the first divergent prompt, or the first one.
  int row = 0;
  for (int r = 0; r < total; ++r) {
    if (!report.prompts[static_cast<size_t>(r)].identical) {
      row = r;
      break;
    }
  }
  if (total > 0) view_->setCurrentIndex(model_->index(row, 0));
}

void InvariancePanel::setRunning(bool on) {
  cancel_->setEnabled(on);
  progress_->setVisible(on || progress_->value() > 0);
  revalidate();
}

void InvariancePanel::showRow(int row) {
  const PromptVerdict* v = model_->verdictAt(row);
  if (!v) {
    text_a_->clear();
    text_b_->clear();
    return;
  }
  const QColor mark = palette().color(QPalette::Highlight);
  const QColor mark_text = palette().color(QPalette::HighlightedText);
  const std::vector<std::string>* table = token_bytes_ ? token_bytes_.get() : nullptr;
  text_a_->setHtml(continuationHtml(*v, false, table, mark, mark_text));
  text_b_->setHtml(continuationHtml(*v, true, table, mark, mark_text));
}

QString InvariancePanel::continuationShown(bool side_b) const {
  const QModelIndex current = view_->currentIndex();
  const PromptVerdict* v = model_->verdictAt(current.isValid() ? current.row() : -1);
  if (!v) return {};
  const std::vector<std::string>* table = token_bytes_ ? token_bytes_.get() : nullptr;
  return continuationHtml(*v, side_b, table, palette().color(QPalette::Highlight),
                          palette().color(QPalette::HighlightedText));
}

void InvariancePanel::browsePromptFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Prompt file"), prompt_file_->text(),
                                                    tr("Text files (*.txt);;All files (*)"));
  if (!path.isEmpty()) setPromptFile(path);
}

void InvariancePanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    revalidate();  // the error colour follows the theme
    const QModelIndex current = view_->currentIndex();
    showRow(current.isValid() ? current.row() : -1);
  }
}

}  // namespace kvscope::ui
