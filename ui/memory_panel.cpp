// MemoryPanel (see memory_panel.h).
#include "memory_panel.h"

#include <algorithm>

#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "block_cell_style.h"
#include "kvscope/kv_plan.h"
#include "models/rank_text.h"
#include "palette_colors.h"
#include "unseen_updates.h"
#include "unit_suffix.h"

namespace kvscope::ui {

namespace {

QString mib(int64_t bytes) { return QStringLiteral("%1 MiB").arg(toMiB(bytes), 0, 'f', 1); }

QString swatch(const QColor& c) {
  return QStringLiteral("<span style='background:%1'>&nbsp;&nbsp;&nbsp;</span>").arg(c.name());
}

}  // namespace

// The breakdown as one horizontal bar, each segment as wide as its bytes.
class MemoryBarWidget : public QWidget {
 public:
  struct Segment {
    QString name;
    QColor color;
    int64_t bytes = 0;
    bool known = true;  // false: the engine did not report it ("—")
  };

  explicit MemoryBarWidget(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(22);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  }
  void setSegments(std::vector<Segment> segments) {
    segments_ = std::move(segments);
    update();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    const QRect area = rect();
    p.fillRect(area, palette().base());
    int64_t total = 0;
    for (const Segment& s : segments_) total += s.bytes;
    if (total > 0) {
      double x = area.left();
      for (const Segment& s : segments_) {
        const double w = area.width() * static_cast<double>(s.bytes) / static_cast<double>(total);
        p.fillRect(QRectF(x, area.top(), w, area.height()), s.color);
        x += w;
      }
    }
    // A one-pixel frame inside the widget: the half-pixel inset keeps the
    // pen's whole width on the widget at any device pixel ratio.
    p.setPen(QPen(palette().color(QPalette::Mid), 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(area).adjusted(0.5, 0.5, -0.5, -0.5));
  }

 private:
  std::vector<Segment> segments_;
};

MemoryPanel::MemoryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(this);
  header_->setObjectName(QStringLiteral("memoryHeader"));
  header_->setWordWrap(true);
  layout->addWidget(header_);
  layout->addWidget(makeBreakdownBox());
  layout->addWidget(makeWhatIfBox());
  layout->addStretch(1);
  clear();
}

QWidget* MemoryPanel::makeBreakdownBox() {
  auto* box = new QGroupBox(tr("Memory now"), this);
  auto* layout = new QVBoxLayout(box);
  bar_ = new MemoryBarWidget(box);
  bar_->setObjectName(QStringLiteral("memoryBar"));
  breakdown_table_ = new QLabel(box);
  breakdown_table_->setTextFormat(Qt::RichText);
  rank_table_ = new QLabel(box);
  rank_table_->setObjectName(QStringLiteral("rankTable"));
  rank_table_->setTextFormat(Qt::RichText);
  rank_table_->setWordWrap(true);
  layout->addWidget(bar_);
  layout->addWidget(breakdown_table_);
  layout->addWidget(rank_table_);
  return box;
}

QWidget* MemoryPanel::makeWhatIfBox() {
  auto* box = new QGroupBox(tr("What if"), this);
  auto* form = new QFormLayout(box);
  const auto spin = [&](const char* name, int lo, int hi, const QString& unit) {
    auto* s = new QSpinBox(box);
    s->setObjectName(QString::fromLatin1(name));
    s->setRange(lo, hi);
    setCountedUnit(s, unit);
    s->setKeyboardTracking(true);  // figures follow every keystroke
    connect(s, &QSpinBox::valueChanged, this, &MemoryPanel::refreshWhatIf);
    return s;
  };
  // The ranges are the setting table's, so no entry is out of range.
  const SettingSpec& block_size = *find_setting("block_size");
  const SettingSpec& budget = *find_setting("kv_budget");
  block_size_ = spin("blockSize", static_cast<int>(block_size.min), static_cast<int>(block_size.max), tr("tokens"));
  budget_mib_ = spin("kvBudgetMiB", static_cast<int>(std::max<int64_t>(budget.min >> 20, 1)),
                     static_cast<int>(std::min<int64_t>(budget.max >> 20, 1 << 24)), tr("MiB"));
  prompt_tokens_ = spin("promptTokens", 1, 1 << 20, tr("tokens"));
  output_tokens_ = spin("outputTokens", 0, 1 << 20, tr("tokens"));
  max_tokens_ = spin("maxTokens", 1, 1 << 20, tr("tokens"));
  block_size_->setAccessibleName(tr("What-if block size"));
  budget_mib_->setAccessibleName(tr("What-if KV budget"));
  prompt_tokens_->setAccessibleName(tr("What-if prompt length"));
  output_tokens_->setAccessibleName(tr("What-if output length"));
  max_tokens_->setAccessibleName(tr("What-if maximum tokens per request"));
  max_tokens_->setToolTip(tr("What the request asks for: contiguous mode reserves prompt + max tokens "
                             "(capped by the max model length) when it admits the request."));
  output_tokens_->setToolTip(tr("What the request really generates: paged mode holds only these blocks."));
  form->addRow(tr("Block size"), block_size_);
  form->addRow(tr("KV budget"), budget_mib_);
  form->addRow(tr("Prompt"), prompt_tokens_);
  form->addRow(tr("Output"), output_tokens_);
  form->addRow(tr("Max tokens"), max_tokens_);
  what_if_text_ = new QLabel(box);
  what_if_text_->setObjectName(QStringLiteral("whatIfText"));
  what_if_text_->setTextFormat(Qt::RichText);
  what_if_text_->setWordWrap(true);
  form->addRow(what_if_text_);
  apply_ = new QPushButton(tr("Apply to engine"), box);
  apply_->setObjectName(QStringLiteral("applyToEngine"));
  apply_->setToolTip(tr("Restart the engine with this block size and KV budget"));
  connect(apply_, &QPushButton::clicked, this, [this] { emit applyRequested(whatIfConfig()); });
  form->addRow(apply_);
  return box;
}

void MemoryPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    // The bar, the table's swatches and the error text hold palette colours.
    refreshBreakdown();
    refreshWhatIf();
  }
}

void MemoryPanel::clear() {
  has_model_ = false;
  info_ = {};
  config_ = {};
  snapshot_.reset();
  breakdown_ = {};
  header_->setText(tr("No model loaded"));
  for (QSpinBox* s : {block_size_, budget_mib_, prompt_tokens_, output_tokens_, max_tokens_}) s->setEnabled(false);
  refreshBreakdown();
  refreshWhatIf();
}

void MemoryPanel::setModel(const ModelInfo& info, const EngineConfig& config) {
  has_model_ = true;
  info_ = info;
  config_ = config;
  snapshot_.reset();
  breakdown_ = memoryBreakdown(info, config);
  // The backend line names the device the engine resolved (backend = auto
  // says why in the tooltip: e.g. a build without CUDA).
  QString device = info.device_name.empty() ? tr("CPU") : QString::fromStdString(info.device_name);
  QString tooltip = QString::fromStdString(info.backend_reason);
  if (info.device_total_bytes > 0) {
    // On a GPU the weights, pool and workspace below are device memory.
    tooltip += tr("\nGPU memory: %1 MiB free for kvscope of %2 MiB when the pool was planned; the weights, "
                  "the KV pool and the workspace shown here live there, the swap space in host memory.")
                   .arg(info.device_free_bytes >> 20)
                   .arg(info.device_total_bytes >> 20);
    device += tr(" (%1 of %2 GiB)")
                  .arg(static_cast<double>(info.weight_bytes + info.kv_pool_bytes + info.workspace_bytes) /
                           double(1 << 30), 0, 'f', 2)
                  .arg(static_cast<double>(info.device_total_bytes) / double(1 << 30), 0, 'f', 1);
  }
  header_->setToolTip(tooltip);
  header_->setText(tr("<b>%1</b> · backend: %6 · %2 KV blocks of %3 tokens · %4 KiB of %5 K/V per token")
                       .arg(QString::fromStdString(info.name).toHtmlEscaped())
                       .arg(info.num_kv_blocks)
                       .arg(info.block_size)
                       .arg(static_cast<double>(info.kv_bytes_per_token) / 1024.0, 0, 'f', 1)
                       .arg(QLatin1String(kv_cache_type_name(config.kv_cache_type)))
                       .arg(device.toHtmlEscaped()));
  const QSignalBlocker b1(block_size_), b2(budget_mib_), b3(prompt_tokens_), b4(output_tokens_), b5(max_tokens_);
  for (QSpinBox* s : {block_size_, budget_mib_, prompt_tokens_, output_tokens_, max_tokens_}) s->setEnabled(true);
  block_size_->setValue(info.block_size > 0 ? info.block_size : config.block_size);
  // A pool sized by block count has no budget of its own: start from its size.
  const int64_t budget = config.num_blocks > 0 ? breakdown_.kv_pool_bytes : config.kv_budget_bytes;
  budget_mib_->setValue(static_cast<int>(std::clamp<int64_t>(budget >> 20, 1, budget_mib_->maximum())));
  prompt_tokens_->setValue(256);
  output_tokens_->setValue(128);
  max_tokens_->setValue(512);
  for (QSpinBox* s : {block_size_, prompt_tokens_, output_tokens_, max_tokens_}) refreshCountedUnit(s);  // no valueChanged came
  refreshBreakdown();
  refreshWhatIf();
}

void MemoryPanel::setSnapshot(const SnapshotPtr& snapshot) {
  if (!has_model_) return;
  snapshot_ = snapshot;
  updateWhenSeen(this, [this] { refreshBreakdown(); });
}

void MemoryPanel::refreshBreakdown() {
  using Segment = MemoryBarWidget::Segment;
  const MemoryBreakdown& m = breakdown_;
  // KV free and cached-free as in the block map, so the two views agree and
  // the free segment does not glare on a dark theme.
  const CellPalette cells = CellPalette::fromPalette(palette());
  std::vector<Segment> segments;
  segments.push_back({tr("Weights"), QColor(90, 110, 160), m.weight_bytes, m.weight_bytes > 0});
  if (snapshot_ && m.kv_pool_bytes > 0) {
    const KvSplit kv = kvSplit(snapshot_->kv, m.kv_pool_bytes);
    segments.push_back({tr("KV used"), QColor(60, 150, 90), kv.used_bytes});
    segments.push_back({tr("KV cached-free"), cells.cached_free, kv.cached_free_bytes});
    segments.push_back({tr("KV free"), cells.free, kv.free_bytes});
  } else {
    segments.push_back({tr("KV pool (no step yet)"), QColor(180, 200, 180), m.kv_pool_bytes, m.kv_pool_bytes > 0});
  }
  segments.push_back({tr("Workspace"), QColor(220, 160, 70), m.workspace_bytes, m.workspace_bytes > 0});
  if (m.swap_enabled) {
    segments.push_back({tr("Swap (host)"), QColor(190, 90, 90), m.swap_bytes, m.swap_bytes > 0});
  }
  bar_->setSegments(has_model_ ? segments : std::vector<Segment>{});

  QString rows;
  for (const Segment& s : segments) {
    rows += QStringLiteral("<tr><td>%1 %2</td><td align=right>%3</td></tr>")
                .arg(swatch(s.color), s.name, has_model_ && s.known ? mib(s.bytes) : QStringLiteral("—"));
  }
  if (!m.swap_enabled) {
    rows += QStringLiteral("<tr><td>%1</td><td align=right>%2</td></tr>").arg(tr("Swap"), tr("none (recompute)"));
  }
  rows += QStringLiteral("<tr><td><b>%1</b></td><td align=right><b>%2</b></td></tr>")
              .arg(tr("Total"), has_model_ ? mib(m.total_bytes()) : QStringLiteral("—"));
  QString note;
  if (m.kv_pool_derived) note = tr("<br><i>KV pool not reported by the engine: computed from its blocks.</i>");
  if (snapshot_) {
    note += tr("<br>KV waste (reserved but unwritten): %1 %").arg(snapshot_->kv.waste_percent(), 0, 'f', 1);
  }
  if (has_model_ && m.workspace_bytes > 0 && info_.vocab_size > 0) {
    // What the workspace holds, so that a setting that moves it is seen to:
    // speculation multiplies the logits rows (60 -> 108 MiB went unexplained).
    const int64_t sampled = max_logits_rows(config_);
    const int64_t scored = max_scored_rows(config_, info_.vocab_size);
    const QString why = config_.spec != SpecMethod::Off
                            ? tr("%1 sequences × (1 + %2 draft tokens)").arg(config_.max_seqs).arg(config_.spec_k)
                            : tr("one per sequence");
    note += tr("<br>Workspace: activations for %1 tokens a step, and %2 of logits: %3 rows to sample from (%4) "
               "and %5 for scoring prompts")
                .arg(config_.max_batched_tokens)
                .arg(mib(logits_buffer_floats(config_, info_.vocab_size) * static_cast<int64_t>(sizeof(float))))
                .arg(sampled)
                .arg(why)
                .arg(scored);
  }
  breakdown_table_->setText(QStringLiteral("<table cellspacing=2>%1</table>%2").arg(rows, note));
  // Per rank: the snapshot's figures follow a reconfigure; before any, the model's.
  const QString ranks = has_model_ ? rankTableHtml(snapshot_ && !snapshot_->tensor_parallel.ranks.empty()
                                                       ? snapshot_->tensor_parallel
                                                       : info_.tensor_parallel)
                                   : QString();
  rank_table_->setText(ranks);
  rank_table_->setVisible(!ranks.isEmpty());
}

EngineConfig MemoryPanel::whatIfConfig() const {
  EngineConfig c = config_;
  c.block_size = block_size_->value();
  c.kv_budget_bytes = int64_t{budget_mib_->value()} << 20;
  c.num_blocks = 0;  // a block count would override the budget
  return c;
}

void MemoryPanel::refreshWhatIf() {
  WhatIfInput in;
  in.model = model_shape(info_);
  in.config = whatIfConfig();
  in.machine_memory_bytes = physical_memory_bytes();
  in.prompt_tokens = prompt_tokens_->value();
  in.output_tokens = output_tokens_->value();
  in.max_tokens = max_tokens_->value();
  what_if_ = has_model_ ? estimateWhatIf(in) : WhatIfResult{};
  apply_->setEnabled(has_model_ && what_if_.ok());
  if (!has_model_) {
    what_if_text_->setText(QString());
    return;
  }
  if (!what_if_.ok()) {
    what_if_text_->setText(QStringLiteral("<span style='color:%1'>%2</span>")
                               .arg(errorTextColor(palette()).name(),
                                    QString::fromStdString(what_if_.error).toHtmlEscaped()));
    return;
  }
  const WhatIfResult& r = what_if_;
  const auto waste = [](int64_t num_slots, double percent) {
    return QStringLiteral("%1 (%2 %)").arg(num_slots).arg(percent, 0, 'f', 1);
  };
  what_if_text_->setText(
      tr("Pool: <b>%1</b> blocks · %2 tokens · %3 KiB per block<br>"
         "A request of %4 tokens (contiguous reserves %5):"
         "<table cellspacing=4><tr><td></td><th>paged</th><th>contiguous</th></tr>"
         "<tr><td>blocks each</td><td align=right>%6</td><td align=right>%7</td></tr>"
         "<tr><td>at once</td><td align=right><b>%8</b></td><td align=right><b>%9</b></td></tr>"
         "<tr><td>unwritten slots each</td><td align=right>%10</td><td align=right>%11</td></tr></table>"
         "<i>Contiguous is a best case: each request needs one run of free consecutive blocks.</i>")
          .arg(r.num_blocks)
          .arg(r.token_capacity)
          .arg(static_cast<double>(r.bytes_per_block) / 1024.0, 0, 'f', 1)
          .arg(r.seq_tokens)
          .arg(r.contiguous_reserved_tokens)
          .arg(r.paged_blocks_per_seq)
          .arg(r.contiguous_blocks_per_seq)
          .arg(r.num_paged_seqs)
          .arg(r.num_contiguous_seqs)
          .arg(waste(r.paged_waste_slots, r.paged_waste_percent))
          .arg(waste(r.contiguous_waste_slots, r.contiguous_waste_percent)));
}

}  // namespace kvscope::ui
