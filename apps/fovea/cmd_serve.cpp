// fovea serve CONFIG.yaml [--listen HOST:PORT] [--token-file FILE] [--max-sources N]
//
// Runs the flow a configuration describes as a service, until SIGTERM or Ctrl-C: sources (cameras)
// are added and removed through an HTTP API while the others run, and the API reports the flow's
// stats, health and Prometheus metrics (src/service/http_api.h). The configuration's own sources,
// if any, start with the flow; with none, `mux.width` and `mux.height` give the frame size. The API
// listens on loopback unless a token file is given; then every request that changes something
// must carry the token. A stop drains and finalizes as `fovea run` does, with its exit codes.
#include <cctype>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "core/input_file.h"
#include "core/log.h"
#include "flow_command.h"
#include "pipeline/config.h"
#include "pipeline/flow_runner.h"
#include "service/flow_backend.h"
#include "service/http_api.h"
#include "service/process_memory.h"

namespace fovea::app {
namespace {

// malloc_trim walks every arena: milliseconds, twice a minute.
constexpr auto kHeapReleasePeriod = std::chrono::seconds(30);

struct ServeArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string listen = "127.0.0.1:8080";
  std::string token_file;
  int max_sources = 64;
  CommonArgs common;
};

// "HOST:PORT", the host possibly a bracketed IPv6 address ("[::1]:8080").
Result<std::pair<std::string, int>> parse_listen(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  const auto bad = [&] {
    return make_error(StatusCode::kInvalidArgument, "--listen ", text,
                      ": expected HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080");
  };
  if (colon == std::string_view::npos || colon == 0) return bad();
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string_view port_text = text.substr(colon + 1);
  int port = -1;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad();
  }
  return std::pair{std::string(host), port};
}

// The token is the file's content without its trailing newline (what `echo secret > f` writes).
Result<std::string> read_token(const std::string& path) {
  constexpr std::uintmax_t kMaxTokenBytes = 64u << 10;
  Result<std::string> text = read_regular_file(path, "--token-file", kMaxTokenBytes);
  if (!text.is_ok()) return make_error(StatusCode::kInvalidArgument, text.status().message());
  // As ssh does for a private key: a token other users can read is no secret.
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::perms perms = fs::status(path, error).permissions();
  constexpr fs::perms kOthers =
      fs::perms::group_read | fs::perms::group_write | fs::perms::others_read | fs::perms::others_write;
  if (!error && (perms & kOthers) != fs::perms::none) {
    log_warn(
        "--token-file {}: other users can read or write it (mode {:03o}); `chmod 600 {}` keeps the "
        "API's token yours",
        path, static_cast<unsigned>(perms & fs::perms::mask), path);
  }
  std::string token = std::move(text).value();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())) != 0) token.pop_back();
  if (token.empty()) return make_error(StatusCode::kInvalidArgument, "--token-file ", path, ": is empty");
  return token;
}

int run_serve(const ServeArgs& args) {
  const std::optional<pipeline::PipelineConfig> config =
      load_config_file(args.config, args.overrides, args.common);
  if (!config) return kExitUsage;
  if (config->sources.size() > static_cast<std::size_t>(args.max_sources)) {
    log_error("--max-sources {}: the configuration already has {} sources", args.max_sources,
              config->sources.size());
    return kExitUsage;
  }
  service::HttpApiOptions api_options;
  Result<std::pair<std::string, int>> listen = parse_listen(args.listen);
  if (!listen.is_ok()) {
    log_error("{}", listen.status().to_string());
    return kExitUsage;
  }
  std::tie(api_options.host, api_options.port) = *listen;
  if (!args.token_file.empty()) {
    Result<std::string> token = read_token(args.token_file);
    if (!token.is_ok()) {
      log_error("{}", token.status().to_string());
      return kExitUsage;
    }
    api_options.token = std::move(token).value();
  }
  pipeline::FlowControl control;
  service::FlowBackend backend(control, pipeline::source_names(config->sources),
                               {.max_sources = static_cast<std::size_t>(args.max_sources)});
  Result<std::unique_ptr<service::HttpApi>> api = service::HttpApi::start(backend, api_options);
  if (!api.is_ok()) return refuse(api.status());
  pipeline::FlowOptions options = flow_options(args.common);
  options.control = &control;
  // A removed source holds its slot until its last frames are batched: spare slots let a camera
  // be removed and added back at once.
  options.source_slots = 2 * static_cast<std::size_t>(args.max_sources);
  // Every reconnect frees a decoder's memory on the thread that made it; hand it back to the
  // system now and then, so that the resident size follows what is in use (process_memory.h).
  const service::PeriodicHeapRelease heap_release(kHeapReleasePeriod);
  const int exit_code = run_flow_command(*config, options);
  // No request reaches the backend once the flow is gone.
  (*api)->stop();
  return exit_code;
}

}  // namespace

void add_serve_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* serve = app.add_subcommand(
      "serve", "Run a configuration as a service: add and remove sources over HTTP, live stats and metrics");
  serve->add_option("config", args->config, "Configuration file (docs/config.md); its sources may be empty")
      ->required()
      ->check(CLI::ExistingFile);
  serve->add_option("--set", args->overrides, "Override a key: --set mux.batch_size=8 (repeatable)")
      ->allow_extra_args(false);
  serve
      ->add_option("--listen", args->listen,
                   "HOST:PORT of the HTTP API; other than loopback needs --token-file")
      ->capture_default_str();
  serve->add_option(
      "--token-file", args->token_file,
      "File holding the token that POST and DELETE requests must carry (Authorization: Bearer)");
  serve->add_option("--max-sources", args->max_sources, "Sources the flow can hold at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  add_common_options(serve, &args->common);
  serve->callback([action, args] { *action = [args] { return run_serve(*args); }; });
}

}  // namespace fovea::app
