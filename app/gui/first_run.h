// The first run without the default model: ui::FirstRunDialog (the view)
// wired to a ModelFetchJob (the download, off the GUI thread).
#pragma once

#include <QString>

#include "kvscope/engine_config.h"

namespace kvscope::ui {
class FirstRunDialog;
class MainWindow;
}  // namespace kvscope::ui

namespace kvscope::gui {

class ModelFetchJob;

// Download / Cancel in the dialog drive the job; the job's progress, end and
// errors drive the dialog.
void connectFirstRunDialog(kvscope::ui::FirstRunDialog& dialog, ModelFetchJob& job);

// Opens the first-run dialog over `window` (not blocking the event loop):
// once the default model is installed in `model_dir` it is loaded with
// `config` (the start-up engine settings); "Open model…" opens the window's
// file dialog.
void offerDefaultModel(kvscope::ui::MainWindow& window, const kvscope::EngineConfig& config, const QString& model_dir);

}  // namespace kvscope::gui
