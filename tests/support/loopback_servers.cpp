#include "support/loopback_servers.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace fovea::testing {
namespace {

// How often the accept thread looks for a stop.
constexpr int kPollIntervalMs = 10;

sockaddr_in loopback_address() {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

}  // namespace

LoopbackTcpServer::LoopbackTcpServer(std::function<bool(int)> serve) : serve_(std::move(serve)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback_address();
  socklen_t length = sizeof(address);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listen_fd_, 8) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "cannot listen on a loopback port: " << std::strerror(errno);
    return;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { accept_loop(); });
}

LoopbackTcpServer::~LoopbackTcpServer() {
  stopping_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
  for (int fd : open_connections_) close(fd);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
  }
}

std::string LoopbackTcpServer::rtsp_url() const {
  return "rtsp://127.0.0.1:" + std::to_string(port_) + "/cam";
}

void LoopbackTcpServer::accept_loop() {
  while (!stopping_) {
    pollfd pending{listen_fd_, POLLIN, 0};
    if (poll(&pending, 1, kPollIntervalMs) <= 0) {
      continue;
    }
    const int connection = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      continue;
    }
    if (serve_(connection)) {
      open_connections_.push_back(connection);
    } else {
      close(connection);
    }
  }
}

SilentTcpServer::SilentTcpServer() : LoopbackTcpServer([](int) { return true; }) {}

// The client speaks first (an RTSP OPTIONS request); its request is read before the answer, so
// that the close after it is an orderly end (FIN) and the client reads all of the garbage, where a
// close with unread input would reset the connection instead.
GarbageTcpServer::GarbageTcpServer()
    : LoopbackTcpServer([](int connection) {
        pollfd request{connection, POLLIN, 0};
        char discarded[4096];
        if (poll(&request, 1, 1000) > 0) {
          [[maybe_unused]] const ssize_t ignored = read(connection, discarded, sizeof(discarded));
        }
        std::mt19937 random(24);  // fixed: every run sends the same garbage
        std::vector<unsigned char> garbage(4096);
        for (unsigned char& byte : garbage) byte = static_cast<unsigned char>(random());
        [[maybe_unused]] const ssize_t sent = send(connection, garbage.data(), garbage.size(), MSG_NOSIGNAL);
        shutdown(connection, SHUT_WR);
        return false;
      }) {}

int unused_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback_address();
  socklen_t length = sizeof(address);
  const bool bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) close(fd);
  if (!bound) {
    ADD_FAILURE() << "cannot bind a loopback port: " << std::strerror(errno);
    return 0;
  }
  return ntohs(address.sin_port);
}

}  // namespace fovea::testing
