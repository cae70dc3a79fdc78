// SettingsDialog (see settings_dialog.h).
#include "settings_dialog.h"

#include <algorithm>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "sampling_editor.h"

namespace kvscope::ui {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

QSpinBox* spin(QWidget* parent, int lo, int hi, const QString& suffix = QString()) {
  auto* box = new QSpinBox(parent);
  box->setRange(lo, hi);
  box->setSuffix(suffix);
  return box;
}

int toMiB(int64_t bytes) { return static_cast<int>(std::min<int64_t>(bytes / kMiB, 1 << 24)); }

// A budget in whole MiB: the exact bytes given when the box still shows them.
int64_t fromMiB(const QSpinBox* box, int64_t given_bytes) {
  return box->value() == toMiB(given_bytes) ? given_bytes : box->value() * kMiB;
}

}  // namespace

SettingsDialog::SettingsDialog(const kvscope::EngineConfig& config, QWidget* parent)
    : SettingsDialog(config, std::nullopt, QStringList(), parent) {}

SettingsDialog::SettingsDialog(const kvscope::EngineConfig& config, const ConversationSettings& chat_defaults,
                               const QStringList& recent_models, QWidget* parent)
    : SettingsDialog(config, std::optional<ConversationSettings>(chat_defaults), recent_models, parent) {}

SettingsDialog::SettingsDialog(const kvscope::EngineConfig& config,
                               const std::optional<ConversationSettings>& chat_defaults,
                               const QStringList& recent_models, QWidget* parent)
    : QDialog(parent), given_(config), chat_given_(chat_defaults) {
  setWindowTitle(tr("Settings"));
  tabs_ = new QTabWidget(this);
  buildModelTab(recent_models);
  buildEngineTab();

  if (chat_defaults) {
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("chat_tab"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    chat_editor_ = new SamplingEditor(scroll);
    chat_editor_->setSettings(*chat_defaults);
    scroll->setWidget(chat_editor_);
    tabs_->addTab(scroll, tr("Chat defaults"));
    connect(chat_editor_, &SamplingEditor::edited, this, &SettingsDialog::revalidate);
  }

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("problem_summary"));
  summary_->setAccessibleName(tr("Settings problem"));
  summary_->setWordWrap(true);
  summary_->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
    if (isValid()) accept();  // Enter in a field must not get past a disabled OK
  });
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(tabs_);
  layout->addWidget(summary_);
  layout->addWidget(buttons_);
  loadConfig(config);
}

QLabel* SettingsDialog::addRow(QFormLayout* form, EngineField field, const QString& label, QWidget* control,
                               const QString& tooltip) {
  QString name = label;
  name.remove(QLatin1Char(':'));
  control->setAccessibleName(name);
  control->setToolTip(tooltip);
  control->setAccessibleDescription(tooltip);
  auto* row_label = new QLabel(label, control->parentWidget());
  row_label->setBuddy(control);
  form->addRow(row_label, control);
  if (field == EngineField::None) return nullptr;
  auto* message = new QLabel(control->parentWidget());
  message->setObjectName(control->objectName() + QStringLiteral("_message"));
  message->setAccessibleName(tr("%1 problem").arg(name));
  message->setWordWrap(true);
  message->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  message->hide();
  form->addRow(message);
  messages_.insert(field, message);
  return message;
}

void SettingsDialog::buildModelTab(const QStringList& recent_models) {
  auto* page = new QWidget(this);
  auto* form = new QFormLayout(page);
  model_path_ = new QLineEdit(page);
  model_path_->setObjectName(QStringLiteral("model_path"));
  model_path_->setPlaceholderText(tr("a .gguf file or a Hugging Face model folder"));
  auto* browse = new QPushButton(tr("Browse…"), page);
  browse->setObjectName(QStringLiteral("browse_model"));
  browse->setAccessibleName(tr("Browse for a model file"));
  browse->setToolTip(tr("Pick a model file"));
  auto* path_row = new QWidget(page);
  auto* path_layout = new QHBoxLayout(path_row);
  path_layout->setContentsMargins(0, 0, 0, 0);
  path_layout->addWidget(model_path_, 1);
  path_layout->addWidget(browse);
  form->addRow(tr("Model:"), path_row);
  model_path_->setAccessibleName(tr("Model file"));
  model_path_->setToolTip(tr("The model the engine loads; changing it reloads the engine."));
  auto* message = new QLabel(page);
  message->setObjectName(QStringLiteral("model_path_message"));
  message->setAccessibleName(tr("Model file problem"));
  message->setWordWrap(true);
  message->setStyleSheet(QStringLiteral("color: #d32f2f;"));
  message->hide();
  form->addRow(message);
  messages_.insert(EngineField::ModelPath, message);

  recent_models_ = new QComboBox(page);
  recent_models_->setObjectName(QStringLiteral("recent_models"));
  recent_models_->addItem(recent_models.isEmpty() ? tr("none yet") : tr("choose…"));
  recent_models_->addItems(recent_models);
  recent_models_->setEnabled(!recent_models.isEmpty());
  addRow(form, EngineField::None, tr("Recent models:"), recent_models_,
         tr("Models opened before, most recent first; picking one puts its path above."));
  connect(recent_models_, &QComboBox::activated, this, [this](int index) {
    if (index > 0) model_path_->setText(recent_models_->itemText(index));
  });
  connect(browse, &QPushButton::clicked, this, &SettingsDialog::browseModel);
  connect(model_path_, &QLineEdit::textChanged, this, &SettingsDialog::revalidate);
  tabs_->addTab(page, tr("Model"));
}

void SettingsDialog::buildEngineTab() {
  auto* page = new QWidget(this);
  auto* form = new QFormLayout(page);
  auto named = [](QWidget* w, const char* name) {
    w->setObjectName(QLatin1String(name));
    return w;
  };

  threads_ = spin(page, 0, 1024);
  threads_->setSpecialValueText(tr("all cores"));
  addRow(form, EngineField::Threads, tr("Threads:"), named(threads_, "threads"),
         tr("CPU threads for the model: more is faster until cores or memory bandwidth run out."));

  kv_by_budget_ = new QRadioButton(tr("Memory budget"), page);
  kv_by_blocks_ = new QRadioButton(tr("Exact number of blocks"), page);
  auto* group = new QButtonGroup(page);
  group->addButton(kv_by_budget_);
  group->addButton(kv_by_blocks_);
  kv_budget_mib_ = spin(page, 0, 1 << 24, tr(" MiB"));
  num_blocks_ = spin(page, 1, 1 << 24, tr(" blocks"));
  addRow(form, EngineField::None, tr("KV cache size:"), named(kv_by_budget_, "kv_by_budget"),
         tr("Size the KV pool from a memory budget; the block count follows from the model."));
  addRow(form, EngineField::KvBudget, tr("KV budget:"), named(kv_budget_mib_, "kv_budget"),
         tr("Memory for the KV pool: more holds more and longer conversations before preempting."));
  addRow(form, EngineField::None, QString(), named(kv_by_blocks_, "kv_by_blocks"),
         tr("Give the KV pool an exact number of blocks, whatever memory that takes."));
  addRow(form, EngineField::NumBlocks, tr("KV blocks:"), named(num_blocks_, "num_blocks"),
         tr("Physical KV blocks in the pool: fewer shows preemption sooner, more uses more memory."));
  kv_by_budget_->setAccessibleName(tr("KV cache size from a memory budget"));
  kv_by_blocks_->setAccessibleName(tr("KV cache size as an exact number of blocks"));
  connect(kv_by_blocks_, &QRadioButton::toggled, this, [this](bool by_blocks) {
    num_blocks_->setEnabled(by_blocks);
    kv_budget_mib_->setEnabled(!by_blocks);
    revalidate();
  });

  block_size_ = spin(page, 1, 2048, tr(" tokens"));
  addRow(form, EngineField::BlockSize, tr("Block size:"), named(block_size_, "block_size"),
         tr("Token slots per KV block: small wastes less in partly filled blocks, large means shorter block tables."));
  max_model_len_ = spin(page, 0, 1 << 22, tr(" tokens"));
  max_model_len_->setSpecialValueText(tr("the model's"));
  addRow(form, EngineField::MaxModelLen, tr("Max model length:"), named(max_model_len_, "max_model_len"),
         tr("Longest prompt plus reply: shorter caps memory per request; 0 uses the model's trained context."));
  max_seqs_ = spin(page, 1, 4096);
  addRow(form, EngineField::MaxSeqs, tr("Max sequences:"), named(max_seqs_, "max_seqs"),
         tr("Sequences batched in one step: more raises throughput but needs more KV memory."));
  max_batched_tokens_ = spin(page, 1, 1 << 20, tr(" tokens"));
  addRow(form, EngineField::MaxBatchedTokens, tr("Max tokens per step:"),
         named(max_batched_tokens_, "max_batched_tokens"),
         tr("Token budget of one step (long prompts are prefilled in chunks of it): larger is faster, "
            "smaller keeps replies streaming."));
  paged_ = new QCheckBox(tr("Paged attention"), page);
  addRow(form, EngineField::None, QString(), named(paged_, "paged"),
         tr("On: KV memory is taken block by block; off: each request reserves its whole maximum length up front."));
  prefix_caching_ = new QCheckBox(tr("Prefix caching"), page);
  addRow(form, EngineField::None, QString(), named(prefix_caching_, "prefix_caching"),
         tr("Reuse the KV blocks of prompts that start the same, instead of computing them again."));
  policy_ = new QComboBox(page);
  policy_->addItem(tr("Continuous batching"), static_cast<int>(kvscope::SchedulingPolicy::Continuous));
  policy_->addItem(tr("Static batching"), static_cast<int>(kvscope::SchedulingPolicy::Static));
  addRow(form, EngineField::None, tr("Scheduling:"), named(policy_, "policy"),
         tr("Continuous: requests join and leave at any step; static: a batch runs until all of it finishes."));
  preemption_ = new QComboBox(page);
  preemption_->addItem(tr("Recompute"), static_cast<int>(kvscope::PreemptionMode::Recompute));
  preemption_->addItem(tr("Swap to host memory"), static_cast<int>(kvscope::PreemptionMode::Swap));
  addRow(form, EngineField::None, tr("Preemption:"), named(preemption_, "preemption"),
         tr("When KV blocks run out: recompute frees a request's blocks (costs compute), swap copies them out "
            "(costs memory)."));
  swap_space_mib_ = spin(page, 0, 1 << 24, tr(" MiB"));
  addRow(form, EngineField::SwapSpace, tr("Swap space:"), named(swap_space_mib_, "swap_space"),
         tr("Host memory for swapped-out KV blocks: more lets more requests wait without recomputing."));
  connect(preemption_, &QComboBox::currentIndexChanged, this, [this] {
    swap_space_mib_->setEnabled(preemption_->currentData().toInt() ==
                                static_cast<int>(kvscope::PreemptionMode::Swap));
    revalidate();
  });

  for (QSpinBox* box : {threads_, kv_budget_mib_, num_blocks_, block_size_, max_model_len_, max_seqs_,
                        max_batched_tokens_, swap_space_mib_})
    connect(box, &QSpinBox::valueChanged, this, &SettingsDialog::revalidate);
  for (QCheckBox* box : {paged_, prefix_caching_}) connect(box, &QCheckBox::toggled, this, &SettingsDialog::revalidate);
  connect(policy_, &QComboBox::currentIndexChanged, this, &SettingsDialog::revalidate);
  tabs_->addTab(page, tr("Engine"));
}

void SettingsDialog::loadConfig(const kvscope::EngineConfig& c) {
  model_path_->setText(QString::fromStdString(c.model_path));
  threads_->setValue(c.num_threads);
  kv_budget_mib_->setValue(toMiB(c.kv_budget_bytes));
  num_blocks_->setValue(c.num_blocks > 0 ? c.num_blocks : 1024);
  (c.num_blocks > 0 ? kv_by_blocks_ : kv_by_budget_)->setChecked(true);
  num_blocks_->setEnabled(c.num_blocks > 0);
  kv_budget_mib_->setEnabled(c.num_blocks <= 0);
  block_size_->setValue(c.block_size);
  max_model_len_->setValue(c.max_model_len);
  max_seqs_->setValue(c.max_seqs);
  max_batched_tokens_->setValue(c.max_batched_tokens);
  paged_->setChecked(c.paged);
  prefix_caching_->setChecked(c.prefix_caching);
  policy_->setCurrentIndex(policy_->findData(static_cast<int>(c.policy)));
  preemption_->setCurrentIndex(preemption_->findData(static_cast<int>(c.preemption)));
  swap_space_mib_->setValue(toMiB(c.swap_space_bytes));
  swap_space_mib_->setEnabled(c.preemption == kvscope::PreemptionMode::Swap);
  revalidate();
}

kvscope::EngineConfig SettingsDialog::config() const {
  kvscope::EngineConfig c = given_;
  c.model_path = model_path_->text().trimmed().toStdString();
  c.num_threads = threads_->value();
  c.kv_budget_bytes = fromMiB(kv_budget_mib_, given_.kv_budget_bytes);
  c.num_blocks = kv_by_blocks_->isChecked() ? num_blocks_->value() : 0;
  c.block_size = block_size_->value();
  c.max_model_len = max_model_len_->value();
  c.max_seqs = max_seqs_->value();
  c.max_batched_tokens = max_batched_tokens_->value();
  c.paged = paged_->isChecked();
  c.prefix_caching = prefix_caching_->isChecked();
  c.policy = static_cast<kvscope::SchedulingPolicy>(policy_->currentData().toInt());
  c.preemption = static_cast<kvscope::PreemptionMode>(preemption_->currentData().toInt());
  c.swap_space_bytes = fromMiB(swap_space_mib_, given_.swap_space_bytes);
  return c;
}

ConversationSettings SettingsDialog::chatDefaults() const {
  if (chat_editor_) return chat_editor_->settings();
  return chat_given_.value_or(ConversationSettings());
}

bool SettingsDialog::engineChanged() const { return !sameEngineKnobs(config(), given_); }

bool SettingsDialog::chatDefaultsChanged() const { return chat_given_ && !(chatDefaults() == *chat_given_); }

void SettingsDialog::browseModel() {
  const QString current = model_path_->text().trimmed();
  const QString start = current.isEmpty() ? QString() : QFileInfo(current).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Choose a model"), start,
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) model_path_->setText(path);
}

void SettingsDialog::revalidate() {
  // Called while the controls are still being built; wait for the last one.
  if (!buttons_ || !swap_space_mib_) return;
  const std::optional<EngineProblem> problem = engineConfigProblem(config(), /*check_model_file=*/true);
  for (auto it = messages_.begin(); it != messages_.end(); ++it) {
    const bool here = problem && problem->field == it.key();
    it.value()->setText(here ? problem->message : QString());
    it.value()->setVisible(here);
  }
  if (problem) {
    const QString tab = problem->field == EngineField::ModelPath ? tr("Model") : tr("Engine");
    problem_ = tr("%1: %2").arg(tab, problem->message);
  } else if (chat_editor_ && !chat_editor_->isValid()) {
    problem_ = tr("Chat defaults: %1").arg(chat_editor_->problem());
  } else {
    problem_.clear();
  }
  summary_->setText(problem_);
  summary_->setVisible(!problem_.isEmpty());
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(isValid());
}

}  // namespace kvscope::ui
