// fovea serve through the real binary (CPU): the REST API drives a running flow (sources added and
// removed while the others go on), SIGTERM drains and finalizes, and a bad command line or a bad
// token file is refused with exit 2 before anything listens.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/synthetic_clip.h"
#include "pipeline/config.h"
#include "runtime/demo_detector.h"
#include "support/child_process.h"
#include "support/cli_process.h"
#include "support/loopback_servers.h"

namespace fovea {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class CliServe : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("fovea_serve_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(
        io::write_synthetic_clip(path("clip.mp4"), {.width = 160, .height = 96, .frames = 6}).is_ok());
    ASSERT_TRUE(runtime::write_demo_detection_model(path("detector.onnx")).is_ok());
    std::ofstream(path("serve.yaml")) << pipeline::dump_config(config());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The detection flow with no sources: the API brings them.
  pipeline::PipelineConfig config() const {
    pipeline::PipelineConfig config;
    config.flow = pipeline::FlowKind::kDetection;
    config.mux.batch_size = 4;
    config.mux.width = 160;
    config.mux.height = 96;
    pipeline::ModelConfig model{.name = "detector", .path = path("detector.onnx")};
    model.mean = runtime::kDemoDetectorMean;
    model.std = runtime::kDemoDetectorStd;
    model.input_width = runtime::kDemoDetectorInputWidth;
    model.input_height = runtime::kDemoDetectorInputHeight;
    model.parser = post::DetectParser::kBoxes;
    config.models = {model};
    config.sinks.metadata = pipeline::MetadataSinkConfig{.path = path("records.jsonl")};
    config.stats.report = path("report.json");
    config.stats.progress = false;
    return config;
  }

  // Starts fovea serve on a free port and waits for its API.
  void start_serve(std::vector<std::string> extra = {}) {
    port_ = testing::unused_loopback_port();
    std::vector<std::string> args = {"serve",         path("serve.yaml"),
                                     "--device",      "cpu",
                                     "--listen",      "127.0.0.1:" + std::to_string(port_),
                                     "--max-sources", "8"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(serve_.start(FOVEA_CLI_PATH, args, dir_ / "serve.log").is_ok());
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (httplib::Result health = client().Get("/health"); health && health->status == 200) return;
      ASSERT_FALSE(serve_.exited().has_value()) << testing::read_text(dir_ / "serve.log");
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "fovea serve did not answer within 60 s\n" << testing::read_text(dir_ / "serve.log");
  }

  httplib::Client client() const {
    httplib::Client http("127.0.0.1", port_);
    http.set_read_timeout(10, 0);
    return http;
  }

  int add(const std::string& id, const std::string& token = "") {
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    const nlohmann::json body = {{"id", id}, {"uri", path("clip.mp4")}, {"loop", true}};
    httplib::Result result = client().Post("/sources", headers, body.dump(), "application/json");
    return result ? result->status : -1;
  }

  std::uint64_t frames_of(const std::string& id) {
    httplib::Result result = client().Get("/sources");
    if (!result || result->status != 200) return 0;
    const nlohmann::json listed = nlohmann::json::parse(result->body);
    for (const nlohmann::json& source : listed["sources"]) {
      if (source["id"] == id) return source["frames"].get<std::uint64_t>();
    }
    return 0;
  }

  // Frame numbers per source name in the metadata.
  std::map<std::string, std::vector<std::int64_t>> recorded_frames() const {
    std::map<std::string, std::vector<std::int64_t>> frames;
    std::ifstream file(path("records.jsonl"));
    for (std::string line; std::getline(file, line);) {
      const nlohmann::json record = nlohmann::json::parse(line);
      frames[record["source"].get<std::string>()].push_back(record["frame"].get<std::int64_t>());
    }
    return frames;
  }

  fs::path dir_;
  int port_ = 0;
  testing::ChildProcess serve_;
};

// Eight looping sources join, three leave while the flow runs; the five others lose no frame (their
// frame numbers in the metadata run 0..n-1 without a gap) and SIGTERM ends the service with 130,
// the metadata and the report finalized.
TEST_F(CliServe, SourcesJoinAndLeaveWhileTheOthersLoseNothing) {
  start_serve();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(add("cam" + std::to_string(i)), 201) << i;
  EXPECT_EQ(add("cam0"), 409);
  EXPECT_EQ(add("cam8"), 429);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (frames_of("cam7") < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  for (const char* id : {"cam1", "cam4", "cam6"}) {
    httplib::Result removed = client().Delete(std::string("/sources/") + id);
    ASSERT_TRUE(removed);
    EXPECT_EQ(removed->status, 204) << id;
  }
  const std::uint64_t before = frames_of("cam0");
  while (frames_of("cam0") < before + 12 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  EXPECT_GE(frames_of("cam0"), before + 12) << "the others stopped";
  httplib::Result listed = client().Get("/sources");
  ASSERT_TRUE(listed);
  EXPECT_EQ(nlohmann::json::parse(listed->body)["sources"].size(), 5u);

  const std::optional<int> status = serve_.terminate(30s);
  ASSERT_TRUE(status.has_value()) << "had to be killed\n" << testing::read_text(dir_ / "serve.log");
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 130) << testing::read_text(dir_ / "serve.log");
  const std::map<std::string, std::vector<std::int64_t>> frames = recorded_frames();
  for (const char* id : {"cam0", "cam2", "cam3", "cam5", "cam7"}) {
    ASSERT_TRUE(frames.count(id)) << id;
    const std::vector<std::int64_t>& numbers = frames.at(id);
    for (std::size_t i = 0; i < numbers.size(); ++i)
      ASSERT_EQ(numbers[i], static_cast<std::int64_t>(i)) << id;
  }
  EXPECT_TRUE(fs::exists(path("report.json")));
}

// With a token, POST and DELETE need it; GET does not.
TEST_F(CliServe, MutatingRequestsNeedTheToken) {
  std::ofstream(path("token")) << "s3cret\n";
  start_serve({"--token-file", path("token")});
  EXPECT_EQ(add("cam0"), 401);
  EXPECT_EQ(add("cam0", "wrong"), 403);
  EXPECT_EQ(add("cam0", "s3cret"), 201);
  httplib::Result metrics = client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  const std::optional<int> status = serve_.terminate(30s);
  ASSERT_TRUE(status.has_value() && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 130);
}

// Refused before anything listens: exit 2, the flag named.
TEST_F(CliServe, ABadCommandLineIsRefusedNamingTheFlag) {
  const auto run = [&](const std::vector<std::string>& extra, const std::string& name) {
    std::vector<std::string> args = {"serve", path("serve.yaml"), "--device", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    const fs::path log = dir_ / (name + ".log");
    return std::pair{testing::run_cli(FOVEA_CLI_PATH, args, log), testing::read_text(log)};
  };
  std::ofstream(path("empty_token"));
  const auto [listen_code, listen_log] = run({"--listen", "localhost"}, "listen");
  EXPECT_EQ(listen_code, 2);
  EXPECT_NE(listen_log.find("--listen localhost: expected HOST:PORT"), std::string::npos) << listen_log;
  const auto [open_code, open_log] = run({"--listen", "0.0.0.0:0"}, "open");
  EXPECT_EQ(open_code, 2);
  EXPECT_NE(open_log.find("needs --token-file"), std::string::npos) << open_log;
  fs::permissions(path("empty_token"), fs::perms::owner_read | fs::perms::owner_write);
  const auto [token_code, token_log] = run({"--token-file", path("empty_token")}, "token");
  EXPECT_EQ(token_code, 2);
  EXPECT_NE(token_log.find("is empty"), std::string::npos) << token_log;
  EXPECT_EQ(token_log.find("other users"), std::string::npos) << token_log;  // mode 600: no warning
  // A token file others can read is warned about, naming the mode and the fix.
  fs::permissions(path("empty_token"), fs::perms::others_read, std::filesystem::perm_options::add);
  const auto [shared_code, shared_log] = run({"--token-file", path("empty_token")}, "shared");
  EXPECT_EQ(shared_code, 2);
  EXPECT_NE(shared_log.find("other users can read or write it (mode 604); `chmod 600"), std::string::npos)
      << shared_log;
}

}  // namespace
}  // namespace fovea
