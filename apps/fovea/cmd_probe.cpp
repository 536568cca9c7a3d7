// fovea probe FILE|URL...: stream information, as text or JSON.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "io/demuxer.h"

namespace fovea::app {
namespace {

struct ProbeArgs {
  std::vector<std::string> inputs;
  bool json = false;
  int timeout_ms = 5000;
};

std::string rational_text(Rational r) {
  return std::to_string(r.num) + "/" + std::to_string(r.den);
}

// The container's figure, or null where it does not say (a raw .h264 stream has no duration, a live
// one no frame count): 0 would read as a measured zero.
template <typename T>
nlohmann::json known(T value) {
  return value > 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const io::StreamInfo& info) {
  return {{"url", info.url},
          {"container", info.container},
          {"codec", info.codec_name},
          {"profile", info.profile},
          {"bit_depth", info.bit_depth},
          {"pixel_format", info.pixel_format},
          {"width", info.width},
          {"height", info.height},
          {"frame_rate", known(info.frame_rate.to_double())},
          {"time_base", rational_text(info.time_base)},
          {"duration_s", known(info.duration_s)},
          {"frame_count", known(info.frame_count)},
          {"bit_rate", known(info.bit_rate)},
          {"rotation_deg", info.rotation_deg}};
}

// "unknown" where the container does not say, else the figure as `format` prints it.
std::string known_text(double value, const char* format) {
  if (value <= 0) return "unknown";
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

void print_text(const io::StreamInfo& info) {
  std::printf("%s\n", info.url.c_str());
  std::printf("  container   %s\n", info.container.c_str());
  std::printf("  codec       %s%s%s, %d-bit %s\n", info.codec_name.c_str(), info.profile.empty() ? "" : " ",
              info.profile.c_str(), info.bit_depth, info.pixel_format.c_str());
  std::printf("  size        %dx%d%s\n", info.width, info.height,
              info.rotation_deg ? (", rotated " + std::to_string(info.rotation_deg) + " deg").c_str() : "");
  std::printf("  frame rate  %s (time base %s)\n",
              known_text(info.frame_rate.to_double(), "%.3f fps").c_str(),
              rational_text(info.time_base).c_str());
  std::printf("  duration    %s%s\n", known_text(info.duration_s, "%.3f s").c_str(),
              info.frame_count > 0 ? (", " + std::to_string(info.frame_count) + " frames").c_str() : "");
  std::printf("  bit rate    %s\n",
              known_text(static_cast<double>(info.bit_rate) / 1e6, "%.2f Mb/s").c_str());
}

int run_probe(const ProbeArgs& args) {
  int failures = 0;
  nlohmann::json all = nlohmann::json::array();
  io::DemuxOptions options;
  options.timeout_ms = args.timeout_ms;
  options.cancel = &interrupt_flag();
  for (const std::string& input : args.inputs) {
    Result<std::unique_ptr<io::Demuxer>> demuxer = io::Demuxer::open(input, options);
    if (!demuxer.is_ok()) {
      std::fprintf(stderr, "fovea probe: %s\n", demuxer.status().to_string().c_str());
      // In the JSON too, in its place: a script reads every input's outcome from one array.
      if (args.json) all.push_back({{"url", input}, {"error", demuxer.status().to_string()}});
      ++failures;
      continue;
    }
    if (args.json) {
      all.push_back(to_json((*demuxer)->info()));
    } else {
      print_text((*demuxer)->info());
    }
  }
  if (args.json) {
    std::cout << all.dump(2) << "\n";
  }
  if (failures == 0) {
    return kExitOk;
  }
  return failures == static_cast<int>(args.inputs.size()) ? kExitFailure : kExitPartial;
}

}  // namespace

void add_probe_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* command = app.add_subcommand("probe", "Print stream information of video files or URLs");
  command->add_option("inputs", args->inputs, "Files or URLs (rtsp://, http://, ...)")->required();
  command->add_flag("--json", args->json, "Print JSON instead of text");
  command->add_option("--timeout-ms", args->timeout_ms, "Network timeout")
      ->capture_default_str()
      ->check(at_least(1));
  command->callback([args, action] { *action = [args] { return run_probe(*args); }; });
}

}  // namespace fovea::app
