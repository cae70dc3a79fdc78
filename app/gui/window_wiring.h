// connectWindowToEngine: the one place where the main window's commands reach
// the engine worker thread and the worker's results reach the window. Used by
// the app (main.cpp) and by the tests that drive the whole window against a
// real engine, so both run exactly the same wiring.
#pragma once

namespace kvscope::ui {
class InvariancePanel;
class MainWindow;
}

namespace kvscope::gui {

class EngineHost;
class InvarianceRunner;
class ServerController;

// Commands: window -> host (queued into the worker thread). Results: worker ->
// window (queued back into the GUI thread). `host` and `window` must outlive
// the connections (they are destroyed with either).
// Also connects the Server dialog to the host's server (connectServerDialog),
// and gives the window's Invariance panel a runner of its own (a child of
// `host`, so its checks are cancelled and joined when the host goes).
void connectWindowToEngine(kvscope::ui::MainWindow& window, EngineHost& host);

// The panel's run / cancel reach the runner; its progress and results reach
// the panel (both live in the GUI thread; the checks run in the runner's).
void connectInvariancePanel(kvscope::ui::InvariancePanel& panel, InvarianceRunner& runner);

// Engine > Server…: the dialog's Start / Stop reach the app's server and its
// state comes back to the dialog (and the status bar); the server's requests
// are tagged in the Sequences table. Part of connectWindowToEngine.
void connectServerDialog(kvscope::ui::MainWindow& window, ServerController& server);

}  // namespace kvscope::gui
