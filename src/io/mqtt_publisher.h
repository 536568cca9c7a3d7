// Live metadata to an MQTT broker (libmosquitto): one message per frame record, a topic per
// source. Built for a flow that runs for weeks against a broker that restarts: publish() never
// waits for the network, messages wait in a bounded buffer while the broker is away (the oldest
// are dropped and counted when it is full), the connection is retried with backoff for as long as
// it takes, and QoS 1 messages sent but not yet acknowledged when a connection drops are sent
// again on the next one. A broker that is down at start is not an error; a malformed option or a
// host name that does not resolve is. mosquitto's headers stay in mqtt_publisher.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fovea::io {

struct MqttOptions {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string client_id;  // empty: "fovea-<pid>"
  int qos = 1;
  int keepalive_s = 30;
  // Messages that wait for the broker (not yet sent). Bounds memory while the broker is away;
  // at most kMqttInFlightWindow more are sent and waiting for their acknowledgement.
  std::size_t max_queued_messages = 10000;
  // Delay before the first retry after a failed connection; it doubles up to reconnect_max and
  // returns to reconnect_min once a connection succeeds.
  std::chrono::milliseconds reconnect_min{500};
  std::chrono::milliseconds reconnect_max{10000};
  std::optional<std::string> username;
  std::optional<std::string> password;
};

// Messages handed to the broker connection and not yet acknowledged, at most. It bounds
// libmosquitto's own queue, which has no limit, and is the in-flight maximum it is given, so every
// handed message is on the wire. 20 is mosquitto's default max_inflight_messages, which the broker
// also applies to the QoS 2 messages an MQTT 3.1.1 client sends it: with more in flight,
// mosquitto 2.0.11 completed the QoS 2 handshake for messages it never forwarded (the QoS 2 test
// lost a third of them with 64). At a LAN's ~1 ms round trip, 20 still carries thousands of
// records per second.
inline constexpr std::size_t kMqttInFlightWindow = 20;

// kInvalidArgument naming the key ("mqtt.qos must be 0, 1 or 2, not 5") for the first bad value.
Status validate_mqtt_options(const MqttOptions& options);

struct MqttStats {
  std::uint64_t published = 0;   // handed to publish()
  std::uint64_t delivered = 0;   // acknowledged by the broker (QoS 0: written to the socket)
  std::uint64_t dropped = 0;     // pushed out of a full buffer (the oldest first), or QoS 0 messages
                                 // lost with a connection
  std::uint64_t rejected = 0;    // a topic or payload MQTT cannot carry (last_error says which)
  std::size_t queued = 0;        // waiting for the broker now
  std::size_t in_flight = 0;     // sent, waiting for the acknowledgement now
  std::uint64_t reconnects = 0;  // connections made again after one was lost
  bool connected = false;
  std::string last_error;  // the latest connection failure or rejection; empty when none
};

class MqttPublisher {
 public:
  // Validates `options`, resolves the host and starts connecting in the background (a network
  // thread of its own). kInvalidArgument for bad options, kNotFound for a host that does not
  // resolve; a broker that refuses or does not answer is retried, not an error.
  static Result<std::unique_ptr<MqttPublisher>> create(const MqttOptions& options);
  // Waits up to kMqttCloseFlushTimeout for the buffer to drain, then disconnects cleanly.
  virtual ~MqttPublisher() = default;

  // Queues one message and returns: it never waits for the network or the broker. When the
  // buffer is full the oldest waiting message is dropped. Thread-safe.
  virtual void publish(std::string topic, std::string payload) = 0;
  virtual MqttStats stats() const = 0;
  // Waits until no message is waiting or in flight (for a flow's end: publishing meanwhile extends
  // the wait): kTimeout saying how many are undelivered when `timeout` passes first. Thread-safe.
  virtual Status flush(std::chrono::milliseconds timeout) = 0;
};

// How long the destructor waits for undelivered messages: short, so that a flow with its broker
// down still ends promptly; what is left is logged as lost.
inline constexpr std::chrono::milliseconds kMqttCloseFlushTimeout{2000};

// The topic of a source's records: `prefix` + "/" + the source's name, as one topic level.
// MQTT topics must not contain the wildcards '+' and '#' or NUL, and empty levels make topics
// that look alike differ ("a//b" is not "a/b"), so: the prefix's empty levels are dropped; in the
// prefix's levels and in the name, '+', '#', control characters (NUL included) become '_', and
// so does a '$' that would start the topic (reserved for the broker's own); in the name '/' too,
// so that every source is exactly one level under the prefix and `prefix/+` subscribes to all of
// them. Bytes that are not valid UTF-8 become '_'. An empty name becomes "_"; an empty prefix
// leaves the name alone.
std::string mqtt_topic(std::string_view prefix, std::string_view source_name);

}  // namespace fovea::io
