#include "pipeline/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace fovea::pipeline {
namespace {

using ::testing::HasSubstr;

// The smallest valid configuration: what every error case below breaks one piece of.
constexpr std::string_view kMinimal = R"(sources:
  - uri: a.mp4
model:
  path: m.onnx
sinks:
  null: true
)";

PipelineConfig parse_ok(std::string_view text) {
  Result<PipelineConfig> config = parse_config(text, "test.yaml");
  EXPECT_TRUE(config.is_ok()) << config.status().to_string();
  return config.is_ok() ? std::move(config).value() : PipelineConfig{};
}

std::string parse_error(std::string_view text) {
  const Result<PipelineConfig> config = parse_config(text, "test.yaml");
  EXPECT_FALSE(config.is_ok()) << "parsed:\n" << text;
  return config.is_ok() ? std::string() : config.status().message();
}

std::string minimal_with(std::string_view extra) {
  return std::string(kMinimal) + std::string(extra);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The first ```yaml block of docs/config.md, the documented complete example.
std::string doc_example() {
  const std::string doc = read_text(std::filesystem::path(FOVEA_DOCS_DIR) / "config.md");
  const std::string fence = "```yaml\n";
  const std::size_t begin = doc.find(fence);
  EXPECT_NE(begin, std::string::npos) << "docs/config.md has no ```yaml block";
  if (begin == std::string::npos) return {};
  const std::size_t end = doc.find("```", begin + fence.size());
  return doc.substr(begin + fence.size(), end - begin - fence.size());
}

TEST(PipelineConfig, MinimalFileTakesEveryDefault) {
  const PipelineConfig config = parse_ok(kMinimal);
  ASSERT_EQ(config.sources.size(), 1u);
  EXPECT_EQ(config.sources[0], (SourceConfig{.uri = "a.mp4"}));
  EXPECT_EQ(config.mux, MuxConfig{});
  EXPECT_EQ(config.model, (ModelConfig{.path = "m.onnx"}));
  EXPECT_EQ(config.task, TaskConfig{});
  EXPECT_EQ(config.sinks, (SinksConfig{.null = true}));
  EXPECT_EQ(config.stats, StatsConfig{});
}

TEST(PipelineConfig, EmptySectionsKeepTheDefaults) {
  const PipelineConfig config = parse_ok(minimal_with("mux:\ntask: ~\nstats:\n"));
  EXPECT_EQ(config, parse_ok(kMinimal));
  EXPECT_EQ(parse_error("sources: [{uri: a.mp4}]\nmodel:\nsinks: {null: true}\n"),
            "test.yaml:1:1: missing required key 'model.path'");
}

TEST(PipelineConfig, DefaultsAreTheDocumentedOnes) {
  const SourceConfig source;
  EXPECT_EQ(source.decoder, io::DecoderBackend::kAuto);
  EXPECT_FALSE(source.loop);
  EXPECT_EQ(source.start, 0.0);
  EXPECT_FALSE(source.duration.has_value());
  const MuxConfig mux;
  EXPECT_EQ(mux.batch_size, 4);
  EXPECT_FALSE(mux.width.has_value());  // the sources' own size (with_frame_size)
  EXPECT_FALSE(mux.height.has_value());
  EXPECT_EQ(mux.push_timeout_us, -1);
  EXPECT_FALSE(mux.max_frames_per_source.has_value());
  const ModelConfig model;
  EXPECT_EQ(model.precision, runtime::Precision::kFloat16);
  EXPECT_EQ(model.color_order, ColorOrder::kRgb);
  EXPECT_EQ(model.mean, (std::array<float, 3>{0.485f, 0.456f, 0.406f}));  // ImageNet's
  EXPECT_EQ(model.std, (std::array<float, 3>{0.229f, 0.224f, 0.225f}));
  const TaskConfig task;
  EXPECT_EQ(task.blur_kernel, 31);
  EXPECT_TRUE(task.refine_mask);
  EXPECT_TRUE(task.classes.empty());
  EXPECT_TRUE(StatsConfig{}.progress);
  EXPECT_EQ(VideoSinkConfig{}.preset, "medium");
}

TEST(PipelineConfig, DocumentedExampleLoadsWithEveryValue) {
  const PipelineConfig config = parse_ok(doc_example());
  ASSERT_EQ(config.sources.size(), 2u);
  EXPECT_EQ(config.sources[0], (SourceConfig{.uri = "clips/street.mp4",
                                             .decoder = io::DecoderBackend::kNvdec,
                                             .loop = false,
                                             .start = 2.5,
                                             .duration = 10.0}));
  EXPECT_EQ(config.sources[1],
            (SourceConfig{
                .uri = "rtsp://camera.local/stream", .decoder = io::DecoderBackend::kAuto, .loop = true}));
  EXPECT_EQ(config.mux, (MuxConfig{.batch_size = 4,
                                   .width = 1920,
                                   .height = 1080,
                                   .push_timeout_us = 40000,
                                   .max_frames_per_source = 2,
                                   .live = false}));
  EXPECT_EQ(config.model, (ModelConfig{.path = "models/fcn_resnet101.onnx",
                                       .input_name = "input",
                                       .precision = runtime::Precision::kFloat16,
                                       .mean = {0.485f, 0.456f, 0.406f},
                                       .std = {0.229f, 0.224f, 0.225f},
                                       .color_order = ColorOrder::kRgb,
                                       .input_width = 960,
                                       .input_height = 544,
                                       .keep_aspect = false,
                                       .engine_cache = "engines"}));
  EXPECT_EQ(config.task, (TaskConfig{.type = TaskType::kSegmentation,
                                     .classes = {8},
                                     .blur_kernel = 31,
                                     .sigma = 5.0,
                                     .refine_mask = true}));
  EXPECT_EQ(config.sinks.video,
            (VideoSinkConfig{.output_dir = "out", .codec = io::EncoderCodec::kH264, .preset = "fast"}));
  EXPECT_EQ(config.sinks.metadata, (MetadataSinkConfig{.path = "out/frames.jsonl"}));
  EXPECT_FALSE(config.sinks.null);
  EXPECT_EQ(config.stats, (StatsConfig{.progress = true, .report = "out/stats.json"}));
}

// The leaf keys under `node`, list entries written as `name[]` ("sources[].uri").
void collect_keys(const YAML::Node& node, const std::string& path, std::vector<std::string>& keys) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = entry.first.IsNull() ? "null" : entry.first.Scalar();
      collect_keys(entry.second, path.empty() ? key : path + "." + key, keys);
    }
  } else if (node.IsSequence() && node.size() > 0 && node[0].IsMap()) {
    collect_keys(node[0], path + "[]", keys);
  } else {
    keys.push_back(path);
  }
}

// Every key dump_config writes has a row in the schema table, so a new key cannot go undocumented.
TEST(PipelineConfig, EveryKeyIsDocumented) {
  const std::string doc = read_text(std::filesystem::path(FOVEA_DOCS_DIR) / "config.md");
  std::vector<std::string> keys;
  collect_keys(YAML::Load(dump_config(parse_ok(doc_example()))), "", keys);
  EXPECT_GT(keys.size(), 30u);
  for (const std::string& key : keys) {
    EXPECT_THAT(doc, HasSubstr("`" + key + "`")) << "docs/config.md does not document " << key;
  }
}

TEST(PipelineConfig, DumpReadsBackEqual) {
  const PipelineConfig config = parse_ok(doc_example());
  EXPECT_EQ(parse_ok(dump_config(config)), config);
  const PipelineConfig minimal = parse_ok(kMinimal);
  EXPECT_EQ(parse_ok(dump_config(minimal)), minimal);
}

TEST(PipelineConfig, LoadsAFileAndNamesItInErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fovea_config_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.yaml").string();
  std::ofstream(path) << minimal_with("mux:\n  batch_size: four\n");
  const Result<PipelineConfig> config = load_config(path);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().message(), path + ":8:15: mux.batch_size: expected an integer, got 'four'");
}

// Paths in a file are taken from its folder, the engine cache's too.
TEST(PipelineConfig, PathsInAFileAreTakenFromItsFolder) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fovea_config_paths_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.yaml").string();
  std::ofstream(path) << "sources:\n  - uri: clip.mp4\nmodel:\n  path: m.onnx\n  engine_cache: engines\n"
                      << "sinks:\n  null: true\n";
  const Result<PipelineConfig> config = load_config(path);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->model.path, (dir / "m.onnx").string());
  EXPECT_EQ(config->model.engine_cache, (dir / "engines").string());
}

TEST(PipelineConfig, MissingFileIsNotFound) {
  const Result<PipelineConfig> config = load_config("/nonexistent/run.yaml");
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("/nonexistent/run.yaml"));
}

TEST(PipelineConfigErrors, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(parse_error(minimal_with("mux:\n  batch_sise: 4\n")),
            "test.yaml:8:3: unknown key 'mux.batch_sise' (did you mean 'batch_size'?)");
  EXPECT_EQ(parse_error(minimal_with("colour: red\n")), "test.yaml:7:1: unknown key 'colour'");
  EXPECT_THAT(
      parse_error("sources:\n  - uri: a.mp4\n    lop: true\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
      HasSubstr("unknown key 'sources.0.lop' (did you mean 'loop'?)"));
}

TEST(PipelineConfigErrors, DuplicateKey) {
  EXPECT_EQ(parse_error(minimal_with("mux:\n  live: true\n  live: false\n")),
            "test.yaml:9:3: duplicate key 'mux.live'");
}

TEST(PipelineConfigErrors, WrongTypesNameTheKey) {
  EXPECT_EQ(parse_error(minimal_with("mux:\n  batch_size: four\n")),
            "test.yaml:8:15: mux.batch_size: expected an integer, got 'four'");
  EXPECT_EQ(parse_error(minimal_with("mux:\n  batch_size: 2.5\n")),
            "test.yaml:8:15: mux.batch_size: expected an integer, got '2.5'");
  EXPECT_EQ(parse_error(minimal_with("mux:\n  live: maybe\n")),
            "test.yaml:8:9: mux.live: expected true or false, got 'maybe'");
  EXPECT_EQ(parse_error(minimal_with("task:\n  sigma: [1]\n")),
            "test.yaml:8:10: task.sigma: expected a number, got a list");
  EXPECT_EQ(parse_error(minimal_with("stats:\n  report: {a: 1}\n")),
            "test.yaml:8:11: stats.report: expected a string, got a map");
  EXPECT_EQ(parse_error(minimal_with("mux: 4\n")), "test.yaml:7:6: mux: expected a map, got '4'");
  EXPECT_THAT(parse_error("sources: a.mp4\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
              HasSubstr("sources: expected a list of sources, got 'a.mp4'"));
}

TEST(PipelineConfigErrors, UnknownEnumValuesListTheChoices) {
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4, decoder: gpu}]\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
      HasSubstr("sources.0.decoder: expected one of auto, cpu, nvdec, got 'gpu'"));
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, precision: fp8}\nsinks: {null: true}\n"),
      HasSubstr("model.precision: expected one of fp32, fp16, got 'fp8'"));
  EXPECT_THAT(parse_error(minimal_with("task: {type: detection}\n")),
              HasSubstr("task.type: expected one of segmentation, got 'detection'"));
  EXPECT_THAT(parse_error(minimal_with("task: {type: detection}\n")), HasSubstr("test.yaml:7:14:"));
}

TEST(PipelineConfigErrors, OutOfRangeValues) {
  EXPECT_EQ(parse_error(minimal_with("mux: {batch_size: 0}\n")),
            "test.yaml:7:19: mux.batch_size: must be between 1 and 1024, got 0");
  EXPECT_EQ(parse_error(minimal_with("task: {blur_kernel: 30}\n")),
            "test.yaml:7:21: task.blur_kernel: must be odd, got 30");
  EXPECT_THAT(parse_error(minimal_with("mux: {width: -640}\n")),
              HasSubstr("mux.width: must be between 2 and 8192"));
  EXPECT_THAT(parse_error(minimal_with("mux: {height: 1081}\n")), HasSubstr("mux.height: must be even"));
  EXPECT_THAT(parse_error(minimal_with("mux: {push_timeout_us: -2}\n")),
              HasSubstr("mux.push_timeout_us: must be"));
  EXPECT_THAT(parse_error(minimal_with("mux: {batch_size: 99999999999999999999}\n")),
              HasSubstr("mux.batch_size: '99999999999999999999' is out of range"));
  EXPECT_THAT(parse_error(minimal_with("task: {sigma: 0}\n")),
              HasSubstr("task.sigma: must be positive, got 0"));
  EXPECT_THAT(parse_error(minimal_with("task: {classes: [8, -1]}\n")),
              HasSubstr("task.classes.1: must be a class id (0 or more), got -1"));
  EXPECT_THAT(parse_error(minimal_with("task: {classes: [8, 8]}\n")),
              HasSubstr("task.classes.1: class 8 is listed twice"));
  EXPECT_THAT(parse_error("sources: [{uri: a.mp4, start: -1}]\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
              HasSubstr("sources.0.start: must not be negative, got -1"));
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, std: [1, 0, 1]}\nsinks: {null: true}\n"),
      HasSubstr("model.std.1: must be positive, got 0"));
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, mean: [1, 2]}\nsinks: {null: true}\n"),
      HasSubstr("model.mean: expected a list of 3 numbers, got a list"));
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, input_width: 960}\nsinks: {null: true}\n"),
      HasSubstr("model.input_width: input_width and input_height go together"));
  EXPECT_THAT(parse_error(minimal_with("sinks_x: 1\n")), HasSubstr("did you mean 'sinks'?"));
}

// A configuration built in code (segment's flags) goes through the file's checks, its errors naming
// each key the caller's way.
TEST(PipelineConfigErrors, CheckConfigNamesKeysTheCallersWay) {
  const auto name = [](std::string_view key) { return std::string("<").append(key).append(">"); };
  PipelineConfig config = parse_ok(kMinimal);
  config.task.blur_kernel = 30;
  EXPECT_EQ(check_config(config, name).status().message(), "<task.blur_kernel>: must be odd, got 30");
  config.task.blur_kernel = 31;
  config.task.classes = {1, 1};
  EXPECT_EQ(check_config(config, name).status().message(), "<task.classes.1>: class 1 is listed twice");
  config.task.classes = {1};
  const Result<PipelineConfig> checked = check_config(config, name);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  EXPECT_EQ(*checked, config);
}

TEST(PipelineConfigErrors, SinksAreChecked) {
  const std::string base = "sources: [{uri: a.mp4}]\nmodel: {path: m.onnx}\n";
  EXPECT_THAT(parse_error(base), HasSubstr("sinks: no sink is enabled"));
  EXPECT_THAT(parse_error(base + "sinks: {video: {codec: h264}}\n"),
              HasSubstr("missing required key 'sinks.video.output_dir'"));
  EXPECT_THAT(parse_error(base + "sinks: {video: {output_dir: out, preset: quick}}\n"),
              HasSubstr("sinks.video.preset: expected one of ultrafast,"));
  EXPECT_THAT(parse_error(base + "sinks: {video: {output_dir: out, codec: vp9}}\n"),
              HasSubstr("sinks.video.codec: expected one of h264, hevc, got 'vp9'"));
  EXPECT_THAT(parse_error(base + "sinks: {metadata: {file: a.jsonl}}\n"),
              HasSubstr("unknown key 'sinks.metadata.file'"));
}

TEST(PipelineConfigErrors, MissingRequiredKeys) {
  EXPECT_EQ(parse_error("model: {path: m.onnx}\nsinks: {null: true}\n"),
            "test.yaml:1:1: missing required key 'sources'");
  EXPECT_EQ(parse_error("sources: [{uri: a.mp4}]\nsinks: {null: true}\n"),
            "test.yaml:1:1: missing required key 'model.path'");
  EXPECT_EQ(parse_error("sources: [{uri: a.mp4}]\nmodel: {precision: fp16}\nsinks: {null: true}\n"),
            "test.yaml:2:8: missing required key 'model.path'");
  EXPECT_EQ(parse_error("sources: [{loop: true}]\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
            "test.yaml:1:11: missing required key 'sources.0.uri'");
  EXPECT_THAT(parse_error("sources: []\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
              HasSubstr("sources: must list at least one source"));
  EXPECT_THAT(parse_error("sources: [{uri: ''}]\nmodel: {path: m.onnx}\nsinks: {null: true}\n"),
              HasSubstr("sources.0.uri: must not be empty"));
}

TEST(PipelineConfigErrors, MalformedYaml) {
  EXPECT_THAT(parse_error("sources: [{uri: a.mp4}\nmodel: {path: m.onnx}\n"), HasSubstr("test.yaml:"));
  EXPECT_THAT(parse_error("sources: [{uri: a.mp4}\nmodel: {path: m.onnx}\n"), HasSubstr("malformed YAML"));
  EXPECT_EQ(parse_error("mux:\n\tbatch_size: 4\n"), "test.yaml:2:12: malformed YAML: illegal map value");
  EXPECT_EQ(parse_error(""), "test.yaml: the configuration is empty");
  EXPECT_EQ(parse_error("- a\n- b\n"), "test.yaml:1:1: expected a map, got a list");
}

TEST(PipelineConfigOverrides, SetValuesTypedLikeTheFile) {
  PipelineConfig config = parse_ok(kMinimal);
  ASSERT_TRUE(apply_override(config, "mux.batch_size=4").is_ok());
  EXPECT_EQ(config.mux.batch_size, 4);
  ASSERT_TRUE(apply_override(config, "sources.0.uri=b.mp4").is_ok());
  EXPECT_EQ(config.sources[0].uri, "b.mp4");
  ASSERT_TRUE(apply_override(config, "model.precision=fp16").is_ok());
  EXPECT_EQ(config.model.precision, runtime::Precision::kFloat16);
  ASSERT_TRUE(apply_override(config, "model.mean.1=0.5").is_ok());
  EXPECT_EQ(config.model.mean[1], 0.5f);
  ASSERT_TRUE(apply_override(config, "model.std=[0.2, 0.3, 0.4]").is_ok());
  EXPECT_EQ(config.model.std, (std::array<float, 3>{0.2f, 0.3f, 0.4f}));
  ASSERT_TRUE(apply_override(config, "task.classes=[8, 15]").is_ok());
  EXPECT_EQ(config.task.classes, (std::vector<int>{8, 15}));
  ASSERT_TRUE(apply_override(config, "sinks.video.output_dir=out").is_ok());
  ASSERT_TRUE(config.sinks.video.has_value());
  EXPECT_EQ(config.sinks.video->output_dir, "out");
  ASSERT_TRUE(apply_override(config, "stats.report=r.json").is_ok());
  EXPECT_EQ(config.stats.report, "r.json");
  ASSERT_TRUE(apply_override(config, "stats.report=").is_ok());
  EXPECT_FALSE(config.stats.report.has_value());
}

TEST(PipelineConfigOverrides, IndexPastTheEndAppendsASource) {
  PipelineConfig config = parse_ok(kMinimal);
  ASSERT_TRUE(apply_override(config, "sources.1.uri=c.mp4").is_ok());
  ASSERT_EQ(config.sources.size(), 2u);
  EXPECT_EQ(config.sources[1], (SourceConfig{.uri = "c.mp4"}));
}

TEST(PipelineConfigOverrides, InvalidOverridesNameTheKeyAndChangeNothing) {
  const PipelineConfig original = parse_ok(kMinimal);
  PipelineConfig config = original;
  const auto error = [&config](std::string_view assignment) {
    const Status status = apply_override(config, assignment);
    EXPECT_FALSE(status.is_ok()) << assignment;
    return status.message();
  };
  EXPECT_EQ(error("mux.batch_size=four"),
            "--set mux.batch_size=four: mux.batch_size: expected an integer, got 'four'");
  EXPECT_EQ(error("mux.batch_sise=4"),
            "--set mux.batch_sise=4: unknown key 'mux.batch_sise' (did you mean 'batch_size'?)");
  EXPECT_EQ(error("task.blur_kernel=4"), "--set task.blur_kernel=4: task.blur_kernel: must be odd, got 4");
  EXPECT_THAT(error("sources.3.uri=x.mp4"),
              HasSubstr("sources.3: index 3 is past the end of the list (the next new entry is 1)"));
  EXPECT_THAT(error("sources.first.uri=x.mp4"),
              HasSubstr("sources.first: expected a list index, got 'first'"));
  EXPECT_THAT(error("mux.batch_size.x=1"), HasSubstr("mux.batch_size holds a value, not a map or a list"));
  EXPECT_THAT(error("mux.batch_size"), HasSubstr("expected key=value"));
  EXPECT_THAT(error("=4"), HasSubstr("expected key=value"));
  EXPECT_THAT(error("mux..batch_size=4"), HasSubstr("empty key"));
  EXPECT_THAT(error("model.path=[a"), HasSubstr("malformed YAML"));
  EXPECT_THAT(error("sources.1.decoder=cpu"), HasSubstr("missing required key 'sources.1.uri'"));
  EXPECT_EQ(config, original);
}

}  // namespace
}  // namespace fovea::pipeline
