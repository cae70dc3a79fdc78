// Which model the desktop app opens when it starts, and what to say when it
// cannot: --model, else the model a --settings file names, else the model
// opened last, else the default model. A model is a GGUF file or a Hugging
// Face model folder; whether it loads is the engine's to say, so only a path
// with nothing there counts as missing here.
#pragma once

#include <QString>

namespace kvscope::gui {

struct StartupModel {
  enum class Source { CommandLine, SettingsFile, LastOpened, Default };
  QString path;
  Source source = Source::Default;
  bool exists = false;  // a file or a folder is at `path`
  // Set when the model opened last is gone and the default replaces it: for
  // the terminal and the status bar.
  QString note;
};

// command_line: --model's value; settings_file_model: the model_path of the
// --settings file (relative paths already resolved); last_opened: the saved
// settings' model (empty with --settings, whose run starts from the file
// alone); each empty when not given.
StartupModel chooseStartupModel(const QString& command_line, const QString& settings_file_model,
                                const QString& last_opened, const QString& default_model);

// The load-failure text for a model that is not there, naming where its path
// came from (settings_file: the --settings file, for Source::SettingsFile).
QString missingModelMessage(const StartupModel& model, const QString& settings_file);

}  // namespace kvscope::gui
