#include "service/http_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "core/log.h"
#include "service/prometheus.h"
#include "service/uri_policy.h"

namespace fovea::service {
namespace {

using Clock = std::chrono::steady_clock;

// How long an idle keep-alive connection keeps its server thread. A client reusing its connection
// (curl, a Prometheus scrape) does so within this; a longer one only delays stop(), which waits for
// idle connections too (httplib 0.11 checks for a stop between requests, not while idle).
constexpr time_t kKeepAliveTimeoutS = 2;
constexpr std::size_t kHttpThreads = 64;
// How long stop() waits for the connections in hand: a client still sending its request (httplib
// bounds each read, not the whole request) is left to the process's exit after that.
constexpr auto kStopWait = std::chrono::seconds(3);

// One answer: a status, a body (JSON unless content_type says otherwise) and extra headers.
struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// What the routes see of a request whose body has been read.
struct Request {
  std::string_view method;  // HEAD is answered as GET (httplib drops the body)
  std::string_view path;    // as sent, percent-encoded, without the query
  std::string authorization;
  std::string content_type;
  std::string body;
};

// Strings from clients and from the flow (URIs, file names) need not be UTF-8; a JSON answer
// must not fail on them, so invalid bytes become U+FFFD.
std::string dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Reply json_reply(int status, const nlohmann::json& body) {
  return {.status = status, .body = dump(body)};
}

Reply error_reply(int status, std::string_view message) {
  return json_reply(status, {{"error", redact_uri(message)}});
}

int http_status(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kResourceExhausted: return 429;
    default: return 500;
  }
}

Reply error_reply(const Status& status) {
  const int code = http_status(status.code());
  if (code == 500) log_warn("http: the flow failed a request: {}", redact_uri(status.to_string()));
  return error_reply(code, status.message());
}

// Every string in `json` with its URIs' passwords redacted (the run report quotes sources' URIs
// and their errors).
nlohmann::json redacted(nlohmann::json json) {
  if (json.is_string()) return redact_uri(json.get_ref<const std::string&>());
  if (json.is_structured()) {
    for (nlohmann::json& element : json) element = redacted(std::move(element));
  }
  return json;
}

nlohmann::json source_json(const SourceInfo& source) {
  return {{"id", source.id},         {"uri", redact_uri(source.uri)}, {"state", source.state},
          {"frames", source.frames}, {"dropped", source.dropped},     {"reconnects", source.reconnects},
          {"fps", source.fps},       {"decoder", source.decoder},     {"error", redact_uri(source.error)}};
}

std::vector<MetricFamily> redacted(std::vector<MetricFamily> families) {
  const auto redact_labels = [](Labels& labels) {
    for (auto& label : labels) label.second = redact_uri(label.second);
  };
  for (MetricFamily& family : families) {
    for (MetricSample& sample : family.samples) redact_labels(sample.labels);
    for (HistogramSample& histogram : family.histograms) redact_labels(histogram.labels);
  }
  return families;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

std::string_view trimmed(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t") + 1 - begin);
}

// Time that depends on the secret's length only, not on how much of it a guess gets right.
bool constant_time_equal(std::string_view guess, std::string_view secret) {
  unsigned difference = guess.size() == secret.size() ? 0u : 1u;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const char guessed = i < guess.size() ? guess[i] : '\0';
    difference |= static_cast<unsigned char>(guessed ^ secret[i]);
  }
  return difference == 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%41b" -> "Ab"; a '%' not followed by two hex digits stays as it is.
std::string percent_decoded(std::string_view text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int high = i + 2 < text.size() && text[i] == '%' ? hex_value(text[i + 1]) : -1;
    const int low = high >= 0 ? hex_value(text[i + 2]) : -1;
    if (low >= 0) {
      decoded += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      decoded += text[i];
    }
  }
  return decoded;
}

// Everything but RFC 3986's unreserved characters escaped: an id goes into a Location header.
std::string percent_encoded(std::string_view text) {
  std::string encoded;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      encoded += c;
    } else {
      encoded += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return encoded;
}

// application/json, with or without parameters (charset); no Content-Type at all is JSON too, and
// so is curl's default for `-d` (application/x-www-form-urlencoded): the body is parsed as JSON
// either way, so `curl -d '{"uri": ...}'` works as people type it.
bool is_json_content_type(std::string_view content_type) {
  const std::string_view type = trimmed(content_type.substr(0, content_type.find(';')));
  return content_type.empty() || iequals(type, "application/json") ||
         iequals(type, "application/x-www-form-urlencoded");
}

// POST, PUT, PATCH, DELETE change the flow or would; GET, HEAD and OPTIONS do not.
bool is_mutating(std::string_view method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

class Router {
 public:
  Router(ServiceBackend& backend, const HttpApiOptions& options) : backend_(backend), options_(options) {}

  Reply respond(const Request& request) const;

 private:
  // "/sources/{id}" and its id, percent-decoded; the other resources have none.
  struct Target {
    std::string_view resource;
    std::string id;
  };
  struct Route {
    std::string_view resource;
    std::string_view method;
    Reply (Router::*handler)(const Request&, const std::string& id) const;
  };
  static const std::vector<Route>& routes();
  static std::optional<Target> resolve(std::string_view path);
  static Reply method_not_allowed(std::string_view resource, std::string_view method);

  std::optional<Reply> refused(std::string_view authorization) const;
  Reply list_sources(const Request&, const std::string&) const;
  Reply add_source(const Request& request, const std::string&) const;
  Reply remove_source(const Request&, const std::string& id) const;
  Reply stats(const Request&, const std::string&) const;
  Reply health(const Request&, const std::string&) const;
  Reply metrics(const Request&, const std::string&) const;

  ServiceBackend& backend_;
  const HttpApiOptions& options_;
};

const std::vector<Router::Route>& Router::routes() {
  static const std::vector<Route> routes = {
      {"/sources", "GET", &Router::list_sources},
      {"/sources", "POST", &Router::add_source},
      {"/sources/{id}", "DELETE", &Router::remove_source},
      {"/stats", "GET", &Router::stats},
      {"/health", "GET", &Router::health},
      {"/metrics", "GET", &Router::metrics},
  };
  return routes;
}

std::optional<Router::Target> Router::resolve(std::string_view path) {
  constexpr std::string_view kSourcePrefix = "/sources/";
  if (path.starts_with(kSourcePrefix)) {
    const std::string_view id = path.substr(kSourcePrefix.size());
    if (id.empty() || id.find('/') != std::string_view::npos) return std::nullopt;
    return Target{"/sources/{id}", percent_decoded(id)};
  }
  for (const Route& route : routes()) {
    if (route.resource == path) return Target{route.resource, ""};
  }
  return std::nullopt;
}

Reply Router::method_not_allowed(std::string_view resource, std::string_view method) {
  std::vector<std::string_view> allowed;
  for (const Route& route : routes()) {
    if (route.resource != resource) continue;
    allowed.push_back(route.method);
    if (route.method == "GET") allowed.push_back("HEAD");
  }
  const std::string allow = fmt::format("{}", fmt::join(allowed, ", "));
  Reply reply = error_reply(405, fmt::format("{} does not take {}; it takes {}", resource, method, allow));
  reply.headers.emplace_back("Allow", allow);
  return reply;
}

// GETs need no token: they change nothing, and what they show (sources, counters) has every
// URI's password redacted. A token guards what changes the flow.
std::optional<Reply> Router::refused(std::string_view authorization) const {
  if (!options_.token) return std::nullopt;
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() < kScheme.size() || !iequals(authorization.substr(0, kScheme.size()), kScheme)) {
    Reply reply = error_reply(401, "this request needs the API's token: \"Authorization: Bearer <token>\"");
    reply.headers.emplace_back("WWW-Authenticate", "Bearer");
    return reply;
  }
  if (!constant_time_equal(trimmed(authorization.substr(kScheme.size())), *options_.token)) {
    return error_reply(403, "the token does not match the API's token");
  }
  return std::nullopt;
}

Reply Router::respond(const Request& request) const {
  if (is_mutating(request.method)) {
    if (std::optional<Reply> refusal = refused(request.authorization)) return *std::move(refusal);
  }
  const std::optional<Target> target = resolve(request.path);
  if (!target) {
    return error_reply(404, fmt::format("no such path: {}; the API serves /sources, /sources/{{id}}, /stats, "
                                        "/health and /metrics",
                                        request.path));
  }
  const std::string_view method = request.method == "HEAD" ? "GET" : request.method;
  for (const Route& route : routes()) {
    if (route.resource == target->resource && route.method == method) {
      return (this->*route.handler)(request, target->id);
    }
  }
  return method_not_allowed(target->resource, request.method);
}

Reply Router::list_sources(const Request&, const std::string&) const {
  nlohmann::json sources = nlohmann::json::array();
  for (const SourceInfo& source : backend_.sources()) sources.push_back(source_json(source));
  return json_reply(200, {{"sources", std::move(sources)}});
}

Reply Router::add_source(const Request& request, const std::string&) const {
  if (!is_json_content_type(request.content_type)) {
    return error_reply(415, fmt::format("the body must be JSON (Content-Type: application/json), not {}",
                                        request.content_type));
  }
  nlohmann::json body;
  try {
    body = nlohmann::json::parse(request.body);
  } catch (const nlohmann::json::exception& error) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...", or
    // out_of_range.406 for a number past a double's range.
    const std::string_view what = error.what();
    return error_reply(400, fmt::format("the body is not valid JSON: {}", what.substr(what.find(']') + 2)));
  }
  if (!body.is_object()) {
    return error_reply(400,
                       fmt::format("the body must be a JSON object such as {{\"uri\": \"rtsp://...\"}}, not "
                                   "{}",
                                   body.type_name()));
  }
  const auto uri = body.find("uri");
  if (uri == body.end() || !uri->is_string() || uri->get_ref<const std::string&>().empty()) {
    return error_reply(400, "the body needs \"uri\", a non-empty string");
  }
  if (Status allowed = check_source_uri(uri->get_ref<const std::string&>()); !allowed.is_ok()) {
    return error_reply(400, allowed.message());
  }
  Result<SourceInfo> added = backend_.add_source(body);
  if (!added.is_ok()) return error_reply(added.status());
  Reply reply = json_reply(201, source_json(*added));
  reply.headers.emplace_back("Location", "/sources/" + percent_encoded(added->id));
  return reply;
}

Reply Router::remove_source(const Request&, const std::string& id) const {
  if (Status removed = backend_.remove_source(id); !removed.is_ok()) return error_reply(removed);
  return {.status = 204};
}

Reply Router::stats(const Request&, const std::string&) const {
  return json_reply(200, redacted(backend_.stats()));
}

Reply Router::health(const Request&, const std::string&) const {
  const Health health = backend_.health();
  if (!health.ready) return json_reply(503, {{"status", "not ready"}, {"reason", redact_uri(health.reason)}});
  if (health.degraded)
    return json_reply(200, {{"status", "degraded"}, {"reason", redact_uri(health.reason)}});
  return json_reply(200, {{"status", "ready"}});
}

Reply Router::metrics(const Request&, const std::string&) const {
  return {.body = render_prometheus(redacted(backend_.metrics())),
          .content_type = "text/plain; version=0.0.4; charset=utf-8"};
}

// Reads the body into `body`, or says why not. A request with neither Content-Length nor
// Transfer-Encoding has no body (RFC 9112 6.3); httplib would wait for the connection to close.
std::optional<Reply> read_body(const httplib::Request& request, const httplib::Response& response,
                               const httplib::ContentReader& reader, std::size_t limit, std::string* body) {
  if (!request.has_header("Content-Length") && !request.has_header("Transfer-Encoding")) return std::nullopt;
  if (request.is_multipart_form_data()) {
    // httplib would parse it into parts nobody asked for; the API takes JSON.
    Reply reply = error_reply(415, "the body must be JSON (Content-Type: application/json), not multipart");
    reply.headers.emplace_back("Connection", "close");
    return reply;
  }
  bool too_large = false;
  const bool read = reader([&](const char* data, std::size_t size) {
    too_large = body->size() + size > limit;
    if (!too_large) body->append(data, size);
    return !too_large;
  });
  if (read) return std::nullopt;
  // httplib answers a declared Content-Length over the limit with 413 and an unknown
  // Content-Encoding with 415; a body cut short or over the limit leaves unread bytes on the
  // connection, which therefore closes.
  Reply reply = too_large || response.status == 413
                    ? error_reply(413, fmt::format("the body is larger than {} bytes", limit))
                : response.status == 415
                    ? error_reply(415, "the body's Content-Encoding is not supported")
                    : error_reply(400, "the body could not be read (cut short or malformed)");
  reply.headers.emplace_back("Connection", "close");
  return reply;
}

Reply respond(const Router& router, const httplib::Request& request, const httplib::Response& response,
              const httplib::ContentReader* reader, std::size_t max_body_bytes) {
  const std::string_view target = request.target;
  Request call{.method = request.method,
               .path = target.substr(0, target.find('?')),
               .authorization = request.get_header_value("Authorization"),
               .content_type = request.get_header_value("Content-Type")};
  if (reader != nullptr) {
    if (std::optional<Reply> refusal = read_body(request, response, *reader, max_body_bytes, &call.body)) {
      return *std::move(refusal);
    }
  }
  return router.respond(call);
}

void write(const Reply& reply, httplib::Response& response) {
  response.status = reply.status;
  for (const auto& [name, value] : reply.headers) response.set_header(name, value);
  if (reply.status != 204) response.set_content(reply.body, reply.content_type);
}

// Answers every request; a throwing route (a bug, or a backend breaking its contract) is a 500,
// and the server goes on.
void serve(const Router& router, const httplib::Request& request, httplib::Response& response,
           const httplib::ContentReader* reader, std::size_t max_body_bytes) {
  const Clock::time_point start = Clock::now();
  Reply reply;
  try {
    reply = respond(router, request, response, reader, max_body_bytes);
  } catch (const std::exception& error) {
    log_error("http: {} {} threw: {}", request.method, request.target, redact_uri(error.what()));
    reply = error_reply(500, fmt::format("internal error: {}", error.what()));
  } catch (...) {
    log_error("http: {} {} threw", request.method, request.target);
    reply = error_reply(500, "internal error");
  }
  write(reply, response);
  log_debug("http: {} {} {} {:.1f} ms", request.method, request.target, reply.status,
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

// The answers httplib gives by itself, before a request reaches the routes.
std::string_view protocol_error_message(int status) {
  switch (status) {
    case 400: return "malformed HTTP request";
    case 413: return "the body is too large";
    case 414: return "the request's URI is too long";
    case 416: return "malformed Range header";
    default: return "the HTTP request could not be served";
  }
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string host_port(const std::string& host, int port) {
  return host.find(':') == std::string::npos ? fmt::format("{}:{}", host, port)
                                             : fmt::format("[{}]:{}", host, port);
}

Status check_options(const HttpApiOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return make_error(StatusCode::kInvalidArgument, "port ", std::to_string(options.port),
                      " is not a TCP port (0 to 65535; 0 picks a free one)");
  }
  if (options.max_body_bytes == 0) return make_error(StatusCode::kInvalidArgument, "max_body_bytes is 0");
  if (options.token && options.token->empty()) {
    return make_error(StatusCode::kInvalidArgument, "the API token is empty");
  }
  if (!options.token && !is_loopback(options.host)) {
    return make_error(StatusCode::kInvalidArgument, "listening on ", options.host,
                      " needs --token-file: without a token the API listens on loopback only "
                      "(127.0.0.0/8, ::1, localhost)");
  }
  return Status::ok();
}

// httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian built the
// library). A burst of more connections than that (16 clients at once in the tests) overflows it;
// the kernel then drops handshakes, the clients' retransmissions back off past the keep-alive
// timeout, and the server closes connections it has accepted before their requests arrive.
// Listening again on the bound socket widens the backlog (listen(2) on a listening socket).
class WideBacklogServer : public httplib::Server {
 public:
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

}  // namespace

struct HttpApi::Server {
  Server(ServiceBackend& backend, HttpApiOptions api_options)
      : options(std::move(api_options)), router(backend, options) {}

  void install_routes();
  Status bind();

  HttpApiOptions options;
  Router router;
  WideBacklogServer http;
  std::thread listener;
  std::atomic<bool> listener_done{false};
  int port = 0;
};

void HttpApi::Server::install_routes() {
  // Every path goes to the router, which knows the resources, so that an unknown path is a 404
  // and a known path with the wrong method a 405, both in JSON. Methods that may carry a body
  // read it through the router, which bounds it.
  const auto without_body = [this](const httplib::Request& request, httplib::Response& response) {
    serve(router, request, response, nullptr, options.max_body_bytes);
  };
  const auto with_body = [this](const httplib::Request& request, httplib::Response& response,
                                const httplib::ContentReader& reader) {
    serve(router, request, response, &reader, options.max_body_bytes);
  };
  const std::string any_path = ".*";
  http.Get(any_path, without_body);  // and HEAD
  http.Options(any_path, without_body);
  http.Post(any_path, with_body);
  http.Put(any_path, with_body);
  http.Patch(any_path, with_body);
  http.Delete(any_path, with_body);
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // the router's own
        response.set_content(dump({{"error", protocol_error_message(response.status)}}), "application/json");
        log_debug("http: {} {} {} (refused before routing)", request.method, request.target, response.status);
        return httplib::Server::HandlerResponse::Handled;
      }));
  // httplib's default sets SO_REUSEPORT, with which a second server binds a port in use without
  // an error and takes half its connections; SO_REUSEADDR alone lets a restart rebind at once.
  http.set_socket_options([](socket_t socket) {
    const int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_keep_alive_timeout(kKeepAliveTimeoutS);
  // A thread per connection being read: httplib's default (8 on a small machine) let eight clients
  // that send their headers slowly hold every thread, and the API stopped answering.
  http.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  // A declared Content-Length over the limit is a 413 without the body being kept (httplib
  // discards it); chunked or compressed bodies are bounded by the router as they arrive.
  http.set_payload_max_length(options.max_body_bytes);
}

Status HttpApi::Server::bind() {
  errno = 0;
  port = options.port == 0 ? http.bind_to_any_port(options.host)
                           : (http.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port > 0) {
    http.widen_backlog();
    return Status::ok();
  }
  const std::string reason = errno != 0 ? std::generic_category().message(errno)
                                        : "the address is not this machine's or does not resolve";
  return make_error(StatusCode::kIoError, "cannot listen on ", host_port(options.host, options.port), ": ",
                    reason);
}

Result<std::unique_ptr<HttpApi>> HttpApi::start(ServiceBackend& backend, HttpApiOptions options) {
  FOVEA_TRY(check_options(options));
  auto server = std::make_unique<Server>(backend, std::move(options));
  server->install_routes();
  FOVEA_TRY(server->bind());
  Server* running = server.get();
  server->listener = std::thread([running] {
    running->http.listen_after_bind();
    running->listener_done = true;
  });
  log_info("http: the API listens on http://{}", host_port(running->options.host, running->port));
  return std::unique_ptr<HttpApi>(new HttpApi(std::move(server)));
}

HttpApi::HttpApi(std::unique_ptr<Server> server) : server_(std::move(server)) {}

HttpApi::~HttpApi() {
  stop();
}

int HttpApi::port() const {
  return server_->port;
}

void HttpApi::stop() {
  if (!server_ || !server_->listener.joinable()) return;
  // httplib's stop() does nothing until listen_after_bind() has marked the server running, which
  // happens on the listener thread; a stop right after start() waits for that first.
  while (!server_->http.is_running() && !server_->listener_done) std::this_thread::yield();
  server_->http.stop();
  const auto deadline = std::chrono::steady_clock::now() + kStopWait;
  while (!server_->listener_done && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (server_->listener_done) {
    server_->listener.join();
    return;
  }
  // The listener waits for a connection a client keeps open: it and the server it runs are left
  // to the process's exit (the flow's outputs are already final), not waited for.
  log_warn("http: a client is still sending a request {} s after the stop; not waiting for it",
           std::chrono::duration_cast<std::chrono::seconds>(kStopWait).count());
  server_->listener.detach();
  static_cast<void>(server_.release());
}

}  // namespace fovea::service
