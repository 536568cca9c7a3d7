// A real mosquitto broker for tests: /usr/sbin/mosquitto on a free loopback port with a config
// file generated in a temporary folder of its own, which a test can stop, kill, stall and restart
// on the same port, as brokers do to the clients of a long-running flow.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/child_process.h"

namespace fovea::testing {

struct MosquittoOptions {
  // Keep the broker's state (subscriptions, persistent sessions and the messages queued for
  // them) across restarts, in the temporary folder. It is saved by save_state() (and by stop()),
  // so that a test can kill the broker and still find its subscriber's session after restart().
  bool persistence = false;
  // false: the broker refuses clients without a user name (CONNACK "not authorised").
  bool allow_anonymous = true;
};

class MosquittoProcess {
 public:
  explicit MosquittoProcess(MosquittoOptions options = {});
  ~MosquittoProcess();  // kills the broker, removes the folder
  MosquittoProcess(const MosquittoProcess&) = delete;
  MosquittoProcess& operator=(const MosquittoProcess&) = delete;

  // Starts the broker and waits (at most 5 s) until it accepts connections; a failure says why,
  // with the broker's log.
  ::testing::AssertionResult start();
  ::testing::AssertionResult restart() { return start(); }
  void stop();    // SIGTERM: the broker closes its connections and saves its state
  void kill();    // SIGKILL: connections drop as in a crash; unsaved state is lost
  void stall();   // SIGSTOP: connections stay open and nothing is answered
  void resume();  // SIGCONT after stall()
  // Asks the broker to write its state now (SIGUSR1) and waits (at most 5 s) until it has.
  ::testing::AssertionResult save_state();

  bool running() const { return child_.running(); }
  int port() const { return port_; }
  std::string log() const;

 private:
  ::testing::AssertionResult wait_until_accepting();
  void write_config() const;

  MosquittoOptions options_;
  std::filesystem::path folder_;
  int port_ = 0;
  ChildProcess child_;
};

}  // namespace fovea::testing
