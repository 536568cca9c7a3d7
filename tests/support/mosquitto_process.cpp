#include "support/mosquitto_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "support/cli_process.h"
#include "support/loopback_servers.h"

namespace fovea::testing {
namespace {

constexpr const char* kMosquittoPath = "/usr/sbin/mosquitto";
constexpr auto kStartTimeout = std::chrono::seconds(5);
constexpr auto kPollInterval = std::chrono::milliseconds(10);

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

bool accepts_connections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const sockaddr_in address = loopback(port);
  const bool connected = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return connected;
}

}  // namespace

MosquittoProcess::MosquittoProcess(MosquittoOptions options)
    : options_(options), port_(unused_loopback_port()) {
  std::string pattern = (std::filesystem::temp_directory_path() / "fovea-mosquitto-XXXXXX").string();
  if (mkdtemp(pattern.data())) folder_ = pattern;
}

MosquittoProcess::~MosquittoProcess() {
  kill();
  if (!folder_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
}

::testing::AssertionResult MosquittoProcess::start() {
  if (folder_.empty() || port_ == 0) {
    return ::testing::AssertionFailure() << "no temporary folder or free port for mosquitto";
  }
  if (running()) return ::testing::AssertionFailure() << "mosquitto is already running";
  write_config();
  const Status started =
      child_.start(kMosquittoPath, {"-c", (folder_ / "mosquitto.conf").string()}, folder_ / "stdout.log");
  if (!started.is_ok()) return ::testing::AssertionFailure() << started.to_string();
  return wait_until_accepting();
}

::testing::AssertionResult MosquittoProcess::wait_until_accepting() {
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (child_.exited()) {
      return ::testing::AssertionFailure() << "mosquitto exited at start:\n" << log();
    }
    if (accepts_connections(port_)) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(kPollInterval);
  }
  kill();
  return ::testing::AssertionFailure() << "mosquitto did not accept connections on port " << port_
                                       << " within " << kStartTimeout.count() << " s:\n"
                                       << log();
}

void MosquittoProcess::stop() {
  child_.terminate(kStartTimeout);
}

void MosquittoProcess::kill() {
  child_.kill();
}

void MosquittoProcess::stall() {
  child_.stall();
}

void MosquittoProcess::resume() {
  child_.resume();
}

::testing::AssertionResult MosquittoProcess::save_state() {
  if (!options_.persistence || !running()) {
    return ::testing::AssertionFailure() << "save_state needs a running broker with persistence";
  }
  // mosquitto writes mosquitto.db.new and renames it, so the file appears complete.
  const std::filesystem::path database = folder_ / "mosquitto.db";
  std::error_code ignored;
  std::filesystem::remove(database, ignored);
  child_.signal(SIGUSR1);
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(database)) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(kPollInterval);
  }
  return ::testing::AssertionFailure()
         << "mosquitto did not save its state within " << kStartTimeout.count() << " s:\n"
         << log();
}

std::string MosquittoProcess::log() const {
  return read_text(folder_ / "broker.log") + read_text(folder_ / "stdout.log");
}

void MosquittoProcess::write_config() const {
  std::ofstream config(folder_ / "mosquitto.conf");
  config << "listener " << port_ << " 127.0.0.1\n"
         << "allow_anonymous " << (options_.allow_anonymous ? "true" : "false") << "\n"
         << "persistence " << (options_.persistence ? "true" : "false") << "\n"
         << "persistence_location " << folder_.string()
         << "/\n"
         // The default (1000) would drop messages queued for a subscriber that is reconnecting
         // after a restart; the tests count every message.
         << "max_queued_messages 1000000\n"
         << "log_dest file " << (folder_ / "broker.log").string() << "\n";
  // Run as root (a container's tests), mosquitto would switch to the user "mosquitto", which
  // cannot write to this folder.
  if (geteuid() == 0) config << "user root\n";
}

}  // namespace fovea::testing
