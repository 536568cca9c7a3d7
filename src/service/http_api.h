// The REST API of `fovea serve`: an HTTP server (cpp-httplib) in front of a ServiceBackend.
//
//   GET    /sources        200 {"sources": [source, ...]}
//   POST   /sources        201 source, Location: /sources/{id}; the body is the source's JSON object
//   DELETE /sources/{id}   204
//   GET    /stats          200 the run report's JSON, live
//   GET    /health         200 {"status": "ready"} or {"status": "degraded", "reason": ...};
//                          503 {"status": "not ready", "reason": ...}
//   GET    /metrics        200 Prometheus text format 0.0.4
//
// Every error is {"error": "<message>"} with a 4xx or 5xx status: 400 bad request, 401 no token,
// 403 wrong token, 404 unknown path or source, 405 wrong method (with Allow), 409 an id in use,
// 413 body too large, 415 not JSON, 429 the flow's source limit, 500 anything else. A bad request
// never stops the server, and neither does a backend that throws.
//
// Security: the API listens on loopback unless given a token; with a token, every mutating
// request (POST, PUT, PATCH, DELETE) must carry "Authorization: Bearer <token>". Source URIs
// are checked against service/uri_policy.h before the backend sees them, and every URI the API
// returns has its password redacted.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "service/backend.h"

namespace fovea::service {

struct HttpApiOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (HttpApi::port() tells which)
  std::optional<std::string> token;
  std::size_t max_body_bytes = 64 * 1024;  // a source's JSON is a few hundred bytes
};

class HttpApi {
 public:
  // Binds before returning (a port in use is an error naming host:port), then serves on its own
  // threads. A host other than loopback (127.0.0.0/8, ::1, localhost) needs a token.
  static Result<std::unique_ptr<HttpApi>> start(ServiceBackend& backend, HttpApiOptions options);

  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;
  ~HttpApi();

  int port() const;
  // Stops accepting and returns once the requests in progress are answered (an idle or stalled
  // connection holds it for at most the server's keep-alive or read timeout, a few seconds).
  // The backend is not called after stop() returns. Idempotent.
  void stop();

 private:
  struct Server;
  explicit HttpApi(std::unique_ptr<Server> server);

  std::unique_ptr<Server> server_;
};

}  // namespace fovea::service
