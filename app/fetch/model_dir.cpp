// See model_dir.h.
#include "fetch/model_dir.h"

#include <cstdlib>

#include "fetch/model_fetch.h"

namespace kvscope::fetch {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string default_model_dir() {
  if (std::string dir = env_or_empty("KVSCOPE_MODEL_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_DATA_HOME"); !xdg.empty()) return xdg + "/kvscope/models";
  return env_or_empty("HOME") + "/.local/share/kvscope/models";
}

std::string default_model_path() { return default_model_dir() + "/" + default_model_source().file_name; }

}  // namespace kvscope::fetch
