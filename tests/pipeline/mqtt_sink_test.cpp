// The MQTT sink (sinks.mqtt, issue 24) in a CPU detection flow against a real mosquitto broker and a
// real subscriber on a loopback port: every record the metadata file gets arrives on its source's
// topic, byte for byte and in order, and the report counts it delivered; a broker down for the
// whole run neither slows the flow nor fails it, and the run's end waits for it only a bounded
// time, counting what was lost; bad sinks.mqtt values are refused with the configuration, naming
// the key.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detection_flow_fixture.h"
#include "io/mqtt_publisher.h"
#include "pipeline/flow.h"
#include "support/mosquitto_process.h"
#include "support/mqtt_subscriber.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;
using testing::MosquittoProcess;
using testing::MqttSubscriber;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kTopicPrefix = "fovea-test/flow";

class MqttSinkFlow : public DetectionFlow {
 protected:
  // The detection flow of both clips with the metadata file, the report and sinks.mqtt to `port`.
  PipelineConfig mqtt_config(int port) const {
    PipelineConfig cfg = config({"a.mp4", "b.mp4"});
    cfg.sinks.mqtt = MqttSinkConfig{.port = port,
                                    .topic_prefix = std::string(kTopicPrefix),
                                    .reconnect_min_ms = 50,
                                    .reconnect_max_ms = 400};
    cfg.stats.report = path("report.json");
    return cfg;
  }

  Result<FlowResult> run(const PipelineConfig& cfg) const {
    return run_flow(cfg, {.device = DeviceChoice::kCpu, .progress = nullptr});
  }

  // The metadata file's lines by the topic of their source, in file order.
  std::map<std::string, std::vector<std::string>> metadata_by_topic() const {
    std::map<std::string, std::vector<std::string>> lines;
    std::ifstream file(path("detections.jsonl"));
    for (std::string line; std::getline(file, line);) {
      Result<ParsedFrameRecord> record = parse_frame_record(line);
      EXPECT_TRUE(record.is_ok()) << record.status().to_string();
      if (record.is_ok()) lines[io::mqtt_topic(kTopicPrefix, record->source)].push_back(line);
    }
    return lines;
  }

  // The report's one "brokers" entry.
  nlohmann::json broker_report() const {
    std::ifstream file(path("report.json"));
    const nlohmann::json report = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(report.contains("brokers")) << report.dump();
    if (!report.contains("brokers") || report["brokers"].size() != 1) return nlohmann::json::object();
    return report["brokers"][0];
  }
};

TEST_F(MqttSinkFlow, EveryRecordArrivesOnItsSourcesTopicAsTheFileHasIt) {
  MosquittoProcess broker;
  ASSERT_TRUE(broker.start());
  // Every source's topic.
  MqttSubscriber subscriber(broker.port(), std::string(kTopicPrefix) + "/+");
  ASSERT_TRUE(subscriber.subscribe());

  Result<FlowResult> result = run(mqtt_config(broker.port()));
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_FALSE(result->partial());

  const auto expected = metadata_by_topic();
  ASSERT_EQ(expected.size(), 2u);  // a topic per source
  EXPECT_EQ(expected.at(io::mqtt_topic(kTopicPrefix, "a")).size(), static_cast<std::size_t>(kFramesA));
  EXPECT_EQ(expected.at(io::mqtt_topic(kTopicPrefix, "b")).size(), static_cast<std::size_t>(kFramesB));
  constexpr std::size_t kRecords = kFramesA + kFramesB;
  // Byte for byte, in each source's order (QoS 1 with a broker that stays up: no repeats either).
  EXPECT_TRUE(subscriber.wait_for_messages(kRecords));
  EXPECT_EQ(subscriber.payloads_by_topic(), expected);

  const nlohmann::json broker_entry = broker_report();
  EXPECT_EQ(broker_entry.value("broker", ""), "127.0.0.1:" + std::to_string(broker.port()));
  EXPECT_EQ(broker_entry.value("published", 0u), kRecords);
  EXPECT_EQ(broker_entry.value("delivered", 0u), kRecords);
  EXPECT_EQ(broker_entry.value("dropped", 1u), 0u);
  EXPECT_EQ(broker_entry.value("queued", 1u), 0u);
  EXPECT_TRUE(broker_entry.value("connected", false));
}

TEST_F(MqttSinkFlow, ABrokerDownForTheWholeRunNeitherSlowsNorFailsTheFlow) {
  // The flow with its broker up, for its pace.
  MosquittoProcess up;
  ASSERT_TRUE(up.start());
  Result<FlowResult> with_broker = run(mqtt_config(up.port()));
  ASSERT_TRUE(with_broker.is_ok()) << with_broker.status().to_string();

  MosquittoProcess never_started;  // its port: nothing listens there
  PipelineConfig cfg = mqtt_config(never_started.port());
  constexpr int kBuffer = 4;
  cfg.sinks.mqtt->max_queued_messages = kBuffer;
  const auto begin = Clock::now();
  Result<FlowResult> without_broker = run(cfg);
  const double run_s = std::chrono::duration<double>(Clock::now() - begin).count();
  ASSERT_TRUE(without_broker.is_ok()) << without_broker.status().to_string();
  EXPECT_FALSE(without_broker->partial());
  EXPECT_EQ(metadata_by_topic().size(), 2u);  // the other sinks got everything

  // The frames flow at the same pace (a sink that waited for the broker would take its connection
  // attempts' time per batch); the slack is for a busy machine.
  const double paced_s = with_broker->stats.elapsed_s;
  EXPECT_LT(without_broker->stats.elapsed_s, 2.0 * paced_s + 1.0) << "with the broker: " << paced_s << " s";
  // After the last frame, the end waits for the broker kMqttSinkFinishTimeout, and the publisher's
  // close io::kMqttCloseFlushTimeout more, then gives up.
  const double end_s = run_s - without_broker->stats.elapsed_s;
  const double bound_s =
      std::chrono::duration<double>(kMqttSinkFinishTimeout + io::kMqttCloseFlushTimeout).count();
  EXPECT_GE(end_s, std::chrono::duration<double>(kMqttSinkFinishTimeout).count() - 0.1);
  EXPECT_LT(end_s, bound_s + 2.0);

  // What was lost is counted: the buffer kept the newest kBuffer records, the rest were dropped.
  constexpr std::uint64_t kRecords = kFramesA + kFramesB;
  const nlohmann::json broker_entry = broker_report();
  EXPECT_EQ(broker_entry.value("published", 0u), kRecords);
  EXPECT_EQ(broker_entry.value("delivered", 1u), 0u);
  EXPECT_EQ(broker_entry.value("dropped", 0u), kRecords - kBuffer);
  EXPECT_EQ(broker_entry.value("queued", 0u), static_cast<std::uint64_t>(kBuffer));
  EXPECT_FALSE(broker_entry.value("connected", true));
  EXPECT_NE(broker_entry.value("last_error", ""), "");
  ASSERT_EQ(without_broker->stats.brokers.size(), 1u);
  EXPECT_EQ(without_broker->stats.brokers[0].dropped, kRecords - kBuffer);
}

TEST_F(MqttSinkFlow, AHostThatDoesNotResolveFailsTheStartNamingIt) {
  PipelineConfig cfg = mqtt_config(1883);
  cfg.sinks.mqtt->host = "no-such-host.invalid";
  Result<FlowResult> result = run(cfg);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
  EXPECT_NE(result.status().message().find("sinks.mqtt.host 'no-such-host.invalid'"), std::string::npos)
      << result.status().message();
}

// The smallest configuration with sinks.mqtt, for the parser's checks.
constexpr std::string_view kBase = R"(sources:
  - uri: a.mp4
model:
  path: m.onnx
sinks:
  mqtt:
)";

std::string parse_error(std::string_view mqtt_keys) {
  const Result<PipelineConfig> config =
      parse_config(std::string(kBase) + std::string(mqtt_keys), "test.yaml");
  return config.is_ok() ? "(parsed)" : config.status().message();
}

TEST(MqttSinkConfig, IsReadWithItsDefaultsAndCountsAsASink) {
  const Result<PipelineConfig> config = parse_config(std::string(kBase) + "    port: 1884\n", "test.yaml");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->sinks.mqtt, MqttSinkConfig{.port = 1884});
  // `mqtt:` with nothing under it is off, as the other sinks; then no sink is left.
  EXPECT_NE(parse_error("").find("sinks: no sink is enabled"), std::string::npos);
  const Result<PipelineConfig> defaults = parse_config(std::string(kBase) + "    {}\n", "test.yaml");
  ASSERT_TRUE(defaults.is_ok()) << defaults.status().to_string();
  EXPECT_EQ(defaults->sinks.mqtt, MqttSinkConfig{});

  PipelineConfig every_key = *config;
  every_key.sinks.mqtt = MqttSinkConfig{.host = "broker.lan",
                                        .topic_prefix = "site/3",
                                        .qos = 2,
                                        .client_id = "cam-box",
                                        .max_queued_messages = 50,
                                        .username = "fovea",
                                        .password = ""};
  EXPECT_EQ(parse_config(dump_config(every_key), "dump").value(), every_key);
  const io::MqttOptions options = mqtt_options(*every_key.sinks.mqtt);
  EXPECT_EQ(options.host, "broker.lan");
  EXPECT_EQ(options.qos, 2);
  EXPECT_EQ(options.max_queued_messages, 50u);
  EXPECT_EQ(options.reconnect_min, std::chrono::milliseconds(500));
  EXPECT_EQ(options.reconnect_max, std::chrono::milliseconds(10000));
  EXPECT_EQ(options.password, std::optional<std::string>(""));
}

TEST(MqttSinkConfig, BadValuesAreRefusedNamingTheKey) {
  EXPECT_EQ(parse_error("    qos: 3\n"), "test.yaml:7:10: sinks.mqtt.qos: must be between 0 and 2, got 3");
  EXPECT_EQ(parse_error("    port: 0\n"),
            "test.yaml:7:11: sinks.mqtt.port: must be between 1 and 65535, got 0");
  EXPECT_EQ(parse_error("    prot: 1884\n"),
            "test.yaml:7:5: unknown key 'sinks.mqtt.prot' (did you mean 'port'?)");
  EXPECT_EQ(parse_error("    keepalive_s: 2\n"),
            "test.yaml:7:18: sinks.mqtt.keepalive_s: must be between 5 and 65535, got 2");
  EXPECT_EQ(parse_error("    host: ''\n"), "test.yaml:7:11: sinks.mqtt.host: must not be empty");
  // The keys together, as the publisher checks them.
  EXPECT_EQ(
      parse_error("    reconnect_min_ms: 500\n    reconnect_max_ms: 100\n"),
      "test.yaml:7:5: sinks.mqtt.reconnect_max_ms (100) must not be less than sinks.mqtt.reconnect_min_ms "
      "(500)");
  EXPECT_EQ(parse_error("    password: secret\n"),
            "test.yaml:7:5: sinks.mqtt.password needs sinks.mqtt.username");

  // --set reads the value as the file does.
  Result<PipelineConfig> config = parse_config(std::string(kBase) + "    {}\n", "test.yaml");
  ASSERT_TRUE(config.is_ok());
  const Status status = apply_override(*config, "sinks.mqtt.qos=3");
  EXPECT_EQ(status.message(), "--set sinks.mqtt.qos=3: sinks.mqtt.qos: must be between 0 and 2, got 3");
  EXPECT_TRUE(apply_override(*config, "sinks.mqtt.topic_prefix=site/7").is_ok());
  EXPECT_EQ(config->sinks.mqtt->topic_prefix, "site/7");
}

}  // namespace
}  // namespace fovea::pipeline
