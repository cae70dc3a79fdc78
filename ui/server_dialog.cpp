// ServerDialog (see server_dialog.h).
#include "server_dialog.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

namespace kvscope::ui {

ServerDialog::ServerDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Server"));
  setObjectName(QStringLiteral("serverDialog"));
  // Each path on one line: word wrap breaks at a slash ("/v1/" above
  // "completions"), and Qt's rich text ignores white-space:nowrap on a span;
  // a word joiner (U+2060) on each side of a slash forbids the break.
  const auto path = [](const char* p) {
    return QString::fromLatin1(p).replace(QLatin1Char('/'), QStringLiteral("\u2060/\u2060"));
  };
  auto* intro = new QLabel(tr("Serve the loaded model over an OpenAI-compatible API (%1, %2, %3, %4). Its requests "
                              "join the chat's batch: the block map, plots and trace show them, and the Sequences "
                              "table tags them <i>server</i>.")
                               .arg(path("/v1/chat/completions"), path("/v1/completions"), path("/v1/models"),
                                    path("/health")),
                           this);
  intro->setWordWrap(true);

  port_ = new QSpinBox(this);
  port_->setObjectName(QStringLiteral("serverPort"));
  port_->setRange(0, 65535);
  port_->setSpecialValueText(tr("any free port"));
  port_->setAccessibleName(tr("Port"));
  other_hosts_ = new QCheckBox(tr("Let other computers connect (listen on another address)"), this);
  other_hosts_->setObjectName(QStringLiteral("serverOtherHosts"));
  host_ = new QLineEdit(this);
  host_->setObjectName(QStringLiteral("serverHost"));
  host_->setAccessibleName(tr("Address to listen on"));
  // Two short lines, not word wrap: a wrapped label in a form row gets a height for a narrower width.
  auto* host_note = new QLabel(tr("Unticked: 127.0.0.1, only this computer can reach the server.\n"
                                  "Ticked: the address given (0.0.0.0: every interface); then set an API key."),
                               this);
  host_note->setEnabled(false);  // greyed: a note, not a control
  connect(other_hosts_, &QCheckBox::toggled, this, [this](bool on) {
    if (!on && host_->text().trimmed() != kLoopbackHost && !host_->text().trimmed().isEmpty())
      other_host_ = host_->text().trimmed();
    updateHostField();
  });
  api_key_ = new QLineEdit(this);
  api_key_->setObjectName(QStringLiteral("serverApiKey"));
  api_key_->setEchoMode(QLineEdit::PasswordEchoOnEdit);
  api_key_->setPlaceholderText(tr("none: no key needed"));
  api_key_->setToolTip(tr("Clients send it as 'Authorization: Bearer KEY' (not needed for /health). "
                          "Saved with the app's settings, in plain text."));
  api_key_->setAccessibleName(tr("API key"));
  origins_ = new QLineEdit(this);
  origins_->setObjectName(QStringLiteral("serverOrigins"));
  origins_->setPlaceholderText(tr("none: web pages cannot call the server"));
  origins_->setToolTip(tr("Origins whose web pages may call the server (CORS), separated by commas, e.g. "
                          "http://localhost:3000; * allows any web page."));
  origins_->setAccessibleName(tr("Allowed origins"));

  url_ = new QLineEdit(this);
  url_->setObjectName(QStringLiteral("serverUrl"));
  url_->setReadOnly(true);
  url_->setPlaceholderText(tr("not serving"));
  url_->setAccessibleName(tr("Base URL"));
  copy_ = new QPushButton(tr("Copy"), this);
  copy_->setToolTip(tr("Copy the base URL to give OpenAI clients"));
  connect(copy_, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(url_->text()); });
  auto* url_row = new QHBoxLayout;
  url_row->addWidget(url_, 1);
  url_row->addWidget(copy_);

  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("serverStatus"));
  status_->setWordWrap(true);
  // Room for two lines from the start: a message that wrapped to a second
  // line moved the buttons down under the pointer (a second click on Start
  // after "port in use" missed it).
  status_->setMinimumHeight(2 * status_->fontMetrics().lineSpacing());
  status_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  start_ = new QPushButton(tr("Start"), this);
  start_->setObjectName(QStringLiteral("serverStart"));
  stop_ = new QPushButton(tr("Stop"), this);
  stop_->setObjectName(QStringLiteral("serverStop"));
  connect(start_, &QPushButton::clicked, this, &ServerDialog::requestStart);
  connect(stop_, &QPushButton::clicked, this, &ServerDialog::requestStop);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  buttons->addButton(start_, QDialogButtonBox::ActionRole);
  buttons->addButton(stop_, QDialogButtonBox::ActionRole);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::hide);

  auto* form = new QFormLayout;
  form->addRow(tr("Port:"), port_);
  form->addRow(tr("Address:"), host_);
  auto* host_choice = new QVBoxLayout;  // the box and its note together: a form row each spaces them apart
  host_choice->setSpacing(2);
  host_choice->addWidget(other_hosts_);
  host_choice->addWidget(host_note);
  form->addRow(QString(), host_choice);
  form->addRow(tr("API key:"), api_key_);
  form->addRow(tr("Allowed origins:"), origins_);
  form->addRow(tr("Base URL:"), url_row);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addLayout(form);
  layout->addWidget(status_);
  layout->addWidget(buttons);
  setMinimumWidth(560);

  QSettings saved;
  setSettings(loadServerSettings(saved));
  setStatus(Phase::Off, tr("Not serving."));
}

ServerSettings ServerDialog::settings() const {
  ServerSettings s;
  s.port = port_->value();
  const QString host = host_->text().trimmed();
  s.host = other_hosts_->isChecked() && !host.isEmpty() ? host : kLoopbackHost;
  s.api_key = api_key_->text();
  s.allowed_origins = parseAllowedOrigins(origins_->text());
  return s;
}

void ServerDialog::setSettings(const ServerSettings& settings) {
  port_->setValue(settings.port);
  if (!settings.loopbackOnly()) other_host_ = settings.host;
  other_hosts_->setChecked(!settings.loopbackOnly());
  updateHostField();
  api_key_->setText(settings.api_key);
  origins_->setText(settings.allowed_origins.join(QStringLiteral(", ")));
}

void ServerDialog::updateHostField() {
  const bool other = other_hosts_->isChecked();
  host_->setEnabled(other);
  host_->setText(other ? other_host_ : kLoopbackHost);
}

void ServerDialog::requestStart() {
  const ServerSettings s = settings();
  QSettings saved;
  saveServerSettings(saved, s);
  emit startRequested(s);
}

void ServerDialog::requestStop() { emit stopRequested(); }

QString ServerDialog::statusText() const { return status_->text(); }

QString ServerDialog::url() const { return url_->text(); }

QString ServerDialog::summary() const {
  switch (phase_) {
    case Phase::Serving: return tr("Server: %1").arg(url_->text());
    case Phase::Starting: return tr("Server: starting…");
    case Phase::Waiting: return tr("Server: waiting for the engine");
    case Phase::Failed: return tr("Server: not started");
    case Phase::Off: break;
  }
  return QString();
}

void ServerDialog::setStatus(Phase phase, const QString& message, const QString& url) {
  phase_ = phase;
  const bool failed = phase == Phase::Failed;
  status_->setText(message);
  // The error in the palette's warning colour would need a theme lookup; bold says it plainly.
  QFont font = status_->font();
  font.setBold(failed);
  status_->setFont(font);
  // A longer message (an error over two lines) needs more height than the
  // dialog was shown with; without it the form's rows overlap.
  if (isVisible() && layout()) {
    const int needed = layout()->totalHeightForWidth(width());
    if (needed > height()) resize(width(), needed);
  }
  url_->setText(phase == Phase::Serving ? url : QString());
  copy_->setEnabled(phase == Phase::Serving);
  const bool running = phase == Phase::Serving || phase == Phase::Starting || phase == Phase::Waiting;
  start_->setText(running ? tr("Restart") : tr("Start"));
  stop_->setEnabled(running);
  emit summaryChanged(summary());
}

}  // namespace kvscope::ui
