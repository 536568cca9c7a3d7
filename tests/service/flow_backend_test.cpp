// The backend over a real flow, end to end: the detection flow on the CPU (generated clips, the demo
// detector, a metadata sink) run as a service on a thread, the HTTP API on a free loopback port in
// front of it, driven by httplib's client as a user would. Sources are added and removed while the
// flow runs; the metadata shows what the flow did with each one's frames.
//
// The mux batches in file mode (mux.live false, which a service's configuration may say): its
// sources wait for the flow instead of dropping frames, so every frame of a source is accounted
// for and a gap in a source's frame numbers is a frame lost, not a frame the live mux let go.
#include "service/flow_backend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "../pipeline/detection_flow_fixture.h"
#include "pipeline/flow.h"
#include "pipeline/frame_record.h"
#include "service/http_api.h"

namespace fovea::service {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Long enough for a slow, busy CI machine; the conditions waited for come within a few seconds.
constexpr auto kWaitLimit = std::chrono::seconds(30);
// Frames a removed source may still deliver: its mux queue (4), one push blocked on it and one
// frame decoded meanwhile, and the few batches between the list read before the DELETE and the
// DELETE itself.
constexpr std::int64_t kFramesAfterRemoval = 12;

// Polls `ready` until it holds or kWaitLimit passes.
bool wait_until(const std::function<bool()>& ready) {
  const Clock::time_point deadline = Clock::now() + kWaitLimit;
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

bool metric_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)) != 0);
}

// `name` or `name{key="value",...}` with Prometheus's escapes in the values. (Plain parsing:
// std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers' -O1.)
bool is_sample_key(std::string_view key) {
  std::size_t i = 0;
  while (i < key.size() && metric_name_char(key[i], i == 0)) ++i;
  if (i == 0) return false;
  if (i == key.size()) return true;
  if (key[i] != '{' || key.back() != '}') return false;
  for (++i; i < key.size() - 1;) {
    const std::size_t start = i;
    while (i < key.size() && metric_name_char(key[i], i == start) && key[i] != ':') ++i;
    if (i == start || key.compare(i, 2, "=\"") != 0) return false;
    for (i += 2; i < key.size() && key[i] != '"'; ++i) {
      if (key[i] == '\\') ++i;
    }
    if (++i >= key.size()) return false;
    if (key[i] == ',') ++i;
  }
  return i == key.size() - 1;
}

// A /metrics body, every line checked to be a comment or `name{labels} value`: the samples by
// their `name{labels}` as written.
std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    const std::size_t space = line.rfind(' ');
    const bool sample = space != std::string::npos && space + 1 < line.size() &&
                        is_sample_key(std::string_view(line).substr(0, space));
    EXPECT_TRUE(sample) << "not a sample: " << line;
    if (!sample) continue;
    samples[line.substr(0, space)] = std::stod(line.substr(space + 1));  // NaN, +Inf and -Inf too
  }
  return samples;
}

class FlowBackendTest : public pipeline::detect_test::DetectionFlow {
 protected:
  // The detection flow over the fixture's clips with no source of its own; mux size given, since
  // there is no source to read it from.
  pipeline::PipelineConfig service_config(std::vector<std::string> clips = {}) const {
    pipeline::PipelineConfig config = DetectionFlow::config(clips);
    config.mux.width = pipeline::detect_test::kWidth;
    config.mux.height = pipeline::detect_test::kHeight;
    config.mux.live = false;
    return config;
  }

  void start(const pipeline::PipelineConfig& config, std::size_t slots, std::size_t max_sources) {
    backend_.emplace(control_, pipeline::source_names(config.sources),
                     FlowBackendOptions{.max_sources = max_sources});
    Result<std::unique_ptr<HttpApi>> api = HttpApi::start(*backend_, {.port = 0});
    ASSERT_TRUE(api.is_ok()) << api.status().to_string();
    api_ = std::move(api).value();
    http_.emplace("127.0.0.1", api_->port());
    http_->set_read_timeout(std::chrono::seconds(10));
    // Not ready before the flow runs.
    const httplib::Result health = http_->Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503);
    EXPECT_EQ(json::parse(health->body)["reason"], "the flow has not started yet");
    flow_ = std::thread([this, config, slots] {
      result_ = pipeline::run_flow(config, {.device = pipeline::DeviceChoice::kCpu,
                                            .interrupt = &stop_,
                                            .progress = nullptr,
                                            .control = &control_,
                                            .source_slots = slots});
    });
    ASSERT_TRUE(wait_until([&] { return control_.running(); }));
  }

  // Interrupts the flow and waits for run_flow to return.
  void stop_flow() {
    stop_ = true;
    if (flow_.joinable()) flow_.join();
  }

  void TearDown() override {
    stop_flow();
    if (api_) api_->stop();
    DetectionFlow::TearDown();
  }

  httplib::Result post(const json& body) { return http_->Post("/sources", body.dump(), "application/json"); }

  json get(const std::string& path) {
    const httplib::Result result = http_->Get(path);
    EXPECT_TRUE(result) << path;
    if (!result) return {};
    EXPECT_EQ(result->status, 200) << path << ": " << result->body;
    return json::parse(result->body, nullptr, false);
  }

  // GET /sources, by id.
  std::map<std::string, json> listed() {
    const json body = get("/sources");
    std::map<std::string, json> sources;
    for (const json& source : body["sources"]) sources[source["id"]] = source;
    return sources;
  }

  std::int64_t frames_of(const std::string& id) {
    const auto sources = listed();
    const auto it = sources.find(id);
    return it == sources.end() ? -1 : it->second["frames"].get<std::int64_t>();
  }

  // The metadata's frame numbers per source name, and the slots each name was in.
  struct Written {
    std::vector<std::int64_t> frames;
    std::set<std::size_t> slots;
  };
  std::map<std::string, Written> written() const {
    std::map<std::string, Written> out;
    std::ifstream file(path("detections.jsonl"));
    for (std::string line; std::getline(file, line);) {
      Result<pipeline::ParsedFrameRecord> record = pipeline::parse_frame_record(line);
      EXPECT_TRUE(record.is_ok()) << record.status().to_string() << "\n" << line;
      if (!record.is_ok()) continue;
      out[record->source].frames.push_back(record->frame);
      out[record->source].slots.insert(record->source_id);
    }
    return out;
  }

  // 0, 1, ..., n - 1 in order: nothing lost, nothing twice.
  static void expect_contiguous(const std::string& name, const std::vector<std::int64_t>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      ASSERT_EQ(frames[i], static_cast<std::int64_t>(i))
          << name << ": frame " << i << " of " << frames.size();
    }
  }

  json looping_clip(const std::string& id) const {
    return {{"id", id}, {"uri", path("a.mp4")}, {"loop", true}};
  }

  pipeline::FlowControl control_;
  std::atomic<bool> stop_{false};
  std::optional<FlowBackend> backend_;
  std::unique_ptr<HttpApi> api_;
  std::optional<httplib::Client> http_;
  std::thread flow_;
  Result<pipeline::FlowResult> result_ = make_error(StatusCode::kInternal, "the flow did not run");
};

TEST_F(FlowBackendTest, SourcesJoinAndLeaveARunningFlowWithoutLosingFrames) {
  constexpr std::size_t kSlots = 8;
  ASSERT_NO_FATAL_FAILURE(start(service_config(), kSlots, kSlots));
  const std::vector<std::string> ids = {"cam0", "cam1", "cam2", "cam3", "cam4", "cam5", "cam6", "cam7"};
  for (const std::string& id : ids) {
    const httplib::Result added = post(looping_clip(id));
    ASSERT_TRUE(added);
    ASSERT_EQ(added->status, 201) << added->body;
    EXPECT_EQ(added->get_header_value("Location"), "/sources/" + id);
    EXPECT_EQ(json::parse(added->body)["uri"], path("a.mp4"));
  }

  // Full; an id in use; a key the configuration does not have, with the file's message.
  const httplib::Result full = post(looping_clip("cam8"));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  const httplib::Result taken = post(looping_clip("cam3"));
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->status, 409) << taken->body;
  EXPECT_NE(taken->body.find("cam3"), std::string::npos) << taken->body;
  const httplib::Result bad_key = post({{"uri", path("a.mp4")}, {"loop2", true}});
  ASSERT_TRUE(bad_key);
  EXPECT_EQ(bad_key->status, 400);
  EXPECT_EQ(json::parse(bad_key->body)["error"], "POST /sources: unknown key 'loop2' (did you mean 'loop'?)");

  // Every source runs past its clip's end (a loop) before three of them go.
  ASSERT_TRUE(wait_until([&] {
    const auto sources = listed();
    return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
      return sources.count(id) > 0 && sources.at(id)["frames"] > pipeline::detect_test::kFramesA;
    });
  })) << get("/sources").dump();
  const std::vector<std::string> removed = {"cam1", "cam4", "cam6"};
  const std::vector<std::string> kept = {"cam0", "cam2", "cam3", "cam5", "cam7"};
  std::map<std::string, std::int64_t> before_removal;
  for (const auto& [id, source] : listed()) before_removal[id] = source["frames"];
  for (const std::string& id : removed) {
    const httplib::Result deleted = http_->Delete("/sources/" + id);
    ASSERT_TRUE(deleted);
    EXPECT_EQ(deleted->status, 204) << deleted->body;
  }
  EXPECT_EQ(listed().size(), kept.size());
  const httplib::Result again = http_->Delete("/sources/cam1");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);

  // A new source takes a slot a removed one frees once its frames have drained, and numbers its
  // frames from 0. The server waits up to 2 s for a slot; on a loaded machine the drain can take
  // longer, and then the answer is 429 "try again", which a client does.
  httplib::Result reused = post(looping_clip("cam8"));
  ASSERT_TRUE(wait_until([&] {
    if (reused && reused->status != 429) return true;
    reused = post(looping_clip("cam8"));
    return reused && reused->status != 429;
  }));
  ASSERT_EQ(reused->status, 201) << reused->body;

  // The others go on, at a rate the API sees.
  ASSERT_TRUE(wait_until([&] {
    const auto sources = listed();
    return std::all_of(kept.begin(), kept.end(),
                       [&](const std::string& id) {
                         return sources.at(id)["frames"] >=
                                    before_removal[id] + 2 * pipeline::detect_test::kFramesA &&
                                sources.at(id)["fps"] > 0.0 && sources.at(id)["state"] == "running";
                       }) &&
           sources.at("cam8")["frames"] > pipeline::detect_test::kFramesA;
  })) << get("/sources").dump();

  const std::map<std::string, double> metrics = parse_metrics(http_->Get("/metrics")->body);
  EXPECT_EQ(metrics.at("fovea_flow_running"), 1.0);
  EXPECT_GT(metrics.at("process_resident_memory_bytes"), 1e6);
  EXPECT_GT(metrics.at(R"(fovea_source_frames_total{source="cam0"})"), 0.0);
  EXPECT_EQ(metrics.at(R"(fovea_source_up{source="cam8",decoder="cpu"})"), 1.0);
  EXPECT_EQ(metrics.count(R"(fovea_source_frames_total{source="cam1"})"), 0u);
  EXPECT_GT(metrics.at("fovea_frames_total"), 0.0);
  EXPECT_GT(metrics.at(R"(fovea_stage_latency_seconds_count{stage="preprocess"})"), 0.0);
  EXPECT_EQ(metrics.at(R"(fovea_stage_latency_seconds_bucket{stage="preprocess",le="+Inf"})"),
            metrics.at(R"(fovea_stage_latency_seconds_count{stage="preprocess"})"));
  EXPECT_EQ(metrics.count(R"(fovea_queue_depth{queue="mux"})"), 1u);
  EXPECT_EQ(get("/health"), json({{"status", "ready"}}));
  const json stats = get("/stats");
  EXPECT_EQ(stats["running"], true);
  EXPECT_EQ(stats["service"], json({{"max_sources", kSlots}, {"sources", kept.size() + 1}}));

  stop_flow();
  ASSERT_TRUE(result_.is_ok()) << result_.status().to_string();
  EXPECT_TRUE(result_->interrupted);
  const httplib::Result stopped = http_->Get("/health");
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->status, 503);
  EXPECT_EQ(json::parse(stopped->body)["reason"], "the flow has stopped");

  // Every output finalized: each line is a whole record. Each source's frames are all there.
  const std::map<std::string, Written> records = written();
  std::map<std::string, std::uint64_t> final_frames;
  for (const pipeline::SourceStats& source : result_->stats.sources)
    final_frames[source.name] = source.frames;
  for (const std::string& id : kept) {
    ASSERT_EQ(records.count(id), 1u) << id;
    expect_contiguous(id, records.at(id).frames);
    EXPECT_EQ(records.at(id).frames.size(), final_frames.at(id)) << id;
  }
  for (const std::string& id : removed) {
    ASSERT_EQ(records.count(id), 1u) << id;
    expect_contiguous(id, records.at(id).frames);
    EXPECT_LE(static_cast<std::int64_t>(records.at(id).frames.size()),
              before_removal[id] + kFramesAfterRemoval)
        << id;
  }
  const Written& cam8 = records.at("cam8");
  expect_contiguous("cam8", cam8.frames);
  ASSERT_EQ(cam8.slots.size(), 1u);
  std::set<std::size_t> freed;
  for (const std::string& id : removed)
    freed.insert(records.at(id).slots.begin(), records.at(id).slots.end());
  EXPECT_EQ(freed.count(*cam8.slots.begin()), 1u) << "cam8 is in slot " << *cam8.slots.begin();
}

// A metadata broker that is not there leaves the flow running (records are buffered) but /health
// says so: degraded, naming the broker (it said "ready" before).
TEST_F(FlowBackendTest, ABrokerThatIsDownDegradesTheHealth) {
  pipeline::PipelineConfig config = service_config({"b.mp4"});
  config.sources[0].loop = true;
  // A port nothing listens on: bound, then closed.
  int port = 0;
  {
    httplib::Server probe;
    port = probe.bind_to_any_port("127.0.0.1");
  }
  ASSERT_GT(port, 0);
  config.sinks.mqtt = pipeline::MqttSinkConfig{.host = "127.0.0.1", .port = port};
  ASSERT_NO_FATAL_FAILURE(start(config, 2, 2));
  const std::string broker = fmt::format("127.0.0.1:{}", port);
  ASSERT_TRUE(wait_until([&] {
    const json health = get("/health");
    return health.value("status", "") == "degraded" &&
           health.value("reason", "").find("metadata brokers not connected") != std::string::npos;
  })) << get("/health").dump();
  EXPECT_NE(get("/health")["reason"].get<std::string>().find(broker), std::string::npos) << get("/health");
}

TEST_F(FlowBackendTest, TheConfigurationsSourcesEndedAndFailedSourcesAndIds) {
  // The configuration's sources: one that ends by itself, one that fails.
  pipeline::PipelineConfig config = service_config({"b.mp4"});
  config.sources.push_back({.uri = path("missing.mp4")});
  constexpr std::size_t kSlots = 3;
  ASSERT_NO_FATAL_FAILURE(start(config, kSlots, kSlots));

  ASSERT_TRUE(wait_until([&] {
    const auto sources = listed();
    return sources.size() == 2 && sources.at("b")["state"] == "ended" &&
           sources.at("missing")["state"] == "failed";
  })) << get("/sources").dump();
  const auto sources = listed();
  EXPECT_EQ(sources.at("b")["frames"], pipeline::detect_test::kFramesB);
  EXPECT_EQ(sources.at("b")["decoder"], "cpu");
  EXPECT_EQ(sources.at("b")["uri"], path("b.mp4"));
  EXPECT_NE(sources.at("missing")["error"].get<std::string>().find("missing.mp4"), std::string::npos)
      << sources.at("missing");
  EXPECT_EQ(get("/health"), json({{"status", "degraded"}, {"reason", "failed: missing"}}));

  // Ids: refused when they cannot name a URL segment or a topic level; else the "id", the
  // "name", or one made up.
  for (const json& id : {json("a/b"), json("a+b"), json(std::string(129, 'x')), json("tab\there"), json(7)}) {
    const httplib::Result refused = post({{"id", id}, {"uri", path("a.mp4")}});
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << id;
  }
  // The ended source's slot (the first free one) goes to a new source, and its id leaves the list.
  const httplib::Result named = post({{"name", "by name"}, {"uri", path("a.mp4")}, {"loop", true}});
  ASSERT_TRUE(named);
  ASSERT_EQ(named->status, 201) << named->body;
  EXPECT_EQ(named->get_header_value("Location"), "/sources/by name");  // httplib decodes it
  EXPECT_EQ(json::parse(named->body)["state"], "connecting");
  EXPECT_EQ(listed().count("b"), 0u);

  // The failed source stays listed until it is deleted; then its slot is free.
  ASSERT_EQ(http_->Delete("/sources/missing")->status, 204);
  EXPECT_EQ(get("/health"), json({{"status", "ready"}}));
  const httplib::Result generated = post({{"uri", path("a.mp4")}, {"loop", true}});
  ASSERT_TRUE(generated);
  ASSERT_EQ(generated->status, 201) << generated->body;
  EXPECT_EQ(json::parse(generated->body)["id"], "source-1");
  const httplib::Result third = post(looping_clip("third"));
  ASSERT_TRUE(third);
  ASSERT_EQ(third->status, 201) << third->body;
  const httplib::Result full = post(looping_clip("fourth"));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  ASSERT_TRUE(wait_until([&] { return frames_of("third") > 0 && frames_of("source-1") > 0; }))
      << get("/sources").dump();

  stop_flow();
  ASSERT_TRUE(result_.is_ok()) << result_.status().to_string();
  const auto after = listed();
  EXPECT_EQ(after.at("third")["state"], "ended");
  EXPECT_EQ(after.at("third")["fps"], 0.0);
  const std::map<std::string, double> metrics = parse_metrics(http_->Get("/metrics")->body);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics.at("fovea_flow_running"), 0.0);
  EXPECT_GT(metrics.at("process_resident_memory_bytes"), 1e6);
  EXPECT_EQ(get("/stats"), json({{"running", false}}));
  const httplib::Result late = post(looping_clip("late"));
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 429) << late->body;
}

// --max-sources counts the sources that run (or failed, until deleted): one that ended by itself
// frees its place for a new one, though it stays listed until its slot is reused.
TEST_F(FlowBackendTest, AnEndedSourceNoLongerCountsAgainstTheMaximum) {
  ASSERT_NO_FATAL_FAILURE(start(service_config({"b.mp4"}), 2, 1));
  ASSERT_TRUE(wait_until([&] { return listed().count("b") > 0 && listed().at("b")["state"] == "ended"; }))
      << get("/sources").dump();
  const httplib::Result next = post(looping_clip("next"));
  ASSERT_TRUE(next);
  ASSERT_EQ(next->status, 201) << next->body;
  const httplib::Result over = post(looping_clip("over"));
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 429) << over->body;
  EXPECT_NE(over->body.find("at most 1 sources"), std::string::npos) << over->body;
  stop_flow();
  ASSERT_TRUE(result_.is_ok()) << result_.status().to_string();
}

}  // namespace
}  // namespace fovea::service
