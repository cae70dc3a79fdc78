// SettingsDialog (see settings_dialog.h).
#include "settings_dialog.h"

#include <algorithm>
#include <limits>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSpinBox>
#include <QStyle>
#include <QTabWidget>
#include <QVBoxLayout>

#include "palette_colors.h"
#include "sampling_editor.h"
#include "unit_suffix.h"
#include "window_fit.h"

namespace kvscope::ui {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

int clampToInt(int64_t v) {
  return static_cast<int>(std::clamp<int64_t>(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

// Bytes settings are edited in whole MiB.
int toMiB(int64_t bytes) { return clampToInt(bytes / kMiB); }

QString qs(const std::string& text) { return QString::fromStdString(text); }

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
    // The editor has no margins of its own (a dialog's layout gives them); in
    // a tab its labels sat against the frame, unlike the other tabs'.
    const int margin = style()->pixelMetric(QStyle::PM_LayoutLeftMargin);
    chat_editor_->setContentsMargins(margin, margin, margin, margin);
    scroll->setWidget(chat_editor_);
    tabs_->addTab(scroll, tr("Chat defaults"));
    connect(chat_editor_, &SamplingEditor::edited, this, &SettingsDialog::revalidate);
  }

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("problem_summary"));
  summary_->setAccessibleName(tr("Settings problem"));
  summary_->setWordWrap(true);
  summary_->setPalette(withErrorText(summary_->palette()));
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
  // The layout's own size showed a dozen of the engine tab's rows and cut
  // the model's path: open with room for them, within the screen.
  resize(fittedWindowSize(kOpeningSize, screen() ? screen()->availableGeometry() : QRect()));
}

QLabel* SettingsDialog::addMessageLabel(QFormLayout* form, QWidget* control, const QString& key,
                                        const QString& name) {
  auto* message = new QLabel(control->parentWidget());
  message->setObjectName(key + QStringLiteral("_message"));
  message->setAccessibleName(tr("%1 problem").arg(name));
  message->setWordWrap(true);
  message->setPalette(withErrorText(message->palette()));
  message->hide();
  form->addRow(message);
  messages_.insert(key, message);
  return message;
}

void SettingsDialog::buildModelTab(const QStringList& recent_models) {
  const kvscope::SettingSpec& spec = *kvscope::find_setting("model_path");
  auto* page = new QWidget(this);
  auto* form = new QFormLayout(page);
  auto* path = new QLineEdit(page);
  path->setObjectName(qs(spec.key));
  path->setPlaceholderText(tr("a .gguf file or a Hugging Face model folder"));
  path->setAccessibleName(tr("Model file"));
  path->setToolTip(qs(spec.help));
  controls_.insert(qs(spec.key), path);
  auto* browse = new QPushButton(tr("Browse…"), page);
  browse->setObjectName(QStringLiteral("browse_model"));
  browse->setAccessibleName(tr("Browse for a model file"));
  browse->setToolTip(tr("Pick a model file"));
  auto* path_row = new QWidget(page);
  auto* path_layout = new QHBoxLayout(path_row);
  path_layout->setContentsMargins(0, 0, 0, 0);
  path_layout->addWidget(path, 1);
  path_layout->addWidget(browse);
  form->addRow(tr("%1:").arg(qs(spec.label)), path_row);
  addMessageLabel(form, path, qs(spec.key), tr("Model file"));

  recent_models_ = new QComboBox(page);
  recent_models_->setObjectName(QStringLiteral("recent_models"));
  recent_models_->addItem(recent_models.isEmpty() ? tr("none yet") : tr("choose…"));
  recent_models_->addItems(recent_models);
  recent_models_->setEnabled(!recent_models.isEmpty());
  recent_models_->setAccessibleName(tr("Recent models"));
  recent_models_->setToolTip(tr("Models opened before, most recent first; picking one puts its path above."));
  form->addRow(tr("Recent models:"), recent_models_);
  connect(recent_models_, &QComboBox::activated, this, [this, path](int index) {
    if (index > 0) path->setText(recent_models_->itemText(index));
  });
  connect(browse, &QPushButton::clicked, this, &SettingsDialog::browseModel);
  connect(path, &QLineEdit::textChanged, this, &SettingsDialog::revalidate);
  tabs_->addTab(page, tr("Model"));
}

void SettingsDialog::buildEngineTab() {
  auto* page = new QWidget(this);
  auto* layout = new QVBoxLayout(page);
  QMap<QString, QFormLayout*> forms;  // one group box per table group, in table order
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings()) {
    if (spec.key == "model_path") continue;  // the Model tab
    const QString group = qs(spec.group);
    if (!forms.contains(group)) {
      auto* box = new QGroupBox(group, page);
      box->setObjectName(QStringLiteral("group_") + group);
      forms.insert(group, new QFormLayout(box));
      layout->addWidget(box);
    }
    addSettingRow(forms.value(group), spec);
  }
  layout->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName(QStringLiteral("engine_tab"));
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(page);
  tabs_->addTab(scroll, tr("Engine"));
}

void SettingsDialog::addSettingRow(QFormLayout* form, const kvscope::SettingSpec& spec) {
  QWidget* parent = form->parentWidget();
  const QString key = qs(spec.key);
  const QString unit = spec.unit.empty() ? QString() : QStringLiteral(" ") + qs(spec.unit);
  QString help = qs(spec.help);
  QWidget* control = nullptr;
  QWidget* field = nullptr;  // what the form row holds: the control, or a row around it
  QString row_label = tr("%1:").arg(qs(spec.label));
  switch (spec.type) {
    case kvscope::SettingType::Int:
    case kvscope::SettingType::Bytes: {
      auto* box = new QSpinBox(parent);
      const bool bytes = spec.type == kvscope::SettingType::Bytes;
      box->setRange(bytes ? clampToInt((spec.min + kMiB - 1) / kMiB) : clampToInt(spec.min),
                    bytes ? std::min(toMiB(spec.max), 1 << 24) : clampToInt(spec.max));
      if (bytes) {
        box->setSuffix(tr(" MiB"));
      } else if (!spec.unit.empty()) {
        setCountedUnit(box, qs(spec.unit));  // "1 rank", "2 ranks"
      }
      if (!spec.zero_means.empty() && spec.min == 0) {
        box->setSpecialValueText(qs(spec.zero_means));
        help += tr(" (0: %1)").arg(qs(spec.zero_means));
      }
      // A spin box silently puts a typed value back into its range: the
      // tooltip says what the range is.
      help += tr(" Range: %1 to %2%3.")
                  .arg(QLocale().toString(box->minimum()), QLocale().toString(box->maximum()), box->suffix());
      connect(box, &QSpinBox::valueChanged, this, &SettingsDialog::revalidate);
      control = box;
      break;
    }
    case kvscope::SettingType::Bool: {
      auto* box = new QCheckBox(qs(spec.label), parent);
      connect(box, &QCheckBox::toggled, this, &SettingsDialog::revalidate);
      control = box;
      row_label.clear();
      break;
    }
    case kvscope::SettingType::Choice: {
      auto* box = new QComboBox(parent);
      for (size_t i = 0; i < spec.choices.size(); ++i) {
        const QString name = qs(spec.choices[i]);
        box->addItem(i < spec.choice_labels.size() ? qs(spec.choice_labels[i]) : name, name);
      }
      connect(box, &QComboBox::currentIndexChanged, this, &SettingsDialog::revalidate);
      control = box;
      break;
    }
    case kvscope::SettingType::Path: {
      auto* edit = new QLineEdit(parent);
      connect(edit, &QLineEdit::textChanged, this, &SettingsDialog::revalidate);
      control = edit;
      // A path is picked, not typed: a Browse… button beside it.
      auto* browse = new QPushButton(tr("Browse…"), parent);
      browse->setObjectName(QStringLiteral("browse_") + key);
      browse->setAccessibleName(tr("Browse for %1").arg(qs(spec.label)));
      connect(browse, &QPushButton::clicked, this, [this, edit, label = qs(spec.label)] { browseFile(edit, tr("Choose the %1").arg(label.toLower())); });
      browse_buttons_.insert(key, browse);
      field = new QWidget(parent);
      auto* row = new QHBoxLayout(field);
      row->setContentsMargins(0, 0, 0, 0);
      row->addWidget(edit, 1);
      row->addWidget(browse);
      break;
    }
  }
  if (!field) field = control;
  control->setObjectName(key);
  control->setAccessibleName(qs(spec.label));
  control->setToolTip(help);
  control->setAccessibleDescription(help);
  if (row_label.isEmpty()) {
    form->addRow(field);
  } else {
    auto* label = new QLabel(row_label, parent);
    label->setBuddy(control);
    form->addRow(label, field);
  }
  controls_.insert(key, control);
  addMessageLabel(form, control, key, qs(spec.label));
}

kvscope::SettingValue SettingsDialog::controlValue(const kvscope::SettingSpec& spec) const {
  QWidget* control = controls_.value(qs(spec.key));
  switch (spec.type) {
    case kvscope::SettingType::Int: return int64_t{static_cast<QSpinBox*>(control)->value()};
    case kvscope::SettingType::Bytes: {
      // The exact bytes given while the box still shows them (as clamped to
      // its range: a budget under 1 MiB shows as 1).
      const int64_t given = std::get<int64_t>(spec.get(given_));
      const auto* box = static_cast<QSpinBox*>(control);
      const int mib = box->value();
      return mib == std::clamp(toMiB(given), box->minimum(), box->maximum()) ? given : int64_t{mib} * kMiB;
    }
    case kvscope::SettingType::Bool: return static_cast<QCheckBox*>(control)->isChecked();
    case kvscope::SettingType::Choice: return static_cast<QComboBox*>(control)->currentData().toString().toStdString();
    case kvscope::SettingType::Path: return static_cast<QLineEdit*>(control)->text().trimmed().toStdString();
  }
  return {};
}

void SettingsDialog::setControlValue(const kvscope::SettingSpec& spec, const kvscope::SettingValue& value) {
  QWidget* control = controls_.value(qs(spec.key));
  switch (spec.type) {
    case kvscope::SettingType::Int:
      static_cast<QSpinBox*>(control)->setValue(clampToInt(std::get<int64_t>(value)));
      break;
    case kvscope::SettingType::Bytes: static_cast<QSpinBox*>(control)->setValue(toMiB(std::get<int64_t>(value))); break;
    case kvscope::SettingType::Bool: static_cast<QCheckBox*>(control)->setChecked(std::get<bool>(value)); break;
    case kvscope::SettingType::Choice: {
      auto* box = static_cast<QComboBox*>(control);
      box->setCurrentIndex(std::max(0, box->findData(qs(std::get<std::string>(value)))));
      break;
    }
    case kvscope::SettingType::Path: static_cast<QLineEdit*>(control)->setText(qs(std::get<std::string>(value))); break;
  }
}

void SettingsDialog::loadConfig(const kvscope::EngineConfig& c) {
  loading_ = true;
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings()) setControlValue(spec, spec.get(c));
  loading_ = false;
  revalidate();
}

kvscope::EngineConfig SettingsDialog::config() const {
  kvscope::EngineConfig c = given_;
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings()) spec.set(c, controlValue(spec));
  return c;
}

ConversationSettings SettingsDialog::chatDefaults() const {
  if (chat_editor_) return chat_editor_->settings();
  return chat_given_.value_or(ConversationSettings());
}

bool SettingsDialog::engineChanged() const { return !kvscope::same_settings(config(), given_); }

bool SettingsDialog::chatDefaultsChanged() const { return chat_given_ && !(chatDefaults() == *chat_given_); }

void SettingsDialog::browseModel() {
  browseFile(static_cast<QLineEdit*>(controls_.value(QStringLiteral("model_path"))), tr("Choose a model"));
}

void SettingsDialog::browseFile(QLineEdit* path, const QString& title) {
  const QString current = path->text().trimmed();
  const QString start = current.isEmpty() ? QString() : QFileInfo(current).absolutePath();
  const QString chosen = QFileDialog::getOpenFileName(this, title, start,
                                                      tr("GGUF models (*.gguf);;All files (*)"));
  if (!chosen.isEmpty()) path->setText(chosen);
}

void SettingsDialog::setModelShape(const QString& model_path, const kvscope::ModelShape& shape) {
  shape_model_path_ = model_path;
  shape_ = shape;
  revalidate();
}

void SettingsDialog::revalidate() {
  if (loading_ || !buttons_) return;
  const kvscope::EngineConfig c = config();
  for (const kvscope::SettingSpec& spec : kvscope::engine_settings()) {
    if (!spec.applies) continue;
    controls_.value(qs(spec.key))->setEnabled(spec.applies(c));
    if (QPushButton* browse = browse_buttons_.value(qs(spec.key))) browse->setEnabled(spec.applies(c));
  }
  QList<EngineProblem> problems = engineConfigProblems(c, /*check_model_file=*/true);
  // The memory plan only once the settings are valid on their own (it assumes
  // their ranges), and only for the model whose shape it knows.
  if (problems.isEmpty() && !shape_model_path_.isEmpty() && qs(c.model_path) == shape_model_path_) {
    for (const kvscope::SettingProblem& p : kvscope::plan_kv(shape_, c, kvscope::physical_memory_bytes()).problems)
      problems.append({qs(p.field), qs(p.message)});
  }
  for (auto it = messages_.begin(); it != messages_.end(); ++it) {
    QStringList here;
    for (const EngineProblem& p : problems) {
      if (p.field == it.key()) here.append(p.message);
    }
    it.value()->setText(here.join(QLatin1Char('\n')));
    it.value()->setVisible(!here.isEmpty());
  }
  if (!problems.isEmpty()) {
    const QString tab = problems.front().field == QLatin1String("model_path") ? tr("Model") : tr("Engine");
    problem_ = tr("%1: %2").arg(tab, problems.front().message);
    if (problems.size() > 1) problem_ += tr(" (and %n more)", nullptr, static_cast<int>(problems.size() - 1));
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
