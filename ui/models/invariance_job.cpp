// Metatype registration for the invariance check's values (see invariance_job.h).
#include "invariance_job.h"

namespace kvscope::ui {

void registerInvarianceMetaTypes() {
  qRegisterMetaType<InvarianceJob>();
  qRegisterMetaType<InvarianceOutcome>();
}

}  // namespace kvscope::ui
