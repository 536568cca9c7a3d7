// MqttPublisher against a real mosquitto broker on a loopback port and a real subscriber
// (libmosquitto, subscribed at QoS 1 before anything is published): order and integrity, a broker
// down at start, killed mid-stream with messages unacknowledged, a full buffer, bad options, flush
// and close bounds, topic names.
//
// A broker killed and restarted forgets its subscribers, and the publisher may reconnect before the
// subscriber does. So the tests that restart the broker give the subscriber a persistent session
// and have the broker save it first (MosquittoOptions::persistence, save_state()): the restarted
// broker queues every message for the subscriber until it is back, and the checks are exact.
#include "io/mqtt_publisher.h"

#include <gtest/gtest.h>
#include <mosquitto.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/mosquitto_process.h"
#include "support/mqtt_subscriber.h"

namespace fovea::io {
namespace {

using std::chrono::milliseconds;
using testing::MosquittoOptions;
using testing::MosquittoProcess;
using testing::MqttSubscriber;

constexpr milliseconds kDeliveryTimeout{10000};
// Reconnect quickly so that the tests stay short; the backoff's doubling still runs.
constexpr milliseconds kTestReconnectMin{50};
constexpr milliseconds kTestReconnectMax{400};

const std::string kTopic = mqtt_topic("fovea/test", "cam1");

// A frame record of the size a detection flow writes, numbered so that order can be checked.
std::string record(int frame) {
  std::string line = R"({"v":1,"source":"cam1","source_id":0,"frame":)" + std::to_string(frame) +
                     R"(,"pts_us":)" + std::to_string(frame * 40000) + R"(,"batch":)" +
                     std::to_string(frame) + R"(,"inferred":true,"objects":[)";
  for (int i = 0; i < frame % 4; ++i) {
    line += (i ? "," : "") +
            std::string(R"({"box":[10.5,20.0,110.25,220.0],"class_id":1,"label":"person","score":0.)") +
            std::to_string(50 + frame % 50) + "}";
  }
  return line + "]}";
}

std::vector<std::string> records(int first, int count) {
  std::vector<std::string> lines;
  for (int frame = first; frame < first + count; ++frame) lines.push_back(record(frame));
  return lines;
}

// QoS 1 delivers at least once: a message resent after a reconnect may arrive twice.
std::vector<std::string> first_occurrences(const std::vector<std::string>& payloads) {
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (const std::string& payload : payloads) {
    if (seen.insert(payload).second) unique.push_back(payload);
  }
  return unique;
}

// Polls `condition` until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, milliseconds timeout = kDeliveryTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

MqttOptions options_for(int port) {
  MqttOptions options;
  options.port = port;
  options.reconnect_min = kTestReconnectMin;
  options.reconnect_max = kTestReconnectMax;
  return options;
}

std::unique_ptr<MqttPublisher> create_publisher(const MqttOptions& options) {
  auto publisher = MqttPublisher::create(options);
  EXPECT_TRUE(publisher.is_ok()) << publisher.status().to_string();
  return publisher.is_ok() ? std::move(publisher).value() : nullptr;
}

void publish_all(MqttPublisher& publisher, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) publisher.publish(kTopic, line);
}

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// A broker whose subscriber has a persistent session saved in the broker's state, so that it
// survives kill() and restart(): the broker queues messages for it while it reconnects.
struct BrokerWithSavedSubscriber {
  MosquittoProcess broker{MosquittoOptions{.persistence = true}};
  std::unique_ptr<MqttSubscriber> subscriber;

  ::testing::AssertionResult start() {
    if (auto started = broker.start(); !started) return started;
    subscriber = std::make_unique<MqttSubscriber>(broker.port(), kTopic, /*persistent_session=*/true);
    if (auto subscribed = subscriber->subscribe(); !subscribed) return subscribed;
    return broker.save_state();
  }
};

class MqttPublisherQos : public ::testing::TestWithParam<int> {};

// QoS 1 is the default; 0 and 2 take other paths through libmosquitto (delivered when written,
// delivered on PUBCOMP).
TEST_P(MqttPublisherQos, DeliversInOrderAndIntact) {
  MosquittoProcess broker;
  ASSERT_TRUE(broker.start());
  MqttSubscriber subscriber(broker.port(), kTopic);
  ASSERT_TRUE(subscriber.subscribe());
  MqttOptions options = options_for(broker.port());
  options.qos = GetParam();
  auto publisher = create_publisher(options);
  ASSERT_NE(publisher, nullptr);

  const std::vector<std::string> lines = records(0, 1000);
  publish_all(*publisher, lines);
  const Status flushed = publisher->flush(kDeliveryTimeout);
  ASSERT_TRUE(flushed.is_ok()) << flushed.to_string();
  ASSERT_TRUE(subscriber.wait_for_distinct(lines.size())) << subscriber.payloads().size() << broker.log();
  EXPECT_EQ(subscriber.payloads(), lines);  // in order, intact, each once

  const MqttStats stats = publisher->stats();
  EXPECT_EQ(stats.published, 1000u);
  EXPECT_EQ(stats.delivered, 1000u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.rejected, 0u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(stats.reconnects, 0u);
  EXPECT_TRUE(stats.connected);
}

INSTANTIATE_TEST_SUITE_P(Qos, MqttPublisherQos, ::testing::Values(0, 1, 2));

TEST(MqttPublisher, BrokerDownAtStartIsWaitedFor) {
  BrokerWithSavedSubscriber setup;
  ASSERT_TRUE(setup.start());
  setup.broker.kill();

  auto publisher = create_publisher(options_for(setup.broker.port()));
  ASSERT_NE(publisher, nullptr);
  const std::vector<std::string> lines = records(0, 200);
  publish_all(*publisher, lines);
  MqttStats stats = publisher->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.queued, lines.size());
  EXPECT_EQ(stats.delivered, 0u);
  // The refused connection (a non-blocking connect may report it after create() returns).
  EXPECT_TRUE(eventually([&] { return !publisher->stats().last_error.empty(); }));

  ASSERT_TRUE(setup.broker.restart());
  const Status flushed = publisher->flush(kDeliveryTimeout);
  ASSERT_TRUE(flushed.is_ok()) << flushed.to_string();
  ASSERT_TRUE(setup.subscriber->wait_for_distinct(lines.size()));
  EXPECT_EQ(first_occurrences(setup.subscriber->payloads()), lines);
  stats = publisher->stats();
  EXPECT_EQ(stats.delivered, lines.size());
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.reconnects, 0u);  // the first connection is not a reconnect
  EXPECT_TRUE(stats.connected);
}

// The broker stalls with a full window of messages sent and unacknowledged, is killed, and comes
// back: those messages, the ones published while it was away and the ones after all arrive.
TEST(MqttPublisher, BrokerRestartLosesNothingInFlightOrQueued) {
  BrokerWithSavedSubscriber setup;
  ASSERT_TRUE(setup.start());
  auto publisher = create_publisher(options_for(setup.broker.port()));
  ASSERT_NE(publisher, nullptr);

  const std::vector<std::string> before = records(0, 100);
  publish_all(*publisher, before);
  ASSERT_TRUE(publisher->flush(kDeliveryTimeout).is_ok());
  ASSERT_TRUE(setup.subscriber->wait_for_distinct(before.size()));

  setup.broker.stall();
  const std::vector<std::string> unacknowledged = records(100, 150);
  publish_all(*publisher, unacknowledged);
  ASSERT_TRUE(eventually([&] { return publisher->stats().in_flight == kMqttInFlightWindow; }))
      << "in flight: " << publisher->stats().in_flight;
  EXPECT_EQ(publisher->stats().queued, unacknowledged.size() - kMqttInFlightWindow);

  setup.broker.kill();
  ASSERT_TRUE(eventually([&] { return !publisher->stats().connected; }));
  const std::vector<std::string> while_away = records(250, 100);
  publish_all(*publisher, while_away);
  ASSERT_TRUE(setup.broker.restart());
  const std::vector<std::string> after = records(350, 100);
  publish_all(*publisher, after);

  const Status flushed = publisher->flush(kDeliveryTimeout);
  ASSERT_TRUE(flushed.is_ok()) << flushed.to_string();
  const std::vector<std::string> all = concat({before, unacknowledged, while_away, after});
  ASSERT_TRUE(setup.subscriber->wait_for_distinct(all.size()))
      << "received " << first_occurrences(setup.subscriber->payloads()).size() << " of " << all.size();
  EXPECT_EQ(first_occurrences(setup.subscriber->payloads()), all);
  const MqttStats stats = publisher->stats();
  EXPECT_GE(stats.reconnects, 1u);
  EXPECT_EQ(stats.published, all.size());
  EXPECT_EQ(stats.delivered, all.size());
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_TRUE(stats.connected);
}

TEST(MqttPublisher, FullBufferDropsTheOldestAndKeepsTheNewest) {
  BrokerWithSavedSubscriber setup;
  ASSERT_TRUE(setup.start());
  setup.broker.kill();
  MqttOptions options = options_for(setup.broker.port());
  options.max_queued_messages = 100;
  auto publisher = create_publisher(options);
  ASSERT_NE(publisher, nullptr);

  const std::vector<std::string> lines = records(0, 300);
  for (const std::string& line : lines) {
    publisher->publish(kTopic, line);
    ASSERT_LE(publisher->stats().queued, options.max_queued_messages);  // memory stays bounded
  }
  MqttStats stats = publisher->stats();
  EXPECT_EQ(stats.published, 300u);
  EXPECT_EQ(stats.dropped, 200u);
  EXPECT_EQ(stats.queued, 100u);

  ASSERT_TRUE(setup.broker.restart());
  ASSERT_TRUE(publisher->flush(kDeliveryTimeout).is_ok());
  const std::vector<std::string> newest(lines.begin() + 200, lines.end());
  ASSERT_TRUE(setup.subscriber->wait_for_distinct(newest.size()));
  EXPECT_EQ(first_occurrences(setup.subscriber->payloads()), newest);
  stats = publisher->stats();
  EXPECT_EQ(stats.delivered, 100u);
  EXPECT_EQ(stats.dropped, 200u);
}

// A broker that refuses the connection (CONNACK) is retried like one that is down, and says why.
TEST(MqttPublisher, RefusedConnectionIsRetriedAndExplained) {
  MosquittoProcess broker(MosquittoOptions{.allow_anonymous = false});
  ASSERT_TRUE(broker.start());
  auto publisher = create_publisher(options_for(broker.port()));
  ASSERT_NE(publisher, nullptr);
  publisher->publish(kTopic, record(0));
  ASSERT_TRUE(eventually([&] {
    return publisher->stats().last_error.find("not authorised") != std::string::npos;
  })) << publisher->stats().last_error;
  const MqttStats stats = publisher->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.queued, 1u);
  EXPECT_EQ(stats.delivered, 0u);
}

TEST(MqttPublisher, RefusesBadOptionsNamingTheKey) {
  struct Case {
    std::function<void(MqttOptions&)> change;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](MqttOptions& o) { o.qos = 5; }, "mqtt.qos must be 0, 1 or 2, not 5"},
      {[](MqttOptions& o) { o.host = ""; }, "mqtt.host"},
      {[](MqttOptions& o) { o.port = 0; }, "mqtt.port"},
      {[](MqttOptions& o) { o.port = 70000; }, "mqtt.port"},
      {[](MqttOptions& o) { o.keepalive_s = 2; }, "mqtt.keepalive_s"},
      {[](MqttOptions& o) { o.max_queued_messages = 0; }, "mqtt.max_queued_messages"},
      {[](MqttOptions& o) { o.reconnect_min = milliseconds(0); }, "mqtt.reconnect_min_ms"},
      {[](MqttOptions& o) { o.reconnect_max = milliseconds(100); }, "mqtt.reconnect_max_ms"},
      {[](MqttOptions& o) { o.client_id = "bad\xff"; }, "mqtt.client_id"},
      {[](MqttOptions& o) { o.password = "secret"; }, "mqtt.password"},
  };
  for (const Case& test_case : cases) {
    MqttOptions options;
    test_case.change(options);
    const auto publisher = MqttPublisher::create(options);
    ASSERT_FALSE(publisher.is_ok()) << test_case.expected;
    EXPECT_EQ(publisher.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(publisher.status().message().find(test_case.expected), std::string::npos)
        << publisher.status().message();
  }
}

TEST(MqttPublisher, UnresolvableHostIsAnError) {
  MqttOptions options;
  options.host = "no-such-host.invalid";
  const auto publisher = MqttPublisher::create(options);
  ASSERT_FALSE(publisher.is_ok());
  EXPECT_EQ(publisher.status().code(), StatusCode::kNotFound);
  EXPECT_NE(publisher.status().message().find("no-such-host.invalid"), std::string::npos);
}

// Nothing listens on the port: flush says how many messages are stuck, and closing the publisher
// waits no longer than kMqttCloseFlushTimeout for them.
TEST(MqttPublisher, FlushAndCloseAreBoundedWithoutBroker) {
  MosquittoProcess never_started;
  auto publisher = create_publisher(options_for(never_started.port()));
  ASSERT_NE(publisher, nullptr);
  publish_all(*publisher, records(0, 5));

  const auto flush_start = std::chrono::steady_clock::now();
  const Status flushed = publisher->flush(milliseconds(200));
  EXPECT_GE(std::chrono::steady_clock::now() - flush_start, milliseconds(200));
  EXPECT_EQ(flushed.code(), StatusCode::kTimeout);
  EXPECT_NE(flushed.message().find("5 messages not delivered"), std::string::npos) << flushed.message();
  EXPECT_NE(flushed.message().find("not connected"), std::string::npos) << flushed.message();

  const auto close_start = std::chrono::steady_clock::now();
  publisher.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - close_start, kMqttCloseFlushTimeout + milliseconds(1000));
}

TEST(MqttPublisher, UnpublishableTopicIsCountedNotSent) {
  MosquittoProcess never_started;
  auto publisher = create_publisher(options_for(never_started.port()));
  ASSERT_NE(publisher, nullptr);
  publisher->publish("fovea/+/cam1", "{}");
  publisher->publish("", "{}");
  const MqttStats stats = publisher->stats();
  EXPECT_EQ(stats.published, 2u);
  EXPECT_EQ(stats.rejected, 2u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_TRUE(publisher->flush(milliseconds(0)).is_ok());  // nothing waits for the broker
}

TEST(MqttTopic, OneSafeLevelPerSourceUnderThePrefix) {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"fovea", "cam1"}, "fovea/cam1"},
      {{"fovea/", "cam1"}, "fovea/cam1"},
      {{"/site//fovea/", "cam1"}, "site/fovea/cam1"},
      {{"fovea", "yard/north"}, "fovea/yard_north"},
      {{"fovea", "a+b#c"}, "fovea/a_b_c"},
      {{"fo+o/#", "x"}, "fo_o/_/x"},
      {{"fovea", std::string("a\0b\tc", 5)}, "fovea/a_b_c"},
      {{"fovea", ""}, "fovea/_"},
      {{"", "cam1"}, "cam1"},
      {{"", "$SYS"}, "_SYS"},
      {{"$SYS", "x"}, "_SYS/x"},
      {{"fovea", "$cam"}, "fovea/$cam"},
      {{"fovea", "caméra_ü"}, "fovea/caméra_ü"},
      {{"fovea", "bad\xff\xc3utf8\xe2\x82"}, "fovea/bad__utf8__"},
  };
  for (const auto& [input, expected] : cases) {
    const std::string topic = mqtt_topic(input.first, input.second);
    EXPECT_EQ(topic, expected) << "prefix '" << input.first << "', name '" << input.second << "'";
    EXPECT_EQ(mosquitto_pub_topic_check2(topic.data(), topic.size()), MOSQ_ERR_SUCCESS) << topic;
    EXPECT_EQ(mosquitto_validate_utf8(topic.data(), static_cast<int>(topic.size())), MOSQ_ERR_SUCCESS)
        << topic;
  }
}

}  // namespace
}  // namespace fovea::io
