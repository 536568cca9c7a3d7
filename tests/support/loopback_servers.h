// TCP servers on loopback ports for the network tests (live sources, brokers): a server that hands
// each connection to the test's code, one that never says a word and one that answers garbage, and
// a port nothing listens on. Plain sockets: no RTSP or MQTT library is needed to misbehave.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace fovea::testing {

// A TCP server on a free loopback port. An accept thread hands every connection to `serve`, which
// returns true to keep it open (until the server is destroyed) or false to have it closed.
class LoopbackTcpServer {
 public:
  explicit LoopbackTcpServer(std::function<bool(int connection_fd)> serve);
  ~LoopbackTcpServer();
  LoopbackTcpServer(const LoopbackTcpServer&) = delete;
  LoopbackTcpServer& operator=(const LoopbackTcpServer&) = delete;

  int port() const { return port_; }
  // rtsp://127.0.0.1:PORT/cam
  std::string rtsp_url() const;

 private:
  void accept_loop();

  std::function<bool(int)> serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<int> open_connections_;  // the accept thread's until it is joined
  std::thread thread_;
};

// Accepts every connection and never sends a byte: a client waits for an answer that never comes.
class SilentTcpServer : public LoopbackTcpServer {
 public:
  SilentTcpServer();
};

// Answers every connection with a few kilobytes of random bytes, then closes it.
class GarbageTcpServer : public LoopbackTcpServer {
 public:
  GarbageTcpServer();
};

// A loopback port nothing listens on (bound, then closed again): connecting is refused, and a
// server started on it next finds it free.
int unused_loopback_port();

}  // namespace fovea::testing
