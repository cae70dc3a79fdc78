// TracePanel (see trace_panel.h).
#include "trace_panel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QComboBox>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTableView>
#include <QVBoxLayout>

#include "kvscope/chrome_trace.h"
#include "models/counted_text.h"
#include "models/trace_event_model.h"
#include "palette_colors.h"
#include "rank_lanes_plot.h"
#include "trace_plot.h"

namespace kvscope::ui {

namespace {

constexpr int kPlayIntervalMs = 33;  // ~30 frames a second
const QString kTraceFilter = QStringLiteral("Chrome trace (*.json);;All files (*)");

QPushButton* makeButton(QWidget* parent, const char* object_name, const QString& text, const QString& accessible,
                        const QString& tip) {
  auto* button = new QPushButton(text, parent);
  button->setObjectName(QLatin1String(object_name));
  button->setAccessibleName(accessible);
  button->setToolTip(tip);
  return button;
}

}  // namespace

TracePanel::TracePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);

  auto* controls = new QHBoxLayout;
  record_ = makeButton(this, "traceRecord", tr("Record"), tr("Record engine events"),
                       tr("Record what the engine does (admissions, steps, cache hits, preemptions, ...)"));
  record_->setCheckable(true);
  clear_ = makeButton(this, "traceClear", tr("Clear"), tr("Clear trace"), tr("Forget the trace shown"));
  save_ = makeButton(this, "traceSave", tr("Save…"), tr("Save trace"), tr("Save as a Chrome trace (opens in ui.perfetto.dev)"));
  open_ = makeButton(this, "traceOpen", tr("Open…"), tr("Open trace"), tr("Open a trace saved by kvscope and replay it"));
  source_ = new QLabel(this);
  source_->setObjectName(QStringLiteral("traceSource"));
  source_->setAccessibleName(tr("Trace source"));
  for (QWidget* w : {static_cast<QWidget*>(record_), static_cast<QWidget*>(clear_), static_cast<QWidget*>(save_),
                     static_cast<QWidget*>(open_)})
    controls->addWidget(w);
  controls->addWidget(source_, 1);
  layout->addLayout(controls);

  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("traceMessage"));
  message_->setAccessibleName(tr("Trace message"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();
  layout->addWidget(message_);

  plot_ = new TracePlot(this);
  plot_->setObjectName(QStringLiteral("tracePlot"));
  plot_->setAccessibleName(tr("Batch tokens and KV blocks over the trace"));
  plot_->setTimeline(&timeline_);
  connect(plot_, &TracePlot::timeClicked, this, &TracePanel::setCursorTime);
  layout->addWidget(plot_, 2);

  rank_lanes_ = new RankLanesPlot(this);
  rank_lanes_->setObjectName(QStringLiteral("traceRankLanes"));
  rank_lanes_->setAccessibleName(tr("Each tensor-parallel rank's forward pass in the step at the slider's time"));
  rank_lanes_->setTimeline(&timeline_);
  layout->addWidget(rank_lanes_, 1);

  auto* replay = new QHBoxLayout;
  play_ = makeButton(this, "tracePlay", tr("Play"), tr("Play or pause the replay"), tr("Replay the trace from the slider's time"));
  play_->setCheckable(true);
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("traceSlider"));
  slider_->setAccessibleName(tr("Trace time"));
  slider_->setRange(0, 0);
  speed_ = new QComboBox(this);
  speed_->setObjectName(QStringLiteral("traceSpeed"));
  speed_->setAccessibleName(tr("Replay speed"));
  for (double speed : {0.25, 0.5, 1.0, 2.0, 4.0, 8.0}) speed_->addItem(QStringLiteral("%1×").arg(speed), speed);
  speed_->setCurrentIndex(2);
  time_label_ = new QLabel(this);
  time_label_->setAccessibleName(tr("Time at the slider"));
  time_label_->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("0000.000 / 0000.000 s")));
  replay->addWidget(play_);
  replay->addWidget(slider_, 1);
  replay->addWidget(time_label_);
  replay->addWidget(speed_);
  layout->addLayout(replay);

  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("traceSummary"));
  summary_->setAccessibleName(tr("State at the slider's time"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);

  events_model_ = new TraceEventModel(this);
  events_model_->setTimeline(&timeline_);
  table_ = new QTableView(this);
  table_->setObjectName(QStringLiteral("traceEvents"));
  table_->setAccessibleName(tr("Engine events around the slider's time"));
  table_->setModel(events_model_);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setWordWrap(false);
  layout->addWidget(table_, 3);

  connect(record_, &QPushButton::toggled, this, &TracePanel::onRecordToggled);
  connect(clear_, &QPushButton::clicked, this, &TracePanel::clear);
  connect(save_, &QPushButton::clicked, this, &TracePanel::chooseSaveFile);
  connect(open_, &QPushButton::clicked, this, &TracePanel::chooseOpenFile);
  connect(play_, &QPushButton::toggled, this, &TracePanel::onPlayToggled);
  connect(slider_, &QSlider::valueChanged, this, &TracePanel::onSliderValueChanged);
  connect(&play_timer_, &QTimer::timeout, this, &TracePanel::onPlayTick);
  play_timer_.setInterval(kPlayIntervalMs);

  source_->setText(tr("Live"));
  updateRange();
  updateCursorViews();
}

bool TracePanel::isRecording() const { return record_->isChecked(); }

QString TracePanel::messageText() const { return message_->isHidden() ? QString() : message_->text(); }

void TracePanel::setRecording(bool on) { record_->setChecked(on); }

void TracePanel::onRecordToggled(bool on) {
  // Recording after a file was opened starts a new live trace.
  if (on && showing_file_) clear();
  record_->setText(on ? tr("Recording") : tr("Record"));
  summary_->setText(summaryText());  // an empty trace says whether it is recording
  emit recordingChanged(on);
}

void TracePanel::showMessage(const QString& text, bool error) {
  message_is_error_ = error;
  message_->setText(text);
  // Only the text role is set (a style sheet would replace the style's look),
  // the rest is inherited; an empty palette gives the label back its parent's.
  QPalette pal;
  if (error) pal.setColor(QPalette::WindowText, errorTextColor(palette()));
  message_->setPalette(pal);
  message_->setVisible(!text.isEmpty());
}

void TracePanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  // The message label holds a palette of its own (see showMessage), which
  // a theme change would not reach.
  if (event->type() == QEvent::PaletteChange) showMessage(message_->text(), message_is_error_);
}

void TracePanel::appendEvents(const EventBatch& events) {
  if (showing_file_ || events.empty()) return;
  timeline_.append(events);
  plot_->appendNewData();
  rank_lanes_->appendNewData();
  updateRange();
  if (follow_end_) cursor_time_ = timeline_.end_time();
  updateCursorViews();
}

void TracePanel::clear() {
  play_->setChecked(false);
  timeline_.clear();
  showing_file_ = false;
  follow_end_ = true;
  cursor_time_ = 0.0;
  events_model_->setTimeline(&timeline_);
  source_->setText(tr("Live"));
  showMessage({}, false);
  plot_->setTimeline(&timeline_);
  rank_lanes_->setTimeline(&timeline_);
  updateRange();
  updateCursorViews();
}

bool TracePanel::saveTraceFile(const QString& path) {
  if (timeline_.empty()) {
    showMessage(tr("Nothing to save yet: press Record and run some requests, or open a trace."), true);
    return false;
  }
  const Status status = write_chrome_trace(timeline_.events(), QFile::encodeName(path).toStdString());
  if (!status.ok()) {
    showMessage(tr("Could not save the trace: %1").arg(QString::fromStdString(status.error())), true);
    return false;
  }
  showMessage(tr("Saved %1 events to %2 (opens in ui.perfetto.dev).").arg(timeline_.num_events()).arg(path), false);
  return true;
}

bool TracePanel::loadTraceFile(const QString& path) {
  Result<std::vector<EngineEvent>> events = read_chrome_trace(QFile::encodeName(path).toStdString());
  if (!events.ok()) {
    showMessage(tr("Could not open the trace: %1").arg(QString::fromStdString(events.error())), true);
    return false;
  }
  setRecording(false);  // the live session is replaced by the file
  play_->setChecked(false);
  timeline_ = TraceTimeline(*events);
  showing_file_ = true;
  follow_end_ = false;
  cursor_time_ = timeline_.start_time();
  events_model_->setTimeline(&timeline_);
  source_->setText(tr("Replaying %1").arg(QFileInfo(path).fileName()));
  showMessage(tr("Opened %1: %2, %3, %4.")
                  .arg(path)
                  .arg(counted(static_cast<qint64>(timeline_.num_events()), tr("event"), tr("events")))
                  .arg(counted(static_cast<qint64>(timeline_.steps().size()), tr("step"), tr("steps")))
                  .arg(counted(static_cast<qint64>(timeline_.requests().size()), tr("request"), tr("requests"))),
              false);
  plot_->setTimeline(&timeline_);
  rank_lanes_->setTimeline(&timeline_);
  updateRange();
  updateCursorViews();
  return true;
}

void TracePanel::chooseSaveFile() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save trace"), QStringLiteral("kvscope-trace.json"), kTraceFilter);
  if (!path.isEmpty()) saveTraceFile(path);
}

void TracePanel::chooseOpenFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open trace"), QString(), kTraceFilter);
  if (!path.isEmpty()) loadTraceFile(path);
}

void TracePanel::setCursorTime(double t) {
  cursor_time_ = std::clamp(t, timeline_.start_time(), timeline_.end_time());
  follow_end_ = false;
  updateCursorViews();
}

int TracePanel::sliderValueAt(double t) const {
  const double units = std::round((t - timeline_.start_time()) * slider_units_per_s_);
  return static_cast<int>(std::clamp(units, 0.0, static_cast<double>(slider_->maximum())));
}

double TracePanel::timeAtSliderValue(int value) const {
  // The last position is the very end, so that it shows every event.
  if (value >= slider_->maximum()) return timeline_.end_time();
  return timeline_.start_time() + value / slider_units_per_s_;
}

void TracePanel::onSliderValueChanged(int value) {
  if (setting_slider_) return;
  cursor_time_ = timeAtSliderValue(value);
  follow_end_ = !showing_file_ && value >= slider_->maximum();
  updateCursorViews();
}

void TracePanel::onPlayToggled(bool on) {
  play_->setText(on ? tr("Pause") : tr("Play"));
  if (!on) {
    play_timer_.stop();
    return;
  }
  if (timeline_.empty()) {
    play_->setChecked(false);
    return;
  }
  if (cursor_time_ >= timeline_.end_time()) cursor_time_ = timeline_.start_time();  // from the top
  follow_end_ = false;
  play_clock_.start();
  play_timer_.start();
}

void TracePanel::onPlayTick() {
  const double speed = speed_->currentData().toDouble();
  cursor_time_ += play_clock_.restart() / 1e3 * speed;
  if (cursor_time_ >= timeline_.end_time()) {
    cursor_time_ = timeline_.end_time();
    play_->setChecked(false);
    follow_end_ = !showing_file_;  // at the live end again: keep following it
  }
  updateCursorViews();
}

void TracePanel::updateRange() {
  // Slider units are microseconds since the trace began (a step of a small
  // model takes a few milliseconds), fewer per second when that would not fit
  // in an int (traces over 35 minutes). Arrow keys move a thousandth of it.
  const double duration = timeline_.end_time() - timeline_.start_time();
  const double max_int = static_cast<double>(std::numeric_limits<int>::max());
  slider_units_per_s_ = duration * 1e6 <= max_int ? 1e6 : max_int / duration;
  // The nudge keeps a rounding error in the duration from adding a unit.
  const double max_units = std::min(std::ceil(duration * slider_units_per_s_ - 1e-3), max_int);
  setting_slider_ = true;
  slider_->setRange(0, static_cast<int>(max_units));
  slider_->setSingleStep(std::max(1, static_cast<int>(max_units / 1000)));
  slider_->setPageStep(std::max(1, static_cast<int>(max_units / 20)));
  setting_slider_ = false;
  const bool has_trace = !timeline_.empty();
  save_->setEnabled(has_trace);
  clear_->setEnabled(has_trace);
  play_->setEnabled(has_trace);
  slider_->setEnabled(has_trace);
  rank_lanes_->setVisible(timeline_.num_ranks() > 0);  // only a tensor-parallel trace has ranks
}

QString TracePanel::summaryText() const {
  if (timeline_.empty()) {
    // Recording (after Clear, say): pressing Record again would stop it.
    return isRecording() ? tr("Recording: the events of the requests that run from now on appear here.")
                         : tr("No trace: press Record and run some requests, or open a saved trace.");
  }
  const double t = cursor_time_;
  QStringList parts;
  if (const auto step = timeline_.step_at(t)) {
    const TraceStep& s = timeline_.steps()[*step];
    parts << (s.ended ? tr("step %1 (%2, %3, %4 ms)")
                            .arg(s.step)
                            .arg(counted(s.num_tokens, tr("token"), tr("tokens")))
                            .arg(counted(s.num_seqs, tr("seq"), tr("seqs")))
                            .arg(s.duration_s() * 1e3, 0, 'f', 2)
                      : tr("step %1 (running)").arg(s.step));
  } else {
    parts << tr("before the first step");
  }
  parts << tr("%1 active").arg(counted(static_cast<qint64>(timeline_.requests_active_at(t).size()), tr("request"),
                                       tr("requests")));
  if (const auto kv = timeline_.kv_usage_at(t)) {
    parts << tr("KV %1 used, %2 cached-free blocks").arg(kv->num_used_blocks).arg(kv->num_cached_free_blocks);
  }
  const TraceCounts c = timeline_.counts_at(t);
  parts << tr("preemptions %1").arg(c.num_preemptions) << tr("cache hits %1").arg(c.num_cache_hits)
        << tr("copy-on-writes %1").arg(c.num_copy_on_writes) << tr("evicted blocks %1").arg(c.num_evicted_blocks)
        << tr("swaps out/in %1/%2").arg(c.num_swap_outs).arg(c.num_swap_ins);
  return parts.join(QStringLiteral(" · "));
}

void TracePanel::updateCursorViews() {
  const double start = timeline_.start_time();
  setting_slider_ = true;
  slider_->setValue(sliderValueAt(cursor_time_));
  setting_slider_ = false;
  time_label_->setText(tr("%1 / %2 s")
                           .arg(cursor_time_ - start, 0, 'f', 3)
                           .arg(timeline_.end_time() - start, 0, 'f', 3));
  plot_->setCursorTime(cursor_time_);
  rank_lanes_->setCursorTime(cursor_time_);
  summary_->setText(summaryText());
  events_model_->setTime(cursor_time_);
  if (const int row = events_model_->currentRow(); row >= 0)
    table_->scrollTo(events_model_->index(row, 0), QAbstractItemView::PositionAtCenter);
}

}  // namespace kvscope::ui
