// ServerDialog (Engine > Server…): the Server toggle. Port, API key, allowed
// origins (CORS) and the bind address, which stays 127.0.0.1 (this computer
// only) unless "Let other computers connect" is ticked and an address given;
// Start / Stop; the base URL to give clients (selectable, with a Copy
// button); and a status line: "Serving … on http://127.0.0.1:8080/v1", or
// why it could not start (the port in use). Non-modal: it stays open while
// the app serves. It sends commands as signals and shows what it is told in
// setStatus(); app/gui/window_wiring.cpp connects it to the ServerController.
// The settings are saved (QSettings, group "server") when Start is pressed.
//   tested by tests/ui/server_toggle_test.cpp
#pragma once

#include <QDialog>

#include "server_settings.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace kvscope::ui {

class ServerDialog : public QDialog {
  Q_OBJECT
 public:
  enum class Phase { Off, Waiting, Starting, Serving, Failed };

  // The fields start from the saved settings.
  explicit ServerDialog(QWidget* parent = nullptr);

  ServerSettings settings() const;
  void setSettings(const ServerSettings& settings);
  Phase phase() const { return phase_; }
  QString statusText() const;
  // The base URL shown while serving; empty otherwise.
  QString url() const;
  // "Server: http://127.0.0.1:8080/v1" while serving, a word while not; for the status bar.
  QString summary() const;

 public slots:
  // Saves the settings and asks for the server (startRequested).
  void requestStart();
  void requestStop();
  // What the server is doing; `url` while serving.
  void setStatus(kvscope::ui::ServerDialog::Phase phase, const QString& message, const QString& url = QString());

 signals:
  void startRequested(const kvscope::ui::ServerSettings& settings);
  void stopRequested();
  void summaryChanged(const QString& summary);

 private:
  void updateHostField();

  QSpinBox* port_ = nullptr;
  QCheckBox* other_hosts_ = nullptr;
  QLineEdit* host_ = nullptr;
  QLineEdit* api_key_ = nullptr;
  QLineEdit* origins_ = nullptr;
  QLineEdit* url_ = nullptr;
  QPushButton* copy_ = nullptr;
  QLabel* status_ = nullptr;
  QPushButton* start_ = nullptr;
  QPushButton* stop_ = nullptr;
  Phase phase_ = Phase::Off;
  QString other_host_ = QStringLiteral("0.0.0.0");  // what the host field had when ticked
};

}  // namespace kvscope::ui
