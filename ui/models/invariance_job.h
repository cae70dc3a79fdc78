// The values an invariance check (kvscope/invariance_check.h) sends between
// the app's Invariance panel (ui/invariance_panel.h) and the thread that runs
// it (app/gui/invariance_runner.h): what to run, and what came of it. Plain
// values, so they travel through queued signals; a job id (the panel's)
// travels beside them, so that a result that arrives after the panel moved
// on to another run is recognised and dropped.
#pragma once

#include <string>
#include <vector>

#include <QMetaType>

#include "kvscope/invariance_check.h"

namespace kvscope::ui {

struct InvarianceJob {
  InvarianceSide a;  // the engine settings in force (spec "")
  InvarianceSide b;  // the configuration chosen in the panel
  // Raw text (a prompt file's blocks), or the conversation as the chat sent
  // it, through the model's chat template.
  std::vector<InvariancePrompt> prompts;
  InvarianceOptions options;
};

struct InvarianceOutcome {
  std::string error;  // empty: report holds the verdicts; "cancelled" when stopped
  InvarianceReport report;
  bool ok() const { return error.empty(); }
};

// Registers both with Qt's metatype system (idempotent).
void registerInvarianceMetaTypes();

}  // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::InvarianceJob)
Q_DECLARE_METATYPE(kvscope::ui::InvarianceOutcome)
