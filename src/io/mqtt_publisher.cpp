// MqttPublisher on libmosquitto 2.0. One network thread owns the connection: it connects, reads,
// writes, keeps the connection alive, reconnects with backoff and hands waiting messages to the
// connection. Callers only touch the buffer under a mutex and wake the thread through an eventfd.
// libmosquitto is told the application is threaded (mosquitto_threaded_set), so mosquitto_publish
// only queues a packet and never writes the socket; the thread writes when poll says it can.
//
// Resending after a reconnect is libmosquitto's: a QoS 1/2 message stays in its in-flight list
// until acknowledged, and a new connection's CONNACK sends the unacknowledged ones again
// (message__reconnect_reset and message__retry_check in lib/messages_mosq.c), so the window of
// messages handed to it is never lost with a connection. The broker tests check this.
#include "io/mqtt_publisher.h"

#include <mosquitto.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "core/log.h"

namespace fovea::io {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Each kind of repeating log line (failed attempts, lost and regained connections, drops,
// rejections) gets at most a few lines per minute: a broker down for an hour, or one that flaps,
// logs about 60 lines about it, not one per retry.
constexpr auto kLogInterval = std::chrono::seconds(60);
// poll's timeout while a connection is open: libmosquitto's keepalive counts whole seconds.
constexpr int kPollTimeoutMs = 1000;
// How long a clean disconnect may take to write its DISCONNECT packet at close.
constexpr milliseconds kDisconnectTimeout{500};
// MQTT's own limits: a UTF-8 string (topic, client id) has a 16-bit length, a payload fits the
// 28-bit remaining length.
constexpr std::size_t kMaxStringBytes = 65535;
constexpr std::size_t kMaxPayloadBytes = 268435455;

// Lets a repeating event into the log at most `burst` times per kLogInterval and counts the ones
// held back, for the next line that gets through to mention.
class LogThrottle {
 public:
  explicit LogThrottle(int burst) : burst_(burst) {}

  // Whether to log this occurrence; `held_back` gets how many were not logged since the last one.
  bool allow(std::uint64_t* held_back) {
    const auto now = Clock::now();
    if (logged_in_window_ == 0 || now - window_start_ >= kLogInterval) {
      window_start_ = now;
      logged_in_window_ = 0;
    }
    if (logged_in_window_ == burst_) {
      ++held_back_;
      return false;
    }
    ++logged_in_window_;
    *held_back = std::exchange(held_back_, 0);
    return true;
  }

 private:
  const int burst_;
  Clock::time_point window_start_;
  int logged_in_window_ = 0;
  std::uint64_t held_back_ = 0;
};

std::string held_back_note(std::uint64_t held_back) {
  return held_back == 0 ? std::string() : fmt::format(" ({} more like it not logged)", held_back);
}

// Logs `message` unless `throttle` holds it back.
void log_throttled(LogThrottle& throttle, LogLevel level, const std::string& message) {
  std::uint64_t held_back = 0;
  if (throttle.allow(&held_back)) log(level, "{}{}", message, held_back_note(held_back));
}

// libmosquitto's messages end with a period; ours put them inside sentences.
std::string without_period(std::string message) {
  if (!message.empty() && message.back() == '.') message.pop_back();
  return message;
}

// Why a libmosquitto call failed; `error_number` is errno right after the call.
std::string describe(int rc, int error_number) {
  return without_period(rc == MOSQ_ERR_ERRNO ? std::strerror(error_number) : mosquitto_strerror(rc));
}

bool valid_utf8(std::string_view text) {
  return text.size() <= kMaxStringBytes &&
         mosquitto_validate_utf8(text.data(), static_cast<int>(text.size())) == MOSQ_ERR_SUCCESS;
}

Status check_message(std::string_view topic, std::string_view payload) {
  if (topic.empty() || !valid_utf8(topic) ||
      mosquitto_pub_topic_check2(topic.data(), topic.size()) != MOSQ_ERR_SUCCESS) {
    return make_error(StatusCode::kInvalidArgument, "mqtt: '", std::string(topic),
                      "' is not a topic one can publish to (empty, a wildcard, not UTF-8 or too long)");
  }
  if (payload.size() > kMaxPayloadBytes) {
    return make_error(StatusCode::kInvalidArgument, "mqtt: a ", std::to_string(payload.size()),
                      "-byte payload for '", std::string(topic), "' is over MQTT's limit of ",
                      std::to_string(kMaxPayloadBytes), " bytes");
  }
  return Status::ok();
}

Status invalid_option(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

void init_mosquitto_once() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

struct MosquittoDeleter {
  void operator()(mosquitto* client) const { mosquitto_destroy(client); }
};

class FileDescriptor {
 public:
  FileDescriptor() = default;
  ~FileDescriptor() { reset(-1); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct PendingMessage {
  std::string topic;
  std::string payload;
};

class MosquittoPublisher final : public MqttPublisher {
 public:
  explicit MosquittoPublisher(const MqttOptions& options)
      : options_(options),
        broker_(fmt::format("{}:{}", options.host, options.port)),
        retry_delay_(options.reconnect_min) {}
  ~MosquittoPublisher() override;
  MosquittoPublisher(const MosquittoPublisher&) = delete;
  MosquittoPublisher& operator=(const MosquittoPublisher&) = delete;

  // Creates the client, starts connecting and starts the network thread.
  Status start();

  void publish(std::string topic, std::string payload) override;
  MqttStats stats() const override;
  Status flush(milliseconds timeout) override;

 private:
  Status configure_client();
  void set_callbacks();
  void count_rejected(const std::string& reason);
  void wake();

  // The network thread.
  void run();
  bool wait_until(Clock::time_point when);  // false when stopping
  void drain_wake();
  void try_connect();
  void service_connection();
  void send_waiting();
  void disconnect_cleanly();
  void on_connect(int rc);
  void on_disconnect(int rc, int error_number);
  void on_publish();
  void connection_failed(const std::string& reason);

  const MqttOptions options_;
  const std::string broker_;  // "host:port", for messages
  std::unique_ptr<mosquitto, MosquittoDeleter> client_;
  FileDescriptor wake_fd_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Owned by the network thread (and by start() before it runs).
  bool connected_ = false;
  bool ever_connected_ = false;
  std::string refusal_;  // the broker's reason when its CONNACK refused us
  milliseconds retry_delay_;
  Clock::time_point next_attempt_;
  Clock::time_point down_since_ = Clock::now();
  std::uint64_t failed_attempts_ = 0;
  // A failed attempt is logged once a minute at most; a lost or regained connection (rarer, and
  // what an operator looks for) a few times.
  LogThrottle failure_log_{1};
  LogThrottle state_log_{4};

  mutable std::mutex mutex_;
  std::condition_variable drained_;  // a message left the buffer or the window for good
  std::deque<PendingMessage> waiting_;
  MqttStats stats_;  // `queued` is waiting_.size(), filled in by stats()
  LogThrottle drop_log_{1};
  LogThrottle reject_log_{1};
};

Status MosquittoPublisher::start() {
  const std::string client_id =
      options_.client_id.empty() ? fmt::format("fovea-{}", getpid()) : options_.client_id;
  client_.reset(mosquitto_new(client_id.c_str(), /*clean_session=*/true, this));
  if (!client_) {
    return make_error(StatusCode::kResourceExhausted, "mqtt: cannot create a client: ", std::strerror(errno));
  }
  wake_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (wake_fd_.get() < 0) return make_error(StatusCode::kIoError, "mqtt: eventfd: ", std::strerror(errno));
  FOVEA_TRY(configure_client());
  set_callbacks();

  const int rc =
      mosquitto_connect_async(client_.get(), options_.host.c_str(), options_.port, options_.keepalive_s);
  const int error_number = errno;
  if (rc == MOSQ_ERR_EAI) {
    // libmosquitto leaves getaddrinfo's code in errno.
    return make_error(StatusCode::kNotFound, "mqtt.host '", options_.host,
                      "' does not resolve: ", gai_strerror(error_number));
  }
  if (rc == MOSQ_ERR_ERRNO) {
    connection_failed(describe(rc, error_number));  // no broker there yet: retried like a restart
  } else if (rc != MOSQ_ERR_SUCCESS) {
    return make_error(StatusCode::kInvalidArgument, "mqtt: cannot connect to ", broker_, ": ",
                      describe(rc, error_number));
  }
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

Status MosquittoPublisher::configure_client() {
  mosquitto* client = client_.get();
  mosquitto_threaded_set(client, true);
  int rc = mosquitto_int_option(client, MOSQ_OPT_SEND_MAXIMUM, static_cast<int>(kMqttInFlightWindow));
  if (rc == MOSQ_ERR_SUCCESS && options_.username) {
    rc = mosquitto_username_pw_set(client, options_.username->c_str(),
                                   options_.password ? options_.password->c_str() : nullptr);
  }
  if (rc != MOSQ_ERR_SUCCESS) {
    return make_error(StatusCode::kInvalidArgument, "mqtt: ", describe(rc, errno));
  }
  return Status::ok();
}

void MosquittoPublisher::set_callbacks() {
  mosquitto_connect_callback_set(client_.get(), [](mosquitto*, void* self, int rc) {
    static_cast<MosquittoPublisher*>(self)->on_connect(rc);
  });
  mosquitto_disconnect_callback_set(client_.get(), [](mosquitto*, void* self, int rc) {
    static_cast<MosquittoPublisher*>(self)->on_disconnect(rc, errno);
  });
  mosquitto_publish_callback_set(client_.get(), [](mosquitto*, void* self, int) {
    static_cast<MosquittoPublisher*>(self)->on_publish();
  });
}

MosquittoPublisher::~MosquittoPublisher() {
  if (!thread_.joinable()) return;  // start() failed: nothing was published
  if (const Status flushed = flush(kMqttCloseFlushTimeout); !flushed.is_ok()) {
    log_warn("{}; closing, they are lost", flushed.message());
  }
  stopping_ = true;
  wake();
  thread_.join();
}

void MosquittoPublisher::publish(std::string topic, std::string payload) {
  if (const Status problem = check_message(topic, payload); !problem.is_ok()) {
    {
      std::lock_guard lock(mutex_);
      ++stats_.published;
    }
    count_rejected(problem.message());
    return;
  }
  bool log_drop = false;
  std::uint64_t held_back = 0;
  std::uint64_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    ++stats_.published;
    if (waiting_.size() >= options_.max_queued_messages) {
      waiting_.pop_front();
      dropped = ++stats_.dropped;
      log_drop = drop_log_.allow(&held_back);
    }
    waiting_.push_back({std::move(topic), std::move(payload)});
  }
  if (log_drop) {
    log_warn("mqtt: the buffer for broker {} is full ({} messages): dropping the oldest, {} so far{}",
             broker_, options_.max_queued_messages, dropped, held_back_note(held_back));
  }
  wake();
}

void MosquittoPublisher::count_rejected(const std::string& reason) {
  bool log_it = false;
  std::uint64_t held_back = 0;
  {
    std::lock_guard lock(mutex_);
    ++stats_.rejected;
    stats_.last_error = reason;
    log_it = reject_log_.allow(&held_back);
  }
  drained_.notify_all();
  if (log_it) log_warn("{}: not published{}", reason, held_back_note(held_back));
}

MqttStats MosquittoPublisher::stats() const {
  std::lock_guard lock(mutex_);
  MqttStats stats = stats_;
  stats.queued = waiting_.size();
  return stats;
}

Status MosquittoPublisher::flush(milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (drained_.wait_for(lock, timeout, [&] { return waiting_.empty() && stats_.in_flight == 0; })) {
    return Status::ok();
  }
  const std::string state = stats_.connected ? "connected" : "not connected: " + stats_.last_error;
  return make_error(StatusCode::kTimeout, "mqtt: ", std::to_string(waiting_.size() + stats_.in_flight),
                    " messages not delivered to broker ", broker_, " within ",
                    std::to_string(timeout.count()), " ms (", state, ")");
}

void MosquittoPublisher::wake() {
  const std::uint64_t one = 1;
  // Cannot block (EFD_NONBLOCK); a full counter already means "wake up".
  [[maybe_unused]] const ssize_t written = write(wake_fd_.get(), &one, sizeof(one));
}

void MosquittoPublisher::drain_wake() {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t read_bytes = read(wake_fd_.get(), &count, sizeof(count));
}

void MosquittoPublisher::run() {
  while (!stopping_) {
    if (mosquitto_socket(client_.get()) < 0) {  // neither connected nor connecting
      if (!wait_until(next_attempt_)) break;
      try_connect();
      continue;
    }
    service_connection();
    send_waiting();
  }
  disconnect_cleanly();
}

bool MosquittoPublisher::wait_until(Clock::time_point when) {
  while (!stopping_) {
    const auto now = Clock::now();
    if (now >= when) return true;
    const auto wait_ms = std::chrono::ceil<milliseconds>(when - now).count();
    pollfd wake{wake_fd_.get(), POLLIN, 0};
    if (poll(&wake, 1, static_cast<int>(std::min<std::int64_t>(wait_ms, INT_MAX))) > 0) drain_wake();
  }
  return false;
}

void MosquittoPublisher::try_connect() {
  refusal_.clear();
  const int rc = mosquitto_reconnect_async(client_.get());
  if (rc != MOSQ_ERR_SUCCESS) connection_failed(describe(rc, errno));
}

void MosquittoPublisher::service_connection() {
  mosquitto* client = client_.get();
  const short socket_events = POLLIN | (mosquitto_want_write(client) ? POLLOUT : 0);
  pollfd fds[2] = {{mosquitto_socket(client), socket_events, 0}, {wake_fd_.get(), POLLIN, 0}};
  if (poll(fds, 2, kPollTimeoutMs) < 0) return;  // EINTR: go round again
  if (fds[1].revents & POLLIN) drain_wake();
  // Errors close the socket and arrive through on_disconnect; the loop then reconnects.
  if ((fds[0].revents & (POLLIN | POLLERR | POLLHUP)) && mosquitto_loop_read(client, 1) != MOSQ_ERR_SUCCESS) {
    return;
  }
  if (mosquitto_socket(client) >= 0 && mosquitto_want_write(client) &&
      mosquitto_loop_write(client, 1) != MOSQ_ERR_SUCCESS) {
    return;
  }
  if (mosquitto_socket(client) >= 0) mosquitto_loop_misc(client);
}

void MosquittoPublisher::send_waiting() {
  while (connected_) {
    PendingMessage message;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty() || stats_.in_flight >= kMqttInFlightWindow) return;
      message = std::move(waiting_.front());
      waiting_.pop_front();
      ++stats_.in_flight;
    }
    const int rc = mosquitto_publish(client_.get(), nullptr, message.topic.c_str(),
                                     static_cast<int>(message.payload.size()), message.payload.data(),
                                     options_.qos, /*retain=*/false);
    if (rc != MOSQ_ERR_SUCCESS) {
      {
        std::lock_guard lock(mutex_);
        --stats_.in_flight;
      }
      count_rejected(fmt::format("mqtt: publishing to '{}': {}", message.topic, describe(rc, errno)));
    }
  }
}

void MosquittoPublisher::disconnect_cleanly() {
  mosquitto* client = client_.get();
  if (!connected_ || mosquitto_disconnect(client) != MOSQ_ERR_SUCCESS) return;
  const auto deadline = Clock::now() + kDisconnectTimeout;
  while (mosquitto_socket(client) >= 0 && Clock::now() < deadline) {
    pollfd writable{mosquitto_socket(client), POLLOUT, 0};
    poll(&writable, 1, static_cast<int>(kDisconnectTimeout.count()));
    // Writing the DISCONNECT packet closes the socket.
    if (mosquitto_loop_write(client, 1) != MOSQ_ERR_SUCCESS) return;
  }
}

void MosquittoPublisher::on_connect(int rc) {
  if (rc != 0) {  // libmosquitto closes the socket next and reports it through on_disconnect
    refusal_ = without_period(mosquitto_connack_string(rc));
    return;
  }
  connected_ = true;
  retry_delay_ = options_.reconnect_min;
  const bool again = std::exchange(ever_connected_, true);
  std::size_t waiting = 0;
  {
    std::lock_guard lock(mutex_);
    stats_.connected = true;
    if (again) ++stats_.reconnects;
    waiting = waiting_.size() + stats_.in_flight;
  }
  const double down_s = std::chrono::duration<double>(Clock::now() - down_since_).count();
  log_throttled(
      state_log_, LogLevel::kInfo,
      fmt::format("mqtt: {} broker {} after {:.1f} s and {} failed attempts; {} messages to send",
                  again ? "reconnected to" : "connected to", broker_, down_s, failed_attempts_, waiting));
  failed_attempts_ = 0;
}

void MosquittoPublisher::on_disconnect(int rc, int error_number) {
  if (!connected_) {  // a connection attempt failed
    connection_failed(refusal_.empty() ? describe(rc, error_number) : refusal_);
    return;
  }
  connected_ = false;
  down_since_ = Clock::now();
  next_attempt_ = down_since_ + retry_delay_;
  std::size_t in_flight = 0;
  {
    std::lock_guard lock(mutex_);
    stats_.connected = false;
    if (options_.qos == 0) {  // libmosquitto discards unsent QoS 0 packets when it reconnects
      stats_.dropped += stats_.in_flight;
      stats_.in_flight = 0;
    }
    in_flight = stats_.in_flight;
    if (rc != MOSQ_ERR_SUCCESS) stats_.last_error = describe(rc, error_number);
  }
  drained_.notify_all();
  if (rc == MOSQ_ERR_SUCCESS) return;  // our own disconnect at close
  log_throttled(state_log_, LogLevel::kWarn,
                fmt::format("mqtt: lost the connection to broker {}: {}; reconnecting ({} unacknowledged "
                            "messages will be sent again)",
                            broker_, describe(rc, error_number), in_flight));
}

void MosquittoPublisher::on_publish() {
  {
    std::lock_guard lock(mutex_);
    --stats_.in_flight;
    ++stats_.delivered;
  }
  drained_.notify_all();
}

void MosquittoPublisher::connection_failed(const std::string& reason) {
  ++failed_attempts_;
  next_attempt_ = Clock::now() + retry_delay_;
  const milliseconds delay = retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, options_.reconnect_max);
  std::size_t waiting = 0;
  {
    std::lock_guard lock(mutex_);
    stats_.last_error = reason;
    waiting = waiting_.size() + stats_.in_flight;
  }
  log_throttled(
      failure_log_, LogLevel::kWarn,
      fmt::format("mqtt: cannot reach broker {}: {} (attempt {}); retrying in {} ms; {} messages "
                  "waiting, at most {} kept",
                  broker_, reason, failed_attempts_, delay.count(), waiting, options_.max_queued_messages));
}

// One level of a topic: '/', wildcards, control characters and invalid UTF-8 become '_'.
std::string topic_level(std::string_view text) {
  std::string safe;
  safe.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
    // libmosquitto's own check, one character at a time: controls, surrogates, overlong forms.
    if (i + length > text.size() || !valid_utf8(text.substr(i, length)) || text[i] == '+' || text[i] == '#' ||
        text[i] == '/') {
      safe.push_back('_');
      ++i;
      continue;
    }
    safe.append(text.substr(i, length));
    i += length;
  }
  return safe;
}

}  // namespace

Status validate_mqtt_options(const MqttOptions& options) {
  if (options.host.empty()) return invalid_option("mqtt.host must not be empty");
  if (options.port < 1 || options.port > 65535) {
    return invalid_option(fmt::format("mqtt.port must be 1..65535, not {}", options.port));
  }
  if (!options.client_id.empty() && !valid_utf8(options.client_id)) {
    return invalid_option("mqtt.client_id must be UTF-8 text of at most 65535 bytes");
  }
  if (options.qos < 0 || options.qos > 2) {
    return invalid_option(fmt::format("mqtt.qos must be 0, 1 or 2, not {}", options.qos));
  }
  // libmosquitto refuses a keepalive under 5 s; 0 (none) would leave a dead broker unnoticed.
  if (options.keepalive_s < 5 || options.keepalive_s > 65535) {
    return invalid_option(
        fmt::format("mqtt.keepalive_s must be 5..65535 seconds, not {}", options.keepalive_s));
  }
  if (options.max_queued_messages < 1)
    return invalid_option("mqtt.max_queued_messages must be at least 1, not 0");
  if (options.reconnect_min.count() < 1) {
    return invalid_option(
        fmt::format("mqtt.reconnect_min_ms must be at least 1 ms, not {}", options.reconnect_min.count()));
  }
  if (options.reconnect_max < options.reconnect_min) {
    return invalid_option(
        fmt::format("mqtt.reconnect_max_ms ({}) must not be less than mqtt.reconnect_min_ms ({})",
                    options.reconnect_max.count(), options.reconnect_min.count()));
  }
  if (options.username && !valid_utf8(*options.username)) {
    return invalid_option("mqtt.username must be UTF-8 text of at most 65535 bytes");
  }
  if (options.password && !options.username) return invalid_option("mqtt.password needs mqtt.username");
  return Status::ok();
}

Result<std::unique_ptr<MqttPublisher>> MqttPublisher::create(const MqttOptions& options) {
  FOVEA_TRY(validate_mqtt_options(options));
  init_mosquitto_once();
  auto publisher = std::make_unique<MosquittoPublisher>(options);
  FOVEA_TRY(publisher->start());
  return std::unique_ptr<MqttPublisher>(std::move(publisher));
}

std::string mqtt_topic(std::string_view prefix, std::string_view source_name) {
  std::string topic;
  std::size_t start = 0;
  while (start <= prefix.size()) {
    const std::size_t end = std::min(prefix.find('/', start), prefix.size());
    if (end > start) topic += topic_level(prefix.substr(start, end - start)) + "/";
    start = end + 1;
  }
  topic += source_name.empty() ? "_" : topic_level(source_name);
  if (topic.front() == '$') topic.front() = '_';
  return topic;
}

}  // namespace fovea::io
