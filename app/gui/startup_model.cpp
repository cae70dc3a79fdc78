// Choosing the model at start (see startup_model.h).
#include "startup_model.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace kvscope::gui {
namespace {

bool somethingAt(const QString& path) {
  const QFileInfo info(path);
  return !path.isEmpty() && (info.isFile() || info.isDir());
}

QString tr(const char* text) { return QCoreApplication::translate("StartupModel", text); }

}  // namespace

StartupModel chooseStartupModel(const QString& command_line, const QString& settings_file_model,
                                const QString& last_opened, const QString& default_model) {
  StartupModel m;
  if (!command_line.isEmpty()) {
    // Absolute: the app saves it as the model opened last, and a later start
    // from another folder must find it.
    m.path = QFileInfo(command_line).absoluteFilePath();
    m.source = StartupModel::Source::CommandLine;
  } else if (!settings_file_model.isEmpty()) {
    m.path = settings_file_model;
    m.source = StartupModel::Source::SettingsFile;
  } else if (somethingAt(last_opened)) {
    m.path = last_opened;
    m.source = StartupModel::Source::LastOpened;
  } else {
    m.path = default_model;
    m.source = StartupModel::Source::Default;
    if (!last_opened.isEmpty() && last_opened != default_model)
      m.note = tr("The model opened last, %1, is gone; the default model instead.").arg(last_opened);
  }
  m.exists = somethingAt(m.path);
  return m;
}

QString missingModelMessage(const StartupModel& model, const QString& settings_file) {
  const QString how = tr("Use File > Open model…, or install the default model with `kvscope-cli fetch-model`.");
  if (model.source == StartupModel::Source::SettingsFile) {
    return tr("The model %1, which the settings file %2 names (model_path), does not exist.\n\n%3")
        .arg(model.path, settings_file, how);
  }
  if (QFileInfo::exists(model.path)) {  // a FIFO, a device: there, but nothing a model loads from
    return tr("%1 is not a model: neither a file nor a folder.\n\n%2").arg(model.path, how);
  }
  return tr("The model file %1 does not exist.\n\n%2").arg(model.path, how);
}

}  // namespace kvscope::gui
