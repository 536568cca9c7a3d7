// A real MQTT subscriber for the tests of MQTT output (issue 24): libmosquitto with its own network
// thread, subscribed at QoS 1 to a topic filter, keeping every message in arrival order. The thread
// reconnects by itself (every second) after the broker comes back; with a persistent session, a
// broker that saved it queues the messages for the subscriber meanwhile (MosquittoProcess).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

struct mosquitto;
struct mosquitto_message;

namespace fovea::testing {

// How long subscribe() waits for the SUBACK and the waits for messages wait at the most.
inline constexpr std::chrono::seconds kMqttSubscriberTimeout{10};

class MqttSubscriber {
 public:
  // `topic_filter` may hold wildcards ("site/+"). A persistent session (not a clean one) is kept
  // by the broker while the subscriber is away.
  MqttSubscriber(int port, std::string topic_filter, bool persistent_session = false);
  ~MqttSubscriber();  // disconnects and stops the network thread
  MqttSubscriber(const MqttSubscriber&) = delete;
  MqttSubscriber& operator=(const MqttSubscriber&) = delete;

  // Connects to 127.0.0.1:port, subscribes and waits for the broker's SUBACK.
  ::testing::AssertionResult subscribe();

  // Wait until `count` messages have arrived, or `count` different payloads (QoS 1 delivers at
  // least once: a message resent after a reconnect may arrive twice); false on the timeout.
  bool wait_for_messages(std::size_t count);
  bool wait_for_distinct(std::size_t count);

  // The payloads in arrival order, repeats included.
  std::vector<std::string> payloads() const;
  // The payloads by topic, each topic's in arrival order.
  std::map<std::string, std::vector<std::string>> payloads_by_topic() const;

 private:
  void on_subscribed();
  void on_message(const mosquitto_message* message);

  int port_;
  std::string topic_filter_;
  mosquitto* client_ = nullptr;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool subscribed_ = false;
  std::vector<std::string> payloads_;
  std::map<std::string, std::vector<std::string>> by_topic_;
  std::set<std::string> distinct_;
};

}  // namespace fovea::testing
