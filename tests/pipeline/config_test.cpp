#include "pipeline/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

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

std::string config_doc() {
  return read_text(std::filesystem::path(FOVEA_DOCS_DIR) / "config.md");
}

// The `index`th ```yaml block of docs/config.md: 0 the complete segmentation example, 1 the
// detection example.
std::string doc_example(int index = 0) {
  const std::string doc = config_doc();
  const std::string fence = "```yaml\n";
  std::size_t begin = doc.find(fence);
  for (int i = 0; i < index && begin != std::string::npos; ++i) begin = doc.find(fence, begin + fence.size());
  EXPECT_NE(begin, std::string::npos) << "docs/config.md has no ```yaml block " << index;
  if (begin == std::string::npos) return {};
  const std::size_t end = doc.find("```", begin + fence.size());
  return doc.substr(begin + fence.size(), end - begin - fence.size());
}

std::string detection_example() {
  return doc_example(1);
}

// A detection flow: one detector with its parser. The models list comes last, so that
// detection_with() can add entries to it.
constexpr std::string_view kDetection = R"(sources:
  - uri: a.mp4
flow: detection
sinks:
  null: true
models:
  - name: det
    path: d.onnx
    parser: ssd
)";

std::string detection_with(std::string_view extra) {
  return std::string(kDetection) + std::string(extra);
}

TEST(PipelineConfig, MinimalFileTakesEveryDefault) {
  const PipelineConfig config = parse_ok(kMinimal);
  ASSERT_EQ(config.sources.size(), 1u);
  EXPECT_EQ(config.sources[0], (SourceConfig{.uri = "a.mp4"}));
  EXPECT_EQ(config.mux, MuxConfig{});
  EXPECT_EQ(config.models, (std::vector<ModelConfig>{{.path = "m.onnx"}}));
  EXPECT_EQ(config.models[0].name, "model");
  EXPECT_EQ(config.flow, FlowKind::kSegmentation);
  EXPECT_TRUE(config.stages.empty());
  EXPECT_EQ(stages_of(config), std::vector<StageKind>{StageKind::kSegment});
  EXPECT_EQ(config.task, TaskConfig{});
  EXPECT_EQ(config.detect, DetectConfig{});
  EXPECT_EQ(config.osd, OsdConfig{});
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
  EXPECT_FALSE(mux.push_timeout_us.has_value());  // live: a frame period; files: a full batch
  EXPECT_FALSE(mux.live.has_value());             // live when a source is a network stream
  EXPECT_FALSE(mux.max_frames_per_source.has_value());
  EXPECT_EQ(mux.source_queue, 4);
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
  EXPECT_FALSE(VideoSinkConfig{}.mosaic.has_value());
  EXPECT_FALSE(model.parser.has_value());
  EXPECT_FALSE(model.labels.has_value());
  EXPECT_FALSE(model.batch_size.has_value());
  const DetectConfig detect;
  EXPECT_EQ(detect.model, "");
  EXPECT_EQ(detect.confidence, 0.4f);
  EXPECT_EQ(detect.iou, 0.5f);
  EXPECT_EQ(detect.top_k, 100);
  EXPECT_EQ(detect.interval, 0);
  const OsdConfig osd;
  EXPECT_FALSE(osd.enabled);
  EXPECT_EQ(osd.thickness, 2);
  EXPECT_EQ(osd.text_scale, 2);
  EXPECT_TRUE(osd.labels);
  EXPECT_TRUE(osd.scores);
  const MosaicConfig mosaic;
  EXPECT_EQ(mosaic.width, 1920);
  EXPECT_EQ(mosaic.height, 1080);
  EXPECT_FALSE(mosaic.columns.has_value());
}

TEST(PipelineConfig, DocumentedExampleLoadsWithEveryValue) {
  const PipelineConfig config = parse_ok(doc_example());
  ASSERT_EQ(config.sources.size(), 2u);
  EXPECT_EQ(config.sources[0], (SourceConfig{.uri = "clips/street.mp4",
                                             .decoder = io::DecoderBackend::kNvdec,
                                             .loop = false,
                                             .start = 2.5,
                                             .duration = 10.0}));
  EXPECT_EQ(config.sources[1], (SourceConfig{.uri = "rtsp://camera.local/stream",
                                             .name = "gate",
                                             .timeout = 5.0,
                                             .transport = io::RtspTransport::kTcp,
                                             .reconnect_initial = 0.5,
                                             .reconnect_max = 30.0}));
  EXPECT_EQ(config.mux, (MuxConfig{.batch_size = 4,
                                   .width = 1920,
                                   .height = 1080,
                                   .push_timeout_us = 40000,
                                   .max_frames_per_source = 2,
                                   .live = false,
                                   .source_queue = 8}));
  ASSERT_EQ(config.models.size(), 1u);
  EXPECT_EQ(config.models[0], (ModelConfig{.path = "models/fcn_resnet101.onnx",
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
  const bool keyed_by_class =
      node.IsMap() && node.size() > 0 &&
      node.begin()->first.Scalar().find_first_not_of("0123456789") == std::string::npos;
  if (node.IsMap() && !keyed_by_class) {  // class_confidence's keys are data, not schema
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
  const std::string doc = config_doc();
  std::vector<std::string> keys;
  collect_keys(YAML::Load(dump_config(parse_ok(doc_example()))), "", keys);
  collect_keys(YAML::Load(dump_config(parse_ok(detection_example()))), "", keys);
  EXPECT_GT(keys.size(), 60u);
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
  EXPECT_EQ(config->models[0].path, (dir / "m.onnx").string());
  EXPECT_EQ(config->models[0].engine_cache, (dir / "engines").string());
  // The file itself is remembered (the flow never writes over it), through overrides and checks.
  PipelineConfig edited = *config;
  EXPECT_EQ(edited.file, path);
  ASSERT_TRUE(apply_override(edited, "sinks.metadata.path=out.jsonl").is_ok());
  EXPECT_EQ(edited.file, path);
  const Result<PipelineConfig> checked =
      check_config(edited, [](std::string_view key) { return std::string(key); });
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  EXPECT_EQ(checked->file, path);
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
      HasSubstr("model.precision: expected one of fp32, fp16, int8, got 'fp8'"));
  EXPECT_THAT(parse_error(minimal_with("task: {type: detection}\n")),
              HasSubstr("task.type: expected one of segmentation, got 'detection'"));
  EXPECT_THAT(parse_error(minimal_with("task: {type: detection}\n")), HasSubstr("test.yaml:7:14:"));
}

// A source's name becomes its output file's name: a path out of the output folder is refused.
TEST(PipelineConfigErrors, SourceNamesThatArePathsAreRefused) {
  for (const char* name : {"../../media/clip", "/tmp/abs", "sub/dir", "..", "."}) {
    EXPECT_THAT(
        parse_error(fmt::format("sources: [{{uri: a.mp4, name: '{}'}}]\nmodel: {{path: m.onnx}}\n"
                                "sinks: {{null: true}}\n",
                                name)),
        HasSubstr("sources.0.name: '" + std::string(name) + "': a source's name is its output files' name"))
        << name;
  }
}

TEST(PipelineConfigErrors, OutOfRangeValues) {
  EXPECT_EQ(parse_error(minimal_with("mux: {batch_size: 0}\n")),
            "test.yaml:7:19: mux.batch_size: must be between 1 and 1024, got 0");
  EXPECT_EQ(parse_error(minimal_with("task: {blur_kernel: 30}\n")),
            "test.yaml:7:21: task.blur_kernel: must be odd, got 30");
  EXPECT_THAT(parse_error(minimal_with("mux: {width: -640}\n")),
              HasSubstr("mux.width: must be between 2 and 8192"));
  EXPECT_THAT(parse_error(minimal_with("mux: {height: 1081}\n")), HasSubstr("mux.height: must be even"));
  EXPECT_EQ(parse_error(minimal_with("mux: {source_queue: 0}\n")),
            "test.yaml:7:21: mux.source_queue: must be between 1 and 64, got 0");
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
  EXPECT_THAT(
      parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, precision: int8}\nsinks: {null: true}\n"),
      HasSubstr("model.precision: int8 needs `calibration:`"));
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
  EXPECT_TRUE(parse_config("sources: []\nmodel: {path: m.onnx}\nsinks: {null: true}\n", "test.yaml").is_ok())
      << "fovea serve starts without sources";
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
  EXPECT_EQ(config.models[0].precision, runtime::Precision::kFloat16);
  ASSERT_TRUE(apply_override(config, "model.mean.1=0.5").is_ok());
  EXPECT_EQ(config.models[0].mean[1], 0.5f);
  ASSERT_TRUE(apply_override(config, "model.std=[0.2, 0.3, 0.4]").is_ok());
  EXPECT_EQ(config.models[0].std, (std::array<float, 3>{0.2f, 0.3f, 0.4f}));
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

// Values valid only together are set together: one at a time, reconnect_initial 60 was refused
// against the default reconnect_max (30), and a new model's path without its name.
TEST(PipelineConfigOverrides, SeveralAtOnceAreCheckedTogether) {
  PipelineConfig config = parse_ok(kMinimal);
  const std::vector<std::string> together = {"sources.0.reconnect_initial=60", "sources.0.reconnect_max=120",
                                             "models.1.path=c.onnx", "models.1.name=classifier"};
  EXPECT_FALSE(apply_override(config, together[0]).is_ok());
  const Status applied = apply_overrides(config, together);
  ASSERT_TRUE(applied.is_ok()) << applied.to_string();
  EXPECT_EQ(config.sources[0].reconnect_initial, 60.0);
  EXPECT_EQ(config.sources[0].reconnect_max, 120.0);
  ASSERT_EQ(config.models.size(), 2u);
  EXPECT_EQ(config.models[1].name, "classifier");
  // Still checked: the pair the other way round is refused, naming the key, and nothing changes.
  const PipelineConfig before = config;
  const Status refused = apply_overrides(
      config, std::vector<std::string>{"sources.0.reconnect_initial=200", "mux.batch_size=2"});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_THAT(refused.message(), HasSubstr("sources.0.reconnect_max"));
  EXPECT_EQ(config, before);
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

// Each key of the table-driven sections has its row in docs/config.md as the table gives it, so the
// docs' kind, range and default cannot drift from the parser's.
TEST(PipelineConfig, SchemaTablesMatchTheDocs) {
  const std::string doc = config_doc();
  const std::vector<SchemaKey> keys = schema_keys();
  EXPECT_GT(keys.size(), 30u);
  for (const SchemaKey& key : keys) {
    const std::string row =
        "| `" + key.key + "` | " + key.kind + " | " + key.default_value + " | " + key.meaning;
    EXPECT_THAT(doc, HasSubstr(row)) << "docs/config.md lacks the row (or its start):\n" << row << " |";
  }
}

TEST(PipelineConfig, DetectionExampleLoadsWithEveryValue) {
  const PipelineConfig config = parse_ok(detection_example());
  EXPECT_EQ(config.flow, FlowKind::kDetection);
  EXPECT_EQ(stages_of(config), (std::vector<StageKind>{StageKind::kDetect, StageKind::kOsd}));
  ASSERT_EQ(config.models.size(), 2u);
  EXPECT_EQ(config.models[0], (ModelConfig{.name = "detector",
                                           .path = "models/ssd300_vgg16.onnx",
                                           .precision = runtime::Precision::kFloat16,
                                           .input_width = 300,
                                           .input_height = 300,
                                           .engine_cache = "engines",
                                           .parser = post::DetectParser::kSsd,
                                           .labels = "models/coco_labels.txt"}));
  EXPECT_EQ(config.models[1], (ModelConfig{.name = "color",
                                           .path = "models/vehicle_color.onnx",
                                           .mean = {0.0f, 0.0f, 0.0f},
                                           .std = {1.0f, 1.0f, 1.0f},
                                           .labels = "models/colors.txt",
                                           .batch_size = 32}));
  EXPECT_EQ(config.detect, (DetectConfig{.model = "detector",
                                         .confidence = 0.4f,
                                         .class_confidence = {{1, 0.6f}},
                                         .iou = 0.45f,
                                         .classes = {1, 3},
                                         .top_k = 200,
                                         .min_width = 8.0f,
                                         .min_height = 8.0f,
                                         .interval = 1}));
  EXPECT_EQ(config.osd, (OsdConfig{.enabled = true,
                                   .thickness = 3,
                                   .fill_alpha = 0.2f,
                                   .labels = true,
                                   .scores = false,
                                   .text_scale = 2,
                                   .blur_classes = {}}));
  ASSERT_TRUE(config.sinks.video.has_value());
  EXPECT_EQ(config.sinks.video->mosaic, (MosaicConfig{.width = 1920, .height = 1080, .columns = 2}));
  EXPECT_EQ(find_model(config, config.detect.model), &config.models[0]);
}

TEST(PipelineConfig, DetectionDumpReadsBackEqual) {
  PipelineConfig config = parse_ok(detection_example());
  EXPECT_EQ(parse_ok(dump_config(config)), config);
  config.stages = {StageKind::kDetect};
  config.detect.class_confidence = {{7, 0.25f}, {0, 0.5f}};  // file order is kept
  config.sinks.video->mosaic->columns.reset();
  EXPECT_EQ(parse_ok(dump_config(config)), config);
  EXPECT_THAT(dump_config(parse_ok(kMinimal)), HasSubstr("models:"));
}

TEST(PipelineConfig, StagesAndModelsAreFound) {
  PipelineConfig config = parse_ok(detection_with("  - name: color\n    path: c.onnx\nstages: [detect]\n"));
  EXPECT_EQ(stages_of(config), std::vector<StageKind>{StageKind::kDetect});
  EXPECT_EQ(find_model(config, ""), &config.models[0]);
  EXPECT_EQ(find_model(config, "det"), &config.models[0]);
  EXPECT_EQ(find_model(config, "color"), &config.models[1]);
  EXPECT_EQ(find_model(config, "colour"), nullptr);
  config.stages.clear();
  config.flow = FlowKind::kSegmentation;
  EXPECT_EQ(stages_of(config), std::vector<StageKind>{StageKind::kSegment});
  EXPECT_EQ(find_model(PipelineConfig{}, ""), nullptr);
}

TEST(PipelineConfig, LoneModelIsTheFirstOfModels) {
  const PipelineConfig lone = parse_ok(kMinimal);
  const PipelineConfig listed =
      parse_ok("sources: [{uri: a.mp4}]\nmodels:\n  - name: model\n    path: m.onnx\nsinks: {null: true}\n");
  EXPECT_EQ(lone, listed);
  EXPECT_EQ(parse_error("sources: [{uri: a.mp4}]\nmodel: {path: m.onnx, name: seg}\nsinks: {null: true}\n"),
            "test.yaml:2:23: unknown key 'model.name'");
}

// Paths in a file are taken from its folder: every model's, its engine cache and its labels.
TEST(PipelineConfig, ModelPathsInAFileAreTakenFromItsFolder) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fovea_config_models_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.yaml").string();
  std::ofstream(path) << detection_with(
      "    labels: labels.txt\n    engine_cache: engines\n"
      "  - name: second\n    path: /abs/s.onnx\n    labels: s.txt\n");
  const Result<PipelineConfig> config = load_config(path);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->models[0].path, (dir / "d.onnx").string());
  EXPECT_EQ(config->models[0].labels, (dir / "labels.txt").string());
  EXPECT_EQ(config->models[0].engine_cache, (dir / "engines").string());
  EXPECT_EQ(config->models[1].path, "/abs/s.onnx");
  EXPECT_EQ(config->models[1].labels, (dir / "s.txt").string());
}

TEST(PipelineConfigErrors, ModelsAreChecked) {
  const std::string base = "sources: [{uri: a.mp4}]\nsinks: {null: true}\n";
  EXPECT_EQ(parse_error(base + "model: {path: m.onnx}\nmodels: [{name: a, path: a.onnx}]\n"),
            "test.yaml:4:9: models: give either 'model' (one model) or 'models' (a list), not both");
  EXPECT_EQ(parse_error(base + "models:\n  - {name: a, path: a.onnx}\n  - {name: a, path: b.onnx}\n"),
            "test.yaml:5:12: models.1.name: 'a' is already the name of models.0; model names are unique");
  EXPECT_EQ(parse_error(base + "models:\n  - {path: a.onnx}\n"),
            "test.yaml:4:5: missing required key 'models.0.name'");
  EXPECT_EQ(parse_error(base + "models: []\n"), "test.yaml:3:9: models: must list at least one model");
  EXPECT_THAT(parse_error(base + "models: {name: a}\n"),
              HasSubstr("models: expected a list of models, got a map"));
  EXPECT_EQ(parse_error(base + "models:\n  - {name: a, path: a.onnx, parsr: ssd}\n"),
            "test.yaml:4:29: unknown key 'models.0.parsr' (did you mean 'parser'?)");
  EXPECT_EQ(parse_error(base + "models:\n  - {name: a, path: a.onnx, parser: rcnn}\n"),
            "test.yaml:4:37: models.0.parser: unknown detection parser 'rcnn'; known parsers: ssd, yolo, "
            "detectnet, boxes");
  EXPECT_EQ(parse_error(base + "models:\n  - {name: a, path: a.onnx, batch_size: 0}\n"),
            "test.yaml:4:41: models.0.batch_size: must be between 1 and 1024, got 0");
  EXPECT_THAT(parse_error(base + "models:\n  - {name: '', path: a.onnx}\n"),
              HasSubstr("models.0.name: must not be empty"));
  EXPECT_THAT(parse_error(base + "models:\n  - {name: a, path: a.onnx, labels: ''}\n"),
              HasSubstr("models.0.labels: must not be empty"));
  EXPECT_THAT(parse_error(base + "models:\n  - {name: a, path: a.onnx, input_height: 9}\n"),
              HasSubstr("models.0.input_height: input_width and input_height go together"));
}

TEST(PipelineConfigErrors, StagesAreChecked) {
  EXPECT_EQ(parse_error(detection_with("stages: [detect, tracker]\n")),
            "test.yaml:10:18: stages.1: expected one of segment, detect, track, classify, osd, image2image, "
            "classify_frames, got 'tracker'");
  EXPECT_EQ(parse_error(detection_with("stages: [osd, detect]\n")),
            "test.yaml:10:10: stages.0: the first stage runs the primary model: segment, detect, image2image "
            "or classify_frames, got osd");
  EXPECT_EQ(parse_error(detection_with("stages: [detect, segment]\n")),
            "test.yaml:10:18: stages.1: only one stage runs the primary model, and stages.0 (detect) does; "
            "got segment");
  EXPECT_EQ(parse_error(detection_with("stages: [detect, osd, osd]\n")),
            "test.yaml:10:23: stages.2: osd is listed twice");
  EXPECT_EQ(parse_error(minimal_with("stages: [segment, osd]\n")),
            "test.yaml:7:19: stages.1: osd draws the detect stage's boxes: it comes after detect");
  EXPECT_EQ(parse_error(minimal_with("stages: detect\n")),
            "test.yaml:7:9: stages: expected a list of stages, got 'detect'");
  EXPECT_EQ(parse_error(minimal_with("flow: tracking\n")),
            "test.yaml:7:7: flow: expected one of segmentation, detection, image2image, classification, got "
            "'tracking'");
  EXPECT_EQ(parse_error(minimal_with("stagse: [segment]\n")),
            "test.yaml:7:1: unknown key 'stagse' (did you mean 'stages'?)");
  // An empty list is the preset's.
  EXPECT_EQ(parse_ok(detection_with("stages: []\n")), parse_ok(kDetection));
}

TEST(PipelineConfigErrors, TheDetectStageNeedsItsModelsParser) {
  EXPECT_EQ(
      parse_error(minimal_with("flow: detection\n")),
      "test.yaml:4:3: model.parser: the detect stage runs this model: give its parser, one of ssd, yolo, "
      "detectnet, boxes");
  EXPECT_EQ(
      parse_error(minimal_with("stages: [detect]\n")),
      "test.yaml:4:3: model.parser: the detect stage runs this model: give its parser, one of ssd, yolo, "
      "detectnet, boxes");
  // detect.model picks the model; a second model without a parser runs elsewhere.
  EXPECT_THAT(parse_error(detection_with("  - {name: b, path: b.onnx}\ndetect: {model: b}\n")),
              HasSubstr("models.1.parser: the detect stage runs this model: give its parser"));
  EXPECT_EQ(parse_error(detection_with("detect: {model: detector}\n")),
            "test.yaml:10:17: detect.model: no model is named 'detector' (the models: det)");
  // Without a detect stage, no model needs a parser.
  EXPECT_FALSE(parse_ok(minimal_with("detect: {confidence: 0.3}\n")).models[0].parser.has_value());
}

// The segment stage's kernel limits hold where it runs; a detection file may keep an unused task:.
TEST(PipelineConfigErrors, SegmentChecksOnlyWhenTheSegmentStageRuns) {
  EXPECT_EQ(parse_ok(detection_with("task: {blur_kernel: 30}\n")).task.blur_kernel, 30);
  EXPECT_THAT(parse_error(minimal_with("task: {blur_kernel: 30}\n")), HasSubstr("must be odd, got 30"));
  EXPECT_THAT(parse_error(detection_with("task: {blur_kernel: thirty}\n")),
              HasSubstr("task.blur_kernel: expected an integer, got 'thirty'"));
  EXPECT_THAT(parse_error(detection_with("task: {blur_kernel: 31, colour: red}\n")),
              HasSubstr("unknown key 'task.colour'"));
}

TEST(PipelineConfigErrors, DetectAndOsdValuesAreChecked) {
  const auto error = [](std::string_view extra) { return parse_error(detection_with(extra)); };
  EXPECT_EQ(error("detect: {confidance: 0.5}\n"),
            "test.yaml:10:10: unknown key 'detect.confidance' (did you mean 'confidence'?)");
  EXPECT_EQ(error("detect: {confidence: 1.5}\n"),
            "test.yaml:10:22: detect.confidence: must be between 0 and 1, got 1.5");
  EXPECT_EQ(error("detect: {iou: 0}\n"), "test.yaml:10:15: detect.iou: must be above 0 and at most 1, got 0");
  EXPECT_EQ(error("detect: {top_k: 0}\n"),
            "test.yaml:10:17: detect.top_k: must be between 1 and 10000, got 0");
  EXPECT_EQ(error("detect: {interval: 1001}\n"),
            "test.yaml:10:20: detect.interval: must be between 0 and 1000, got 1001");
  EXPECT_EQ(error("detect: {min_width: -1}\n"),
            "test.yaml:10:21: detect.min_width: must not be negative, got -1");
  EXPECT_EQ(error("detect: {classes: [1, -2]}\n"),
            "test.yaml:10:23: detect.classes.1: must be a class id (0 or more), got -2");
  EXPECT_EQ(error("detect: {class_confidence: {2: 1.5}}\n"),
            "test.yaml:10:32: detect.class_confidence.2: must be between 0 and 1, got 1.5");
  EXPECT_EQ(error("detect: {class_confidence: {-1: 0.5}}\n"),
            "test.yaml:10:29: detect.class_confidence.-1: must be a class id (0 or more), got -1");
  EXPECT_EQ(error("detect: {class_confidence: {person: 0.5}}\n"),
            "test.yaml:10:29: detect.class_confidence.person: expected an integer, got 'person'");
  EXPECT_EQ(error("detect: {class_confidence: {2: 0.5, 2: 0.6}}\n"),
            "test.yaml:10:37: detect.class_confidence.2: class 2 is listed twice");
  EXPECT_EQ(error("detect: {class_confidence: [0.5]}\n"),
            "test.yaml:10:28: detect.class_confidence: expected a map of class id: threshold, got a list");
  EXPECT_EQ(error("osd: {thickness: 0}\n"),
            "test.yaml:10:18: osd.thickness: must be between 1 and 64, got 0");
  EXPECT_EQ(error("osd: {text_scale: 17}\n"),
            "test.yaml:10:19: osd.text_scale: must be between 1 and 16, got 17");
  EXPECT_EQ(error("osd: {fill_alpha: 1.1}\n"),
            "test.yaml:10:19: osd.fill_alpha: must be between 0 and 1, got 1.1");
  EXPECT_EQ(error("osd: {enabled: sometimes}\n"),
            "test.yaml:10:16: osd.enabled: expected true or false, got 'sometimes'");
  EXPECT_EQ(error("osd: {blur_classes: [3, 3]}\n"),
            "test.yaml:10:25: osd.blur_classes.1: class 3 is listed twice");
  EXPECT_EQ(error("osd: {labls: true}\n"),
            "test.yaml:10:7: unknown key 'osd.labls' (did you mean 'labels'?)");
}

TEST(PipelineConfigErrors, MosaicIsChecked) {
  const std::string base =
      "sources: [{uri: a.mp4}]\nmodel: {path: m.onnx}\nsinks:\n  video:\n    output_dir: out\n";
  EXPECT_EQ(parse_error(base + "    mosaic: {width: 1279}\n"),
            "test.yaml:6:21: sinks.video.mosaic.width: must be even (4:2:0 frames), got 1279");
  EXPECT_EQ(parse_error(base + "    mosaic: {height: 8}\n"),
            "test.yaml:6:22: sinks.video.mosaic.height: must be between 16 and 8192, got 8");
  EXPECT_EQ(parse_error(base + "    mosaic: {columns: 65}\n"),
            "test.yaml:6:23: sinks.video.mosaic.columns: must be between 1 and 64, got 65");
  EXPECT_EQ(parse_error(base + "    mosaic: {colums: 2}\n"),
            "test.yaml:6:14: unknown key 'sinks.video.mosaic.colums' (did you mean 'columns'?)");
  EXPECT_EQ(parse_ok(base + "    mosaic:\n").sinks.video->mosaic, std::nullopt);
  EXPECT_EQ(parse_ok(base + "    mosaic: {}\n").sinks.video->mosaic, MosaicConfig{});
}

TEST(PipelineConfigErrors, CheckConfigCoversTheNewSections) {
  const auto name = [](std::string_view key) { return std::string("<").append(key).append(">"); };
  PipelineConfig config = parse_ok(kDetection);
  config.detect.iou = 0.0f;
  EXPECT_EQ(check_config(config, name).status().message(),
            "<detect.iou>: must be above 0 and at most 1, got 0");
  config.detect.iou = 0.5f;
  config.models[0].parser.reset();
  EXPECT_THAT(check_config(config, name).status().message(),
              HasSubstr("<models.0.parser>: the detect stage runs this model"));
  config.models[0].parser = post::DetectParser::kYolo;
  config.osd.thickness = 65;
  EXPECT_EQ(check_config(config, name).status().message(),
            "<osd.thickness>: must be between 1 and 64, got 65");
  config.osd.thickness = 2;
  config.stages = {StageKind::kOsd};
  EXPECT_THAT(check_config(config, name).status().message(), HasSubstr("<stages.0>: the first stage"));
  config.stages = {StageKind::kDetect, StageKind::kOsd};
  config.sinks.video = VideoSinkConfig{.output_dir = "out", .mosaic = MosaicConfig{.width = 17}};
  EXPECT_EQ(check_config(config, name).status().message(),
            "<sinks.video.mosaic.width>: must be even (4:2:0 frames), got 17");
  config.sinks.video->mosaic->width = 1280;
  const Result<PipelineConfig> checked = check_config(config, name);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  EXPECT_EQ(*checked, config);
}

TEST(PipelineConfigOverrides, SetReachesTheNewKeys) {
  PipelineConfig config = parse_ok(detection_with("  - {name: second, path: s.onnx}\n"));
  const auto set = [&config](std::string_view assignment) {
    const Status status = apply_override(config, assignment);
    EXPECT_TRUE(status.is_ok()) << status.to_string();
  };
  set("detect.confidence=0.5");
  EXPECT_EQ(config.detect.confidence, 0.5f);
  set("detect.class_confidence={3: 0.7}");
  EXPECT_EQ(config.detect.class_confidence, (std::vector<ClassThreshold>{{3, 0.7f}}));
  set("models.1.parser=yolo");
  EXPECT_EQ(config.models[1].parser, post::DetectParser::kYolo);
  set("detect.model=second");
  EXPECT_EQ(find_model(config, config.detect.model), &config.models[1]);
  set("models.1.path=x.onnx");
  EXPECT_EQ(config.models[1].path, "x.onnx");
  set("models.2={name: third, path: t.onnx, batch_size: 8}");
  ASSERT_EQ(config.models.size(), 3u);
  EXPECT_EQ(config.models[2].batch_size, 8);
  set("osd.enabled=true");
  EXPECT_TRUE(config.osd.enabled);
  set("osd.blur_classes=[1, 2]");
  EXPECT_EQ(config.osd.blur_classes, (std::vector<int>{1, 2}));
  // Blurring is the osd's: a configuration that turns it off while classes are to be blurred is
  // refused (nothing would be blurred), and left as it was.
  const Status off = apply_override(config, "osd.enabled=false");
  EXPECT_NE(off.message().find("osd.blur_classes: needs the osd to draw"), std::string::npos)
      << off.to_string();
  EXPECT_TRUE(config.osd.enabled);
  set("osd.blur_classes=[]");
  set("stages=[detect]");
  EXPECT_EQ(config.stages, std::vector<StageKind>{StageKind::kDetect});
  set("sinks.video.output_dir=out");
  set("sinks.video.mosaic.columns=3");
  ASSERT_TRUE(config.sinks.video->mosaic.has_value());
  EXPECT_EQ(*config.sinks.video->mosaic, (MosaicConfig{.columns = 3}));
  set("flow=segmentation");
  EXPECT_EQ(config.flow, FlowKind::kSegmentation);
}

// Scripts set `model.X`, the lone model's keys: they reach the first model.
TEST(PipelineConfigOverrides, ModelKeysAreTheFirstModels) {
  PipelineConfig config = parse_ok(kMinimal);
  ASSERT_TRUE(apply_override(config, "model.path=n.onnx").is_ok());
  EXPECT_EQ(config.models[0].path, "n.onnx");
  ASSERT_TRUE(apply_override(config, "model.parser=detectnet").is_ok());
  EXPECT_EQ(config.models[0].parser, post::DetectParser::kDetectNet);
  PipelineConfig listed = parse_ok(detection_with("  - {name: second, path: s.onnx}\n"));
  ASSERT_TRUE(apply_override(listed, "model.precision=fp32").is_ok());
  EXPECT_EQ(listed.models[0].precision, runtime::Precision::kFloat32);
  EXPECT_EQ(listed.models[1].precision, runtime::Precision::kFloat16);
  // Not a prefix match: `models` and `modelx` are their own keys.
  EXPECT_THAT(apply_override(config, "modelx.path=a").message(), HasSubstr("unknown key 'modelx'"));
}

TEST(PipelineConfigOverrides, InvalidNewOverridesNameTheKeyAndChangeNothing) {
  const PipelineConfig original = parse_ok(kDetection);
  PipelineConfig config = original;
  const auto error = [&config](std::string_view assignment) {
    const Status status = apply_override(config, assignment);
    EXPECT_FALSE(status.is_ok()) << assignment;
    return status.message();
  };
  EXPECT_EQ(error("detect.confidence=2"),
            "--set detect.confidence=2: detect.confidence: must be between 0 and 1, got 2");
  EXPECT_EQ(error("stages=[osd]"),
            "--set stages=[osd]: stages.0: the first stage runs the primary model: segment, detect, "
            "image2image or classify_frames, got osd");
  EXPECT_THAT(error("models.1.path=x.onnx"), HasSubstr("missing required key 'models.1.name'"));
  EXPECT_THAT(error("model.parser="), HasSubstr("models.0.parser: the detect stage runs this model"));
  EXPECT_THAT(error("models.1={name: det, path: x.onnx}"),
              HasSubstr("models.1.name: 'det' is already the name of models.0"));
  EXPECT_EQ(config, original);
}

// kDetection with a second model for the classify stage.
std::string cascade_with(std::string_view extra) {
  return detection_with("  - name: color\n    path: c.onnx\n    batch_size: 8\n" + std::string(extra));
}

TEST(PipelineConfig, TrackAndSecondaryAreReadAndTheirStagesJoinThePreset) {
  const PipelineConfig config = parse_ok(cascade_with(
      "track: {enabled: true, tracker: sort, max_age: 10, min_hits: 1}\n"
      "secondary:\n"
      "  - {model: color, operate_on_classes: [1, 3], min_width: 16, reinfer_interval: 10, top_k: 2}\n"));
  EXPECT_EQ(stages_of(config), (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack,
                                                       StageKind::kClassify, StageKind::kOsd}));
  const track::TrackerParams params = tracker_params(config.track);
  EXPECT_EQ(params.kind, track::TrackerKind::kSort);
  EXPECT_EQ(params.max_age, 10);
  EXPECT_EQ(params.min_hits, 1);
  // Left out: SORT's own.
  EXPECT_EQ(params.match_iou, track::default_tracker_params(track::TrackerKind::kSort).match_iou);
  ASSERT_EQ(config.secondary.size(), 1u);
  EXPECT_EQ(config.secondary[0], (SecondaryConfig{.model = "color",
                                                  .operate_on_classes = {1, 3},
                                                  .min_width = 16.0f,
                                                  .reinfer_interval = 10,
                                                  .top_k = 2}));
  EXPECT_EQ(parse_ok(dump_config(config)), config);

  // Without track.enabled and secondary the preset is the detect flow's; listed stages run as listed.
  EXPECT_EQ(stages_of(parse_ok(kDetection)), (std::vector<StageKind>{StageKind::kDetect, StageKind::kOsd}));
  EXPECT_EQ(stages_of(parse_ok(detection_with("stages: [detect, track]\n"))),
            (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack}));
  PipelineConfig overridden = parse_ok(cascade_with(""));
  ASSERT_TRUE(apply_override(overridden, "track.enabled=true").is_ok());
  ASSERT_TRUE(apply_override(overridden, "secondary.0.model=color").is_ok());
  EXPECT_EQ(stages_of(overridden), (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack,
                                                           StageKind::kClassify, StageKind::kOsd}));
}

TEST(PipelineConfigErrors, TrackAndSecondaryAreChecked) {
  EXPECT_THAT(parse_error(detection_with("stages: [detect, osd, track]\n")),
              HasSubstr("stages.2: track comes before osd (the order is detect, track, classify, osd)"));
  EXPECT_THAT(parse_error(minimal_with("stages: [segment, track]\n")),
              HasSubstr("stages.1: track works on the detect stage's objects: it comes after detect"));
  EXPECT_THAT(parse_error(detection_with("stages: [detect, classify]\n")),
              HasSubstr("secondary: the classify stage runs the secondary models: list at least one"));
  EXPECT_THAT(parse_error(detection_with("secondary: [{model: nope}]\n")),
              HasSubstr("secondary.0.model: no model is named 'nope' (the models: det)"));
  EXPECT_THAT(parse_error(detection_with("secondary: [{operate_on_classes: [1]}]\n")),
              HasSubstr("missing required key 'secondary.0.model'"));
  EXPECT_THAT(parse_error(detection_with("secondary: [{model: det, top_k: 0}]\n")),
              HasSubstr("secondary.0.top_k: must be between 1 and 1000, got 0"));
  EXPECT_THAT(parse_error(detection_with("secondary: {model: det}\n")),
              HasSubstr("secondary: expected a list of secondary models"));
  EXPECT_THAT(parse_error(detection_with("secondary: [{model: det, skip_untracked: true}]\n")),
              HasSubstr("secondary.0.skip_untracked: needs the track stage (track.enabled: true)"));
  // Asked for, but not run by the flow's stages: refused, not ignored.
  EXPECT_THAT(parse_error(minimal_with("track: {enabled: true}\n")),
              HasSubstr("track.enabled: the track stage does not run in this flow (its stages: [segment])"));
  EXPECT_THAT(
      parse_error(detection_with("stages: [detect, osd]\ntrack: {enabled: true}\n")),
      HasSubstr("track.enabled: the track stage does not run in this flow (its stages: [detect, osd])"));
  EXPECT_THAT(
      parse_error(detection_with("stages: [detect, track]\nsecondary: [{model: det}]\n")),
      HasSubstr("secondary: the classify stage does not run in this flow (its stages: [detect, track])"));
  EXPECT_THAT(parse_error(detection_with("track: {tracker: kalman}\n")),
              HasSubstr("track.tracker: expected one of iou, sort, bytetrack, got 'kalman'"));
  EXPECT_THAT(parse_error(detection_with("track: {min_score: 0.9}\n")),
              HasSubstr("track: tracker parameter min_score: 0.9 is above high_score 0.5"));
  EXPECT_THAT(parse_error(detection_with("track: {min_hits: 0}\n")),
              HasSubstr("track.min_hits: must be between 1 and 1000, got 0"));
  EXPECT_THAT(parse_error(detection_with("track: {max_ages: 3}\n")),
              HasSubstr("unknown key 'track.max_ages' (did you mean 'max_age'?)"));
}

}  // namespace
}  // namespace fovea::pipeline
