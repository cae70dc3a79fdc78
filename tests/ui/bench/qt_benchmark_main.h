// main() of a Google Benchmark program that measures widgets: a
// QApplication (offscreen unless QT_QPA_PLATFORM says otherwise), the
// engine's metatypes, and the CPU in the run's context (cpu_context.h).
#pragma once

#include <QApplication>

#include "engine_types.h"
#include "kernels/bench/cpu_context.h"

namespace kvscope::bench {

inline int run_qt_benchmarks(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ui::registerEngineMetaTypes();
  return run_benchmarks(argc, argv);
}

}  // namespace kvscope::bench
