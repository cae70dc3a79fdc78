// Where kvscope keeps models: the one rule shared by kvscope-cli, the desktop
// app and scripts/fetch_model.py (which restates it in Python).
#pragma once

#include <string>

namespace kvscope::fetch {

// $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else
// ~/.local/share/kvscope/models.
std::string default_model_dir();

// The default model's path in default_model_dir().
std::string default_model_path();

}  // namespace kvscope::fetch
