// SamplingEditor (see sampling_editor.h).
#include "sampling_editor.h"

#include <optional>

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QSpinBox>

#include "palette_colors.h"
#include "unit_suffix.h"

namespace kvscope::ui {
namespace {

QDoubleSpinBox* doubleSpin(QWidget* parent, double lo, double hi, double step, int decimals) {
  auto* box = new QDoubleSpinBox(parent);
  box->setRange(lo, hi);
  box->setSingleStep(step);
  box->setDecimals(decimals);
  return box;
}

QSpinBox* intSpin(QWidget* parent, int lo, int hi) {
  auto* box = new QSpinBox(parent);
  box->setRange(lo, hi);
  return box;
}

// Parses the seed box: empty means 0, a random seed per request.
std::optional<uint64_t> parseSeed(const QString& text) {
  const QString trimmed = text.trimmed();
  if (trimmed.isEmpty()) return 0;
  bool ok = false;
  const qulonglong seed = trimmed.toULongLong(&ok);
  if (!ok || trimmed.startsWith(QLatin1Char('+'))) return std::nullopt;
  return seed;
}

}  // namespace

SamplingEditor::SamplingEditor(QWidget* parent) : QWidget(parent) {
  form_ = new QFormLayout(this);
  form_->setContentsMargins(0, 0, 0, 0);

  system_prompt_ = new QPlainTextEdit(this);
  system_prompt_->setPlaceholderText(tr("none"));
  system_prompt_->setTabChangesFocus(true);
  system_prompt_->setMinimumHeight(60);
  addField(QStringLiteral("system_prompt"), tr("System prompt:"), system_prompt_,
           tr("Instructions sent before the conversation as the system message; empty sends none."));

  temperature_ = doubleSpin(this, 0.0, 5.0, 0.05, 3);
  addField(QStringLiteral("temperature"), tr("Temperature:"), temperature_,
           tr("Higher gives more varied replies, lower more predictable ones; 0 always picks the likeliest token."));
  top_k_ = intSpin(this, 0, 1 << 20);
  top_k_->setSpecialValueText(tr("off"));
  addField(QStringLiteral("top_k"), tr("Top-k:"), top_k_,
           tr("Sample only among the k likeliest tokens: smaller is safer, larger more varied; 0 turns it off."));
  top_p_ = doubleSpin(this, 0.0, 1.0, 0.01, 3);
  addField(QStringLiteral("top_p"), tr("Top-p:"), top_p_,
           tr("Sample among the likeliest tokens whose probabilities add up to p: lower is safer; 1 turns it off."));
  min_p_ = doubleSpin(this, 0.0, 1.0, 0.01, 3);
  addField(QStringLiteral("min_p"), tr("Min-p:"), min_p_,
           tr("Drop tokens less likely than min-p times the likeliest one: higher is safer; 0 turns it off."));
  repetition_penalty_ = doubleSpin(this, 0.0, 10.0, 0.05, 3);
  addField(QStringLiteral("repetition_penalty"), tr("Repetition penalty:"), repetition_penalty_,
           tr("Above 1 makes recently seen tokens less likely (less repetition, may stray); 1 turns it off."));
  repeat_last_n_ = intSpin(this, -1, 1 << 20);
  repeat_last_n_->setSpecialValueText(tr("all tokens"));
  addField(QStringLiteral("repeat_last_n"), tr("Penalty window:"), repeat_last_n_,
           tr("How many recent tokens the penalties look at: 0 turns them off, the lowest value means all."));
  presence_penalty_ = doubleSpin(this, -10.0, 10.0, 0.1, 3);
  addField(QStringLiteral("presence_penalty"), tr("Presence penalty:"), presence_penalty_,
           tr("Subtracted once from every token already in the window: positive pushes towards new topics."));
  frequency_penalty_ = doubleSpin(this, -10.0, 10.0, 0.1, 3);
  addField(QStringLiteral("frequency_penalty"), tr("Frequency penalty:"), frequency_penalty_,
           tr("Subtracted per occurrence in the window: positive discourages repeating the same words."));
  max_tokens_ = intSpin(this, 1, 1 << 20);
  setCountedUnit(max_tokens_, tr("tokens"));
  addField(QStringLiteral("max_tokens"), tr("Max reply length:"), max_tokens_,
           tr("A reply stops after this many tokens: longer answers cost more time and KV memory."));
  seed_ = new QLineEdit(this);
  seed_->setPlaceholderText(tr("random"));
  addField(QStringLiteral("seed"), tr("Seed:"), seed_,
           tr("The same seed, prompt and settings give the same reply; 0 or empty picks a random seed."));
  stop_ = new QPlainTextEdit(this);
  stop_->setPlaceholderText(tr("one per line; \\n for a newline"));
  stop_->setTabChangesFocus(true);
  stop_->setMaximumHeight(70);
  addField(QStringLiteral("stop"), tr("Stop strings:"), stop_,
           tr("Generation ends where one of these appears (not shown); one per line, \\n = newline, \\t = tab."));
  n_ = intSpin(this, ConversationSettings::kMinReplies, ConversationSettings::kMaxReplies);
  addField(QStringLiteral("n"), tr("Parallel replies:"), n_,
           tr("Alternative replies generated at once; they share the prompt's KV blocks but each costs decode time."));

  for (QDoubleSpinBox* box : {temperature_, top_p_, min_p_, repetition_penalty_, presence_penalty_, frequency_penalty_})
    connect(box, &QDoubleSpinBox::valueChanged, this, &SamplingEditor::revalidate);
  for (QSpinBox* box : {top_k_, repeat_last_n_, max_tokens_, n_})
    connect(box, &QSpinBox::valueChanged, this, &SamplingEditor::revalidate);
  connect(seed_, &QLineEdit::textChanged, this, &SamplingEditor::revalidate);
  connect(system_prompt_, &QPlainTextEdit::textChanged, this, &SamplingEditor::revalidate);
  connect(stop_, &QPlainTextEdit::textChanged, this, &SamplingEditor::revalidate);

  setSettings(ConversationSettings());
}

QLabel* SamplingEditor::addField(const QString& field, const QString& label, QWidget* control,
                                 const QString& tooltip) {
  QString name = label;
  name.remove(QLatin1Char(':'));
  control->setObjectName(field);
  control->setAccessibleName(name);
  // A spin box silently puts a typed value back into its range: say what it is.
  QString help = tooltip;
  if (const auto* box = qobject_cast<QSpinBox*>(control)) {
    help += tr(" Range: %1 to %2.").arg(QLocale().toString(box->minimum()), QLocale().toString(box->maximum()));
  } else if (const auto* real = qobject_cast<QDoubleSpinBox*>(control)) {
    help += tr(" Range: %1 to %2.")
                .arg(QLocale().toString(real->minimum(), 'f', real->decimals()),
                     QLocale().toString(real->maximum(), 'f', real->decimals()));
  }
  control->setToolTip(help);
  control->setAccessibleDescription(help);
  auto* message = new QLabel(this);
  message->setObjectName(field + QStringLiteral("_message"));
  message->setAccessibleName(tr("%1 problem").arg(name));
  message->setWordWrap(true);
  message->setPalette(withErrorText(message->palette()));
  message->hide();
  auto* row_label = new QLabel(label, this);
  row_label->setBuddy(control);
  form_->addRow(row_label, control);
  form_->addRow(message);
  messages_.insert(field, message);
  return message;
}

void SamplingEditor::setSettings(const ConversationSettings& settings) {
  given_ = settings;
  const kvscope::SamplingParams& s = settings.sampling;
  // One check at the end, not one per control.
  const QSignalBlocker blockers[] = {QSignalBlocker(system_prompt_), QSignalBlocker(temperature_),
                                     QSignalBlocker(top_k_), QSignalBlocker(top_p_),
                                     QSignalBlocker(min_p_), QSignalBlocker(repetition_penalty_),
                                     QSignalBlocker(repeat_last_n_), QSignalBlocker(presence_penalty_),
                                     QSignalBlocker(frequency_penalty_), QSignalBlocker(max_tokens_),
                                     QSignalBlocker(seed_), QSignalBlocker(stop_), QSignalBlocker(n_)};
  system_prompt_->setPlainText(settings.system_prompt);
  temperature_->setValue(s.temperature);
  top_k_->setValue(s.top_k);
  top_p_->setValue(s.top_p);
  min_p_->setValue(s.min_p);
  repetition_penalty_->setValue(s.repetition_penalty);
  repeat_last_n_->setValue(s.repeat_last_n);
  presence_penalty_->setValue(s.presence_penalty);
  frequency_penalty_->setValue(s.frequency_penalty);
  max_tokens_->setValue(s.max_tokens);
  seed_->setText(s.seed == 0 ? QString() : QString::number(static_cast<qulonglong>(s.seed)));
  stop_->setPlainText(stopStringsToText(s.stop));
  n_->setValue(settings.n);
  refreshCountedUnit(max_tokens_);  // set without its valueChanged
  shown_.clear();
  for (const QDoubleSpinBox* box :
       {temperature_, top_p_, min_p_, repetition_penalty_, presence_penalty_, frequency_penalty_})
    shown_.insert(box, box->value());
  revalidate();
}

float SamplingEditor::spinValue(const QDoubleSpinBox* box, float given) const {
  // Untouched boxes return the exact value given, not its rounding to the
  // box's decimals, so that opening and closing a dialog changes nothing.
  return box->value() == shown_.value(box) ? given : static_cast<float>(box->value());
}

ConversationSettings SamplingEditor::settings() const {
  ConversationSettings c = given_;
  kvscope::SamplingParams& s = c.sampling;
  const kvscope::SamplingParams& g = given_.sampling;
  c.system_prompt = system_prompt_->toPlainText();
  s.temperature = spinValue(temperature_, g.temperature);
  s.top_k = top_k_->value();
  s.top_p = spinValue(top_p_, g.top_p);
  s.min_p = spinValue(min_p_, g.min_p);
  s.repetition_penalty = spinValue(repetition_penalty_, g.repetition_penalty);
  s.repeat_last_n = repeat_last_n_->value();
  s.presence_penalty = spinValue(presence_penalty_, g.presence_penalty);
  s.frequency_penalty = spinValue(frequency_penalty_, g.frequency_penalty);
  s.max_tokens = max_tokens_->value();
  s.seed = parseSeed(seed_->text()).value_or(g.seed);
  s.stop = stopStringsFromText(stop_->toPlainText());
  c.n = n_->value();
  return c;
}

void SamplingEditor::revalidate() {
  const bool was_valid = isValid();
  QString field;
  if (!parseSeed(seed_->text())) {
    field = QStringLiteral("seed");
    problem_ = tr("seed must be a whole number from 0 to 18446744073709551615 (0 or empty = random)");
  } else if (const kvscope::Status status = settings().validate(); !status.ok()) {
    field = conversationFieldOf(status.error());
    problem_ = QString::fromStdString(status.error());
  } else {
    problem_.clear();
  }
  for (auto it = messages_.begin(); it != messages_.end(); ++it) {
    const bool here = !problem_.isEmpty() && it.key() == field;
    it.value()->setText(here ? problem_ : QString());
    it.value()->setVisible(here);
  }
  // A message that names no known field still has to be seen: show it last.
  if (!problem_.isEmpty() && !messages_.contains(field)) {
    QLabel* last = messages_.value(QStringLiteral("n"));
    last->setText(problem_);
    last->show();
  }
  emit edited();
  if (was_valid != isValid()) emit validityChanged(isValid());
}

QString SamplingEditor::stopStringsToText(const std::vector<std::string>& stop) {
  QStringList lines;
  for (const std::string& s : stop) {
    QString line;
    for (const QChar c : QString::fromStdString(s)) {
      if (c == QLatin1Char('\\')) line += QStringLiteral("\\\\");
      else if (c == QLatin1Char('\n')) line += QStringLiteral("\\n");
      else if (c == QLatin1Char('\t')) line += QStringLiteral("\\t");
      else line += c;
    }
    lines.append(line);
  }
  return lines.join(QLatin1Char('\n'));
}

std::vector<std::string> SamplingEditor::stopStringsFromText(const QString& text) {
  std::vector<std::string> stop;
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    if (line.isEmpty()) continue;
    QString s;
    for (qsizetype i = 0; i < line.size(); ++i) {
      const QChar next = i + 1 < line.size() ? line[i + 1] : QChar();
      if (line[i] == QLatin1Char('\\') && next == QLatin1Char('n')) { s += QLatin1Char('\n'); ++i; }
      else if (line[i] == QLatin1Char('\\') && next == QLatin1Char('t')) { s += QLatin1Char('\t'); ++i; }
      else if (line[i] == QLatin1Char('\\') && next == QLatin1Char('\\')) { s += QLatin1Char('\\'); ++i; }
      else s += line[i];  // a lone backslash stays as typed
    }
    stop.push_back(s.toStdString());
  }
  return stop;
}

}  // namespace kvscope::ui
