#include "support/mqtt_subscriber.h"

#include <mosquitto.h>
#include <unistd.h>

#include <atomic>
#include <utility>

namespace fovea::testing {
namespace {

constexpr int kKeepaliveS = 30;

void init_mosquitto_once() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

// Unique per process and per subscriber: the broker drops a client whose id connects again.
std::string next_client_id() {
  static std::atomic<int> instances{0};
  return "fovea-test-subscriber-" + std::to_string(getpid()) + "-" + std::to_string(++instances);
}

}  // namespace

MqttSubscriber::MqttSubscriber(int port, std::string topic_filter, bool persistent_session)
    : port_(port), topic_filter_(std::move(topic_filter)) {
  init_mosquitto_once();
  client_ = mosquitto_new(next_client_id().c_str(), /*clean_session=*/!persistent_session, this);
  mosquitto_subscribe_callback_set(client_, [](mosquitto*, void* self, int, int, const int*) {
    static_cast<MqttSubscriber*>(self)->on_subscribed();
  });
  mosquitto_message_callback_set(client_, [](mosquitto*, void* self, const mosquitto_message* message) {
    static_cast<MqttSubscriber*>(self)->on_message(message);
  });
}

MqttSubscriber::~MqttSubscriber() {
  mosquitto_disconnect(client_);
  mosquitto_loop_stop(client_, /*force=*/true);
  mosquitto_destroy(client_);
}

::testing::AssertionResult MqttSubscriber::subscribe() {
  if (const int rc = mosquitto_connect(client_, "127.0.0.1", port_, kKeepaliveS); rc != MOSQ_ERR_SUCCESS) {
    return ::testing::AssertionFailure() << "subscriber connect: " << mosquitto_strerror(rc);
  }
  mosquitto_loop_start(client_);
  if (const int rc = mosquitto_subscribe(client_, nullptr, topic_filter_.c_str(), /*qos=*/1);
      rc != MOSQ_ERR_SUCCESS) {
    return ::testing::AssertionFailure() << "subscribe: " << mosquitto_strerror(rc);
  }
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, kMqttSubscriberTimeout, [&] { return subscribed_; })) {
    return ::testing::AssertionFailure() << "no SUBACK";
  }
  return ::testing::AssertionSuccess();
}

bool MqttSubscriber::wait_for_messages(std::size_t count) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, kMqttSubscriberTimeout, [&] { return payloads_.size() >= count; });
}

bool MqttSubscriber::wait_for_distinct(std::size_t count) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, kMqttSubscriberTimeout, [&] { return distinct_.size() >= count; });
}

std::vector<std::string> MqttSubscriber::payloads() const {
  std::lock_guard lock(mutex_);
  return payloads_;
}

std::map<std::string, std::vector<std::string>> MqttSubscriber::payloads_by_topic() const {
  std::lock_guard lock(mutex_);
  return by_topic_;
}

void MqttSubscriber::on_subscribed() {
  {
    std::lock_guard lock(mutex_);
    subscribed_ = true;
  }
  changed_.notify_all();
}

void MqttSubscriber::on_message(const mosquitto_message* message) {
  {
    std::lock_guard lock(mutex_);
    std::string payload(static_cast<const char*>(message->payload),
                        static_cast<std::size_t>(message->payloadlen));
    by_topic_[message->topic].push_back(payload);
    distinct_.insert(payload);
    payloads_.push_back(std::move(payload));
  }
  changed_.notify_all();
}

}  // namespace fovea::testing
