// The HTTP API served for real (a free loopback port) against an in-memory backend, driven by
// httplib's client and, for what a well-behaved client never sends, by a raw socket.
#include "service/http_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "core/log.h"

namespace fovea::service {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// A test double for the flow: sources in a list, with the flow's rules that the API maps to
// statuses (unknown keys, ids unique, a source limit). Thread-safe, as the API requires.
class FakeBackend : public ServiceBackend {
 public:
  explicit FakeBackend(std::size_t limit) : limit_(limit) {}

  std::vector<SourceInfo> sources() const override {
    calls_++;
    std::lock_guard lock(mutex_);
    return sources_;
  }

  Result<SourceInfo> add_source(const json& request) override {
    calls_++;
    std::lock_guard lock(mutex_);
    if (fail_adds_) return make_error(StatusCode::kIoError, "the flow is gone");
    for (const auto& [key, value] : request.items()) {
      if (key != "id" && key != "uri")
        return make_error(StatusCode::kInvalidArgument, "unknown key \"", key, "\"");
    }
    if (request.contains("id") && !request["id"].is_string()) {
      return make_error(StatusCode::kInvalidArgument, "\"id\" must be a string");
    }
    const std::string id = request.value("id", fmt::format("source-{}", next_id_++));
    for (const SourceInfo& source : sources_) {
      if (source.id == id) return make_error(StatusCode::kAlreadyExists, "a source named ", id, " exists");
    }
    if (sources_.size() >= limit_) {
      return make_error(StatusCode::kResourceExhausted, "the flow takes at most ", std::to_string(limit_),
                        " sources");
    }
    sources_.push_back({.id = id,
                        .uri = request["uri"].get<std::string>(),
                        .state = "connecting",
                        .frames = 7,
                        .fps = 25.0});
    return sources_.back();
  }

  Status remove_source(std::string_view id) override {
    calls_++;
    std::lock_guard lock(mutex_);
    for (auto it = sources_.begin(); it != sources_.end(); ++it) {
      if (it->id == id) {
        sources_.erase(it);
        return Status::ok();
      }
    }
    return make_error(StatusCode::kNotFound, "no source named ", std::string(id));
  }

  json stats() const override {
    calls_++;
    if (throw_from_stats_) throw std::runtime_error("stats exploded");
    std::lock_guard lock(mutex_);
    return {{"sources", {{{"name", "cam"}, {"error", "rtsp://admin:hunter2@cam/1: connection refused"}}}},
            {"frames", 42}};
  }

  Health health() const override {
    calls_++;
    std::lock_guard lock(mutex_);
    return health_;
  }

  std::vector<MetricFamily> metrics() const override {
    calls_++;
    return {{.name = "fovea_source_frames_total",
             .help = "Frames batched.",
             .type = MetricType::kCounter,
             .samples = {{{{"source", "rtsp://u:pw@cam/1"}}, 7}}}};
  }

  void set_health(Health health) {
    std::lock_guard lock(mutex_);
    health_ = std::move(health);
  }
  void set_throw_from_stats(bool on) { throw_from_stats_ = on; }
  void set_fail_adds(bool on) {
    std::lock_guard lock(mutex_);
    fail_adds_ = on;
  }
  int calls() const { return calls_; }

 private:
  const std::size_t limit_;
  mutable std::mutex mutex_;
  std::vector<SourceInfo> sources_;
  int next_id_ = 1;
  Health health_{.ready = true};
  bool fail_adds_ = false;
  std::atomic<bool> throw_from_stats_{false};
  mutable std::atomic<int> calls_{0};
};

constexpr std::size_t kSourceLimit = 64;

// One exchange over a fresh connection: `request` as it is written, then the answer, read up to
// the end of its body (Content-Length). The client keeps its side open: httplib does not write
// to a connection whose peer has shut down its half.
std::string raw_exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  std::string response;
  const auto complete = [&] {
    const std::size_t end = response.find("\r\n\r\n");
    const std::size_t length = response.find("Content-Length: ");
    return end != std::string::npos && length != std::string::npos &&
           response.size() >= end + 4 + std::stoul(response.substr(length + 16));
  };
  char buffer[4096];
  for (ssize_t n; !complete() && (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
    response.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  return response;
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(HttpApiOptions options) {
    options.port = 0;
    Result<std::unique_ptr<HttpApi>> api = HttpApi::start(backend_, std::move(options));
    ASSERT_TRUE(api.is_ok()) << api.status().to_string();
    api_ = std::move(api).value();
  }

  httplib::Client client() const {
    httplib::Client client("127.0.0.1", api_->port());
    client.set_connection_timeout(std::chrono::seconds(10));
    client.set_read_timeout(std::chrono::seconds(10));
    return client;
  }

  // The body of an error answer, checked to be {"error": "..."} in JSON.
  static std::string error_of(const httplib::Result& result) {
    EXPECT_TRUE(result) << httplib::to_string(result.error());
    if (!result) return {};
    EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
    const json body = json::parse(result->body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.size() == 1 && body.contains("error") && body["error"].is_string())
        << result->body;
    return body.is_object() && body.contains("error") ? body["error"].get<std::string>() : std::string();
  }

  httplib::Result post_source(httplib::Client& client, const json& body) const {
    return client.Post("/sources", body.dump(), "application/json");
  }

  FakeBackend backend_{kSourceLimit};
  std::unique_ptr<HttpApi> api_;
};

TEST_F(HttpApiTest, SourcesAreAddedListedAndRemoved) {
  httplib::Client http = client();
  httplib::Result listed = http.Get("/sources");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 200);
  EXPECT_EQ(listed->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(listed->body), json({{"sources", json::array()}}));

  httplib::Result added = post_source(http, {{"uri", "rtsp://admin:hunter2@cam/1"}, {"id", "cam 1/ä"}});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 201) << added->body;
  // (httplib's client decodes header values; the raw answer shows what the server sends.)
  EXPECT_EQ(added->get_header_value("Location"), "/sources/cam 1/ä");
  const json source = json::parse(added->body);
  EXPECT_EQ(source["id"], "cam 1/ä");
  EXPECT_EQ(source["uri"], "rtsp://admin:***@cam/1");
  EXPECT_EQ(source["state"], "connecting");
  EXPECT_EQ(source["frames"], 7);
  EXPECT_EQ(source["fps"], 25.0);
  for (const char* key : {"dropped", "reconnects", "decoder", "error"})
    EXPECT_TRUE(source.contains(key)) << key;

  listed = http.Get("/sources");
  ASSERT_TRUE(listed);
  EXPECT_EQ(json::parse(listed->body)["sources"], json::array({source}));
  EXPECT_EQ(listed->body.find("hunter2"), std::string::npos);

  const std::string raw = raw_exchange(api_->port(),
                                       "POST /sources HTTP/1.1\r\nContent-Length: 34\r\n\r\n"
                                       R"({"uri": "b.mp4", "id": "?#\r\n x"})");
  EXPECT_NE(raw.find("\r\nLocation: /sources/%3F%23%0D%0A%20x\r\n"), std::string::npos) << raw;

  httplib::Result removed = http.Delete("/sources/cam%201%2F%C3%A4");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 204);
  EXPECT_TRUE(removed->body.empty());
  removed = http.Delete("/sources/cam%201%2F%C3%A4");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 404);
  EXPECT_NE(error_of(removed).find("cam 1/ä"), std::string::npos);
}

TEST_F(HttpApiTest, AnIdIsChosenWhenNoneIsGiven) {
  httplib::Client http = client();
  httplib::Result added = post_source(http, {{"uri", "clip.mp4"}});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->status, 201);
  EXPECT_EQ(added->get_header_value("Location"), "/sources/source-1");
}

TEST_F(HttpApiTest, MalformedBodiesAre400WithTheReason) {
  httplib::Client http = client();
  httplib::Result result = http.Post("/sources", "{\"uri\": ", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("not valid JSON: parse error at line 1, column 9"), std::string::npos)
      << error_of(result);

  result = http.Post("/sources", "", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("not valid JSON"), std::string::npos);

  // A number past a double's range is the body's fault too, not the server's (it was a 500).
  result = http.Post("/sources", "{\"uri\": \"a.mp4\", \"timeout\": 1e400}", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("not valid JSON"), std::string::npos) << error_of(result);

  for (const char* body : {"[]", "\"rtsp://cam\"", "3", "null"}) {
    result = http.Post("/sources", body, "application/json");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400) << body;
    EXPECT_NE(error_of(result).find("must be a JSON object"), std::string::npos) << error_of(result);
  }
  for (const json& body :
       {json::object(), json({{"uri", 5}}), json({{"uri", ""}}), json({{"url", "x.mp4"}})}) {
    result = post_source(http, body);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400) << body;
    EXPECT_NE(error_of(result).find("\"uri\", a non-empty string"), std::string::npos) << error_of(result);
  }
}

TEST_F(HttpApiTest, InvalidUtf8AndDeepNestingAreRefusedCleanly) {
  httplib::Client http = client();
  httplib::Result result = http.Post("/sources", "{\"uri\": \"\xff\xfe\"}", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("not valid JSON"), std::string::npos);  // the answer is valid JSON itself

  const std::string nested = std::string(30000, '[') + std::string(30000, ']');
  result = http.Post("/sources", nested, "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("not array"), std::string::npos) << error_of(result);
}

TEST_F(HttpApiTest, UrisOutsideThePolicyAre400) {
  httplib::Client http = client();
  for (const char* uri : {"pipe:0", "fd:3", "concat:a.mp4|b.mp4", "data:video/mp4;base64,AAAA",
                          "subfile,,start,0,end,9,:/etc/passwd", "rtsp://cam/\n"}) {
    httplib::Result result = post_source(http, {{"uri", uri}});
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 400) << uri;
    error_of(result);
  }
  httplib::Result result = post_source(http, {{"uri", "gopher://u:secret@h/"}});
  ASSERT_TRUE(result);
  const std::string message = error_of(result);
  EXPECT_NE(message.find("\"gopher:\" is not allowed"), std::string::npos) << message;
  EXPECT_EQ(message.find("secret"), std::string::npos) << message;
  EXPECT_TRUE(backend_.sources().empty());
}

// JSON, absent, or curl's default for -d (the body is read as JSON whatever the form type says).
TEST_F(HttpApiTest, ContentTypeMustBeJsonOrAbsent) {
  httplib::Client http = client();
  httplib::Result result = http.Post("/sources", R"({"uri": "a.mp4"})", "text/plain");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 415);
  error_of(result);
  result = http.Post("/sources", R"({"uri": "b.mp4"})", "Application/JSON; charset=utf-8");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201) << result->body;
  const std::string without_type = raw_exchange(api_->port(),
                                                "POST /sources HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                                "Content-Length: 16\r\n\r\n{\"uri\": \"c.mp4\"}");
  EXPECT_TRUE(without_type.starts_with("HTTP/1.1 201")) << without_type;
  result = http.Post("/sources", R"({"uri": "e.mp4"})", "application/x-www-form-urlencoded");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201) << result->body;

  httplib::MultipartFormDataItems items = {{"uri", "d.mp4", "", ""}};
  result = http.Post("/sources", items);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 415);
  error_of(result);
  EXPECT_EQ(backend_.sources().size(), 3u);
}

TEST_F(HttpApiTest, BodiesOverTheLimitAre413) {
  httplib::Client http = client();
  const std::string huge = R"({"uri": "a.mp4", "pad": ")" + std::string(100 * 1024, 'x') + "\"}";
  httplib::Result result = http.Post("/sources", huge, "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 413);
  EXPECT_NE(error_of(result).find("larger than 65536 bytes"), std::string::npos);

  // Chunked, so no Content-Length announces it: the API stops reading at the limit.
  std::size_t sent = 0;
  result = http.Post(
      "/sources",
      [&](std::size_t, httplib::DataSink& sink) {
        const std::string chunk(16 * 1024, 'x');
        if (sent >= 1024 * 1024 || !sink.write(chunk.data(), chunk.size())) {
          sink.done();
        } else {
          sent += chunk.size();
        }
        return true;
      },
      "application/json");
  if (result) {  // the server may close before the client has written it all
    EXPECT_EQ(result->status, 413);
    error_of(result);
  }
  httplib::Client after = client();
  httplib::Result health = after.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(HttpApiTest, BackendErrorsMapToStatuses) {
  httplib::Client http = client();
  ASSERT_EQ(post_source(http, {{"uri", "a.mp4"}, {"id", "a"}})->status, 201);
  httplib::Result result = post_source(http, {{"uri", "b.mp4"}, {"id", "a"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 409);
  EXPECT_NE(error_of(result).find("a source named a exists"), std::string::npos);

  result = post_source(http, {{"uri", "b.mp4"}, {"decoder", "gpu"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_NE(error_of(result).find("unknown key \"decoder\""), std::string::npos);

  backend_.set_fail_adds(true);
  result = post_source(http, {{"uri", "b.mp4"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 500);
  EXPECT_EQ(error_of(result), "the flow is gone");

  result = http.Delete("/sources/nobody");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
  EXPECT_EQ(error_of(result), "no source named nobody");
}

TEST_F(HttpApiTest, StatsHealthAndMetrics) {
  httplib::Client http = client();
  httplib::Result stats = http.Get("/stats");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->status, 200);
  const json report = json::parse(stats->body);
  EXPECT_EQ(report["frames"], 42);
  EXPECT_EQ(report["sources"][0]["error"], "rtsp://admin:***@cam/1: connection refused");

  httplib::Result health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body), json({{"status", "ready"}}));
  backend_.set_health({.ready = true, .degraded = true, .reason = "cam2 is reconnecting"});
  health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body), json({{"status", "degraded"}, {"reason", "cam2 is reconnecting"}}));
  backend_.set_health({.ready = false, .reason = "the model is loading"});
  health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(json::parse(health->body), json({{"status", "not ready"}, {"reason", "the model is loading"}}));

  httplib::Result metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics->body,
            "# HELP fovea_source_frames_total Frames batched.\n"
            "# TYPE fovea_source_frames_total counter\n"
            "fovea_source_frames_total{source=\"rtsp://u:***@cam/1\"} 7\n");

  httplib::Result head = http.Head("/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
}

TEST_F(HttpApiTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  httplib::Client http = client();
  for (const char* path : {"/", "/source", "/sources/", "/sources/a/b", "/stats/", "/metrics.txt"}) {
    httplib::Result result = http.Get(path);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 404) << path;
    EXPECT_NE(error_of(result).find("no such path"), std::string::npos);
  }
  struct Case {
    httplib::Result result;
    std::string allow;
  };
  std::vector<Case> cases;
  cases.push_back({http.Put("/sources", "{}", "application/json"), "GET, HEAD, POST"});
  cases.push_back({http.Delete("/sources"), "GET, HEAD, POST"});
  cases.push_back({http.Get("/sources/cam"), "DELETE"});
  cases.push_back({http.Post("/stats", "{}", "application/json"), "GET, HEAD"});
  cases.push_back({http.Patch("/health", "{}", "application/json"), "GET, HEAD"});
  cases.push_back({http.Options("/metrics"), "GET, HEAD"});
  for (Case& c : cases) {
    ASSERT_TRUE(c.result);
    EXPECT_EQ(c.result->status, 405);
    EXPECT_EQ(c.result->get_header_value("Allow"), c.allow);
    EXPECT_NE(error_of(c.result).find("does not take"), std::string::npos);
  }
}

TEST_F(HttpApiTest, MalformedAndOverlongRequestsGetJsonErrors) {
  const std::string garbage = raw_exchange(api_->port(), "GARBAGE\r\n\r\n");
  EXPECT_TRUE(garbage.starts_with("HTTP/1.1 400")) << garbage;
  EXPECT_NE(garbage.find("{\"error\":\"malformed HTTP request\"}"), std::string::npos) << garbage;

  const std::string overlong =
      raw_exchange(api_->port(), "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(overlong.starts_with("HTTP/1.1 414")) << overlong.substr(0, 200);

  httplib::Client http = client();
  httplib::Result long_path = http.Get(fmt::format("/{}", std::string(8000, 'a')));
  ASSERT_TRUE(long_path);
  EXPECT_EQ(long_path->status, 404);

  // A POST with neither Content-Length nor Transfer-Encoding has an empty body, at once.
  const Clock::time_point start = Clock::now();
  const std::string bodiless =
      raw_exchange(api_->port(), "POST /sources HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(bodiless.starts_with("HTTP/1.1 400")) << bodiless;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));

  httplib::Result health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(HttpApiTest, EachRequestIsLoggedAtDebugLevel) {
  const LogLevel level = log_level();
  set_log_level(LogLevel::kDebug);
  testing::internal::CaptureStderr();
  httplib::Client http = client();
  ASSERT_TRUE(http.Get("/health?verbose=1"));
  ASSERT_TRUE(http.Delete("/sources/nobody"));
  api_->stop();
  const std::string log = testing::internal::GetCapturedStderr();
  set_log_level(level);
  for (const std::string_view line :
       {"http: GET /health?verbose=1 200 ", "http: DELETE /sources/nobody 404 "}) {
    const std::size_t at = log.find(line);
    ASSERT_NE(at, std::string::npos) << log;
    const std::string rest = log.substr(at + line.size(), log.find('\n', at) - at - line.size());
    EXPECT_TRUE(rest.ends_with(" ms") && rest.find('.') != std::string::npos) << rest;  // "0.3 ms"
  }
}

TEST_F(HttpApiTest, AThrowingBackendIs500AndTheServerGoesOn) {
  httplib::Client http = client();
  backend_.set_throw_from_stats(true);
  httplib::Result result = http.Get("/stats");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 500);
  EXPECT_EQ(error_of(result), "internal error: stats exploded");
  backend_.set_throw_from_stats(false);
  result = http.Get("/stats");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
}

TEST_F(HttpApiTest, ThousandsOfSourcesHitTheLimitWith429) {
  httplib::Client http = client();
  std::map<int, int> statuses;
  for (int i = 0; i < 2000; ++i) {
    httplib::Result result = post_source(http, {{"uri", fmt::format("rtsp://cam/{}", i)}});
    ASSERT_TRUE(result) << i << ": " << httplib::to_string(result.error());
    statuses[result->status]++;
    if (result->status == 429) {
      EXPECT_NE(error_of(result).find("at most 64 sources"), std::string::npos);
    }
  }
  EXPECT_EQ(statuses, (std::map<int, int>{{201, 64}, {429, 2000 - 64}}));
  httplib::Result listed = http.Get("/sources");
  ASSERT_TRUE(listed);
  EXPECT_EQ(json::parse(listed->body)["sources"].size(), kSourceLimit);
}

TEST_F(HttpApiTest, SixteenClientsAtOnce) {
  constexpr int kClients = 16;
  constexpr int kSourcesEach = 3;  // 48 of the 64 allowed
  std::atomic<int> unexpected{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client http = client();
      const auto expect = [&](const httplib::Result& result, int status) {
        if (!result || result->status != status) unexpected++;
      };
      for (int round = 0; round < 5; ++round) {
        for (int s = 0; s < kSourcesEach; ++s) {
          const std::string id = fmt::format("c{}-{}", c, s);
          expect(post_source(http, {{"uri", "rtsp://cam/" + id}, {"id", id}}), 201);
          expect(http.Get("/sources"), 200);
          expect(http.Get("/metrics"), 200);
        }
        for (int s = 0; s < kSourcesEach - (round == 4 ? 1 : 0); ++s) {
          expect(http.Delete(fmt::format("/sources/c{}-{}", c, s)), 204);
        }
      }
    });
  }
  for (std::thread& thread : clients) thread.join();
  EXPECT_EQ(unexpected, 0);
  EXPECT_EQ(backend_.sources().size(), static_cast<std::size_t>(kClients));  // each kept its last one
}

TEST_F(HttpApiTest, StopWhileClientsAreConnected) {
  std::atomic<bool> stopping{false};
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      httplib::Client http = client();
      // Until a request fails after the stop (a request may still be answered while stop() waits).
      while (true) {
        httplib::Result result = http.Get("/stats");
        if (!result) break;
        answered++;
        if (stopping) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  // And one connection that says nothing.
  const int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(api_->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  while (answered < 100 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(answered, 100);

  stopping = true;
  const Clock::time_point start = Clock::now();
  api_->stop();
  const auto took = Clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(6));  // the idle connection's keep-alive timeout, 2 s, and slack
  const int calls_after_stop = backend_.calls();
  for (std::thread& thread : clients) thread.join();
  close(idle);
  EXPECT_EQ(backend_.calls(), calls_after_stop);
  httplib::Result refused = client().Get("/health");
  EXPECT_FALSE(refused);
  api_->stop();  // again: nothing
}

TEST_F(HttpApiTest, StopRightAfterStartAndDestroyWithoutStop) {
  for (int i = 0; i < 20; ++i) {
    Result<std::unique_ptr<HttpApi>> api = HttpApi::start(backend_, {.port = 0});
    ASSERT_TRUE(api.is_ok());
    if (i % 2 == 0) (*api)->stop();
  }
}

TEST_F(HttpApiTest, APortInUseIsAnErrorNamingIt) {
  Result<std::unique_ptr<HttpApi>> second = HttpApi::start(backend_, {.port = api_->port()});
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_NE(second.status().message().find(fmt::format("127.0.0.1:{}", api_->port())), std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status().message();
}

TEST(HttpApiOptionsTest, OtherThanLoopbackNeedsAToken) {
  FakeBackend backend(kSourceLimit);
  Result<std::unique_ptr<HttpApi>> open = HttpApi::start(backend, {.host = "0.0.0.0", .port = 0});
  ASSERT_FALSE(open.is_ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(open.status().message().find("listening on 0.0.0.0 needs --token-file"), std::string::npos)
      << open.status().message();
  for (const char* host : {"192.168.1.10", "::", "example.com"}) {
    EXPECT_EQ(HttpApi::start(backend, {.host = host, .port = 0}).status().code(),
              StatusCode::kInvalidArgument)
        << host;
  }

  Result<std::unique_ptr<HttpApi>> guarded =
      HttpApi::start(backend, {.host = "0.0.0.0", .port = 0, .token = "t"});
  EXPECT_TRUE(guarded.is_ok()) << guarded.status().to_string();

  // Loopback needs none (::1 may not be configured here: then it fails to bind, not for the policy).
  for (const char* host : {"127.0.0.1", "127.0.0.2", "localhost", "::1"}) {
    EXPECT_NE(HttpApi::start(backend, {.host = host, .port = 0}).status().code(),
              StatusCode::kInvalidArgument)
        << host;
  }
}

TEST(HttpApiOptionsTest, BadOptionsAreRefused) {
  FakeBackend backend(kSourceLimit);
  EXPECT_EQ(HttpApi::start(backend, {.port = 70000}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpApi::start(backend, {.port = -1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpApi::start(backend, {.port = 0, .token = ""}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpApi::start(backend, {.port = 0, .max_body_bytes = 0}).status().code(),
            StatusCode::kInvalidArgument);
  // 192.0.2.1 is TEST-NET-1 (RFC 5737), no machine's address.
  const Status foreign = HttpApi::start(backend, {.host = "192.0.2.1", .port = 0, .token = "t"}).status();
  EXPECT_EQ(foreign.code(), StatusCode::kIoError);
  EXPECT_NE(foreign.message().find("cannot listen on 192.0.2.1:0"), std::string::npos) << foreign.message();
}

class HttpApiTokenTest : public HttpApiTest {
 protected:
  void SetUp() override { start({.token = "s3cret-token"}); }
};

TEST_F(HttpApiTokenTest, MutatingRequestsNeedTheToken) {
  httplib::Client http = client();
  httplib::Result result = post_source(http, {{"uri", "a.mp4"}, {"id", "a"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  EXPECT_EQ(result->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_NE(error_of(result).find("Authorization: Bearer"), std::string::npos);

  result = http.Post("/sources", {{"Authorization", "Basic czNjcmV0LXRva2Vu"}}, R"({"uri": "a.mp4"})",
                     "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);

  for (const char* wrong : {"wrong", "s3cret-toke", "s3cret-token2", "S3CRET-TOKEN"}) {
    result = http.Post("/sources", {{"Authorization", std::string("Bearer ") + wrong}}, R"({"uri": "a.mp4"})",
                       "application/json");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 403) << wrong;
    error_of(result);
  }
  result = http.Delete("/sources/a", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 403);
  EXPECT_TRUE(backend_.sources().empty());

  // Also before routing: an unauthenticated client learns nothing, not even which paths exist.
  result = http.Post("/nowhere", "{}", "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);

  result = http.Post("/sources", {{"Authorization", "bearer s3cret-token"}}, R"({"uri": "a.mp4", "id": "a"})",
                     "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201) << result->body;
  http.set_bearer_token_auth("s3cret-token");
  result = http.Delete("/sources/a");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 204);
}

TEST_F(HttpApiTokenTest, ReadsNeedNoToken) {
  httplib::Client http = client();
  for (const char* path : {"/sources", "/stats", "/health", "/metrics"}) {
    httplib::Result result = http.Get(path);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200) << path;
  }
}

}  // namespace
}  // namespace fovea::service
