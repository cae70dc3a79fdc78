// connectWindowToEngine: the one place where the main window's commands reach
// the engine worker thread and the worker's results reach the window. Used by
// the app (main.cpp) and by the tests that drive the whole window against a
// real engine, so both run exactly the same wiring.
#pragma once

namespace kvscope::ui {
class MainWindow;
}

namespace kvscope::gui {

class EngineHost;

// Commands: window -> host (queued into the worker thread). Results: worker ->
// window (queued back into the GUI thread). `host` and `window` must outlive
// the connections (they are destroyed with either).
void connectWindowToEngine(kvscope::ui::MainWindow& window, EngineHost& host);

}  // namespace kvscope::gui
