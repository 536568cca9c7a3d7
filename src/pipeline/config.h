// The pipeline's configuration: a typed tree with defaults, read from YAML (docs/config.md is
// the schema) and adjusted by `--set key=value` overrides. Every error names the file (or the
// override), the key path and, where yaml-cpp knows it, line:column, e.g.
//   run.yaml:4:15: mux.batch_size: expected an integer, got 'four'
// A PipelineConfig returned by these functions has passed every check; a default-constructed one
// has not (it lists no sources and no model).
//
// The struct defaults below are fovea's one set of defaults: a YAML file, `fovea segment`'s flags,
// `fovea demo` and `fovea sweep` all start from them (docs/config.md lists them).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "io/decoder.h"
#include "io/demuxer.h"
#include "io/encoder.h"
#include "io/mqtt_publisher.h"
#include "post/detect_post.h"
#include "runtime/planner.h"
#include "track/tracker.h"

namespace fovea::pipeline {

struct SourceConfig {
  std::string uri;   // file path or URL (rtsp://, http://, ...)
  std::string name;  // in outputs, metadata and the service's API; "": from the uri (source_names)
  io::DecoderBackend decoder = io::DecoderBackend::kAuto;
  bool loop = false;
  double start = 0.0;              // seconds into the source
  std::optional<double> duration;  // seconds; absent: to the end
  // Network sources (video_source.h): connect and read timeout, RTSP transport, and reconnecting
  // with backoff after a loss. Files ignore them.
  double timeout = 5.0;  // seconds
  io::RtspTransport transport = io::RtspTransport::kTcp;
  bool reconnect = true;
  double reconnect_initial = 0.5;  // seconds before the first attempt, doubling per failed attempt
  double reconnect_max = 30.0;     // the longest wait between attempts
  int reconnect_attempts = 0;      // failed attempts in a row before the source fails; 0: no limit
  bool operator==(const SourceConfig&) const = default;
};

struct MuxConfig {
  int batch_size = 4;
  // The batch frames' size, both or neither; every source is scaled to it. Absent: the sources' own
  // size when they agree, else the first source's (with_frame_size decides, and logs why).
  std::optional<int> width;
  std::optional<int> height;
  // A partial batch goes out this long after its first frame; -1 waits for a full batch. Absent:
  // live, one frame period of the fastest source; files, a full batch.
  std::optional<std::int64_t> push_timeout_us;
  std::optional<int> max_frames_per_source;  // per batch; absent: no cap
  // Live batching (stream_mux.h): never wait for one source, drop a source's oldest frames when
  // the flow falls behind it. Absent: live when any source is a network stream.
  std::optional<bool> live;
  // Frames one source may have decoded ahead of the mux (MuxOptions::source_queue_capacity): more
  // absorb the jitter between decoders sharing the NVDEC engines, at one pooled frame each.
  int source_queue = 4;
  bool operator==(const MuxConfig&) const = default;
};

enum class ColorOrder { kRgb, kBgr };

// The largest frame side NVDEC and NVENC handle (HEVC/AV1); no source, picture size or model input
// goes beyond it.
inline constexpr int kMaxFrameSide = 8192;

// ImageNet's channel statistics (RGB, 0..1 scale): torchvision's models, FCN-ResNet among them, are
// trained on images normalized with them.
inline constexpr std::array<float, 3> kImagenetMean{0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImagenetStd{0.229f, 0.224f, 0.225f};

struct ModelConfig {
  // How stages refer to the model (`models:` entries); a lone `model:` is named "model".
  std::string name = "model";
  std::string path;                                             // ONNX file
  std::optional<std::string> input_name;                        // absent: the model's only input
  runtime::Precision precision = runtime::Precision::kFloat16;  // the GPU's; the CPU runs fp32
  // Normalization on the 0..1 scale, per tensor channel: (pixel / 255 - mean) / std.
  std::array<float, 3> mean = kImagenetMean;
  std::array<float, 3> std = kImagenetStd;
  ColorOrder color_order = ColorOrder::kRgb;
  std::optional<int> input_width;  // both or neither; absent: the model's own input shape
  std::optional<int> input_height;
  bool keep_aspect = false;  // letterbox instead of stretching
  // GPU: a folder where the planned model is kept as an engine (runtime/engine.h), so later runs
  // skip cuDNN's algorithm search; absent: planned on every run.
  std::optional<std::string> engine_cache;
  // precision int8: the calibration cache made for this model (`fovea model calibrate`); required then.
  std::optional<std::string> calibration;
  // Detection models: how their outputs read (post/detect_post.h); absent for other models.
  std::optional<post::DetectParser> parser;
  // One class name per line, as many lines as the model has classes; absent: class numbers.
  std::optional<std::string> labels;
  // The model's own batch, for models that run on objects (secondary); the primary model's batch
  // is mux.batch_size. Absent: 16.
  std::optional<int> batch_size;
  bool operator==(const ModelConfig&) const = default;
};

// `images:`, an image flow's input in place of `sources:` (image_source.h): folders, globs, list
// files or single files (io/image_files.h), decoded on `threads` CPU threads.
enum class AbSplit { kNone, kA, kB };  // pix2pix "AB" pairs: the left (A) or right (B) half
// Where JPEG files are decoded (images.decoder) or encoded (sinks.images.encoder): on the GPU
// through nvJPEG, on the CPU (libjpeg-turbo), or auto: the faster where the flow runs (decoding:
// nvJPEG where it loads; encoding: the CPU writers, docs/perf.md).
enum class JpegCodec { kAuto, kCpu, kNvjpeg };
struct ImagesConfig {
  std::vector<std::string> inputs;
  bool recursive = false;
  std::string shard = "0/1";  // "i/N": this process takes every N-th image from the i-th
  int threads = 0;            // decode threads; 0: one per core
  AbSplit split = AbSplit::kNone;
  JpegCodec decoder = JpegCodec::kAuto;
  int jpeg_threads = 2;  // threads that call nvJPEG
  int jpeg_batch = 32;   // JPEGs per nvJPEG call
  bool operator==(const ImagesConfig&) const = default;
};

// `flow:`, a preset: the stages it expands to when `stages:` is left out.
//   segmentation  [segment]        background blur behind the target classes
//   detection     [detect, osd]    boxes, drawn when osd.enabled; with `track` after detect when
//                                  track.enabled, and `classify` after it when `secondary:` lists
//                                  a model
//   image2image   [image2image]    the model's output tensor is a picture (pix2pix): images in,
//                                  images out (`images:` and `sinks.images`)
//   classification [classify_frames]  a whole-frame classifier: the top classes of every frame or
//                                  image, in the metadata
enum class FlowKind { kSegmentation, kDetection, kImage2Image, kClassification };

// The stage kinds `stages:` lists, in flow order; each reads its own section of the file.
//   segment   the primary model as a segmenter (`task:`)
//   detect    the primary model as a detector (`detect:`)
//   track     identities for the detections across frames, per source (`track:`)
//   classify  the secondary models on the objects (`secondary:`)
//   osd       draws the results on the frames (`osd:`)
//   image2image  the primary model's output back to a picture per frame, the inverse of its input
//             normalization (an image flow's)
//   classify_frames  the primary model as a whole-frame classifier (`classify_frames:`); not
//             `classify`, which runs the secondary models on the detect stage's objects
enum class StageKind { kSegment, kDetect, kTrack, kClassify, kOsd, kImage2Image, kClassifyFrames };

enum class TaskType { kSegmentation };

struct TaskConfig {
  TaskType type = TaskType::kSegmentation;
  std::vector<int> classes;     // kept sharp; empty: every class but 0 (background)
  int blur_kernel = 31;         // odd, square
  std::optional<double> sigma;  // absent: from the kernel size, as cv::GaussianBlur
  bool refine_mask = true;
  bool operator==(const TaskConfig&) const = default;
};

// Class-specific detection threshold (detect.class_confidence: {class: threshold}).
struct ClassThreshold {
  int class_id = 0;
  float threshold = 0.0f;
  bool operator==(const ClassThreshold&) const = default;
};

struct DetectConfig {
  std::string model;                             // a models: name; "" is the first model
  float confidence = 0.4f;                       // a detection counts when its score is above this
  std::vector<ClassThreshold> class_confidence;  // per-class overrides of `confidence`
  float iou = 0.5f;          // class-aware NMS: a box overlapping a better one more than this goes
  std::vector<int> classes;  // keep only these classes; empty: every class
  int top_k = 100;           // detections per frame, at most (the best)
  // The best boxes of each class that go into NMS; absent: the parser's customary number
  // (post::default_detect_params; torchvision's SSDLite keeps 300, its SSD300 400).
  std::optional<int> candidates_per_class;
  float min_width = 0.0f;  // frame pixels; smaller boxes are dropped
  float min_height = 0.0f;
  // Frames skipped between two inferences, per source (DeepStream's `interval`): 0 runs the model
  // on every frame, 2 on frames 0, 3, 6, ...
  int interval = 0;
  bool operator==(const DetectConfig&) const = default;
};

// `classify_frames:`, the classify_frames stage: a softmax over the primary model's logits [N, C]
// and each frame's most likely classes.
struct ClassifyFramesConfig {
  std::string model;       // a models: name; "" is the first model
  int top_k = 5;           // classes kept per frame, the most likely
  float min_score = 0.0f;  // classes less likely than this are left out
  bool operator==(const ClassifyFramesConfig&) const = default;
};

// `track:`, the track stage (track/tracker.h). The tracker's parameters are its published defaults
// (track::default_tracker_params) unless given here.
struct TrackConfig {
  bool enabled = false;  // the detection preset adds the track stage
  track::TrackerKind tracker = track::TrackerKind::kByteTrack;
  std::optional<float> match_iou;
  std::optional<float> low_match_iou;
  std::optional<float> tentative_match_iou;
  std::optional<float> min_score;
  std::optional<float> high_score;
  std::optional<float> new_track_score;
  std::optional<int> min_hits;
  std::optional<int> max_age;
  bool operator==(const TrackConfig&) const = default;
};

// The tracker the track stage runs: the tracker's defaults with the keys `track` gives.
track::TrackerParams tracker_params(const TrackConfig& track);

// One entry of `secondary:`, a classifier run on the objects (the classify stage).
struct SecondaryConfig {
  std::string model;                    // a models: name
  std::vector<int> operate_on_classes;  // the detector's classes it runs on; empty: every class
  float min_width = 0.0f;               // frame pixels; smaller objects are not classified
  float min_height = 0.0f;
  // A tracked object is classified again only once this many frames have passed since its last
  // classification, its last labels kept meanwhile; 0 or 1: every frame. Untracked objects are
  // classified on every frame, unless skip_untracked.
  int reinfer_interval = 0;
  int top_k = 1;  // labels kept per object, the best
  // Objects without a track (detections no confirmed track has taken yet) are not classified, as
  // DeepStream's secondary models see only the tracker's confirmed objects. Needs the track stage.
  bool skip_untracked = false;
  bool operator==(const SecondaryConfig&) const = default;
};

struct OsdConfig {
  bool enabled = false;
  int thickness = 2;              // box border, pixels
  float fill_alpha = 0.0f;        // 0..1 box fill in the class color; 0: none
  bool labels = true;             // the class name (or number) above each box
  bool scores = true;             // and its score
  int text_scale = 2;             // label font magnification (8x8 pixel cells)
  std::vector<int> blur_classes;  // privacy: these classes' boxes are blurred, not drawn
  bool operator==(const OsdConfig&) const = default;
};

// Every source tiled into one video (DeepStream's nvmultistreamtiler): sources in a grid of
// `columns` (absent: the smallest square grid), each scaled into its tile with its aspect kept.
struct MosaicConfig {
  int width = 1920;
  int height = 1080;
  std::optional<int> columns;
  bool operator==(const MosaicConfig&) const = default;
};

struct VideoSinkConfig {
  std::string output_dir;  // one file per source, or mosaic.mp4 with `mosaic`
  std::optional<MosaicConfig> mosaic;
  io::EncoderCodec codec = io::EncoderCodec::kH264;
  std::string preset = "medium";  // x264 names (ultrafast .. placebo) or NVENC's p1 .. p7
  std::optional<int> qp;          // constant quantizer, 0..51 (0 is lossless with x264); absent: crf 23
  bool operator==(const VideoSinkConfig&) const = default;
};

// `sinks.images`: one picture per frame of an image flow, at `output_dir`/<the input's path below
// its folder> with the format's extension; the inputs are never written over.
enum class ImageOutputFormat { kPng, kJpeg };
struct ImageSinkConfig {
  std::string output_dir;
  ImageOutputFormat format = ImageOutputFormat::kPng;
  int quality = 90;  // JPEG, 1..100
  JpegCodec encoder = JpegCodec::kAuto;
  bool operator==(const ImageSinkConfig&) const = default;
};

struct MetadataSinkConfig {
  std::string path;  // JSON Lines, one object per frame
  bool operator==(const MetadataSinkConfig&) const = default;
};

// `sinks.mqtt`: each frame's metadata record (the line sinks.metadata writes) as one message to an
// MQTT broker, on the topic <topic_prefix>/<source name> (io/mqtt_publisher.h).
struct MqttSinkConfig {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string topic_prefix = "fovea";
  int qos = 1;
  std::string client_id;  // "": fovea-<pid>
  int keepalive_s = 30;
  int max_queued_messages = 10000;  // the buffer while the broker is away; the oldest are dropped
  int reconnect_min_ms = 500;
  int reconnect_max_ms = 10000;
  std::optional<std::string> username;
  std::optional<std::string> password;
  bool operator==(const MqttSinkConfig&) const = default;
};

// The publisher's options for `sinks.mqtt`.
io::MqttOptions mqtt_options(const MqttSinkConfig& config);
// io's errors about MqttOptions name the keys "mqtt.<key>"; this names them as the configuration
// does, "sinks.mqtt.<key>".
Status with_sink_mqtt_keys(const Status& status);

// `sinks.stream`: the pictures sinks.video would encode (the frames with their OSD, or the
// mosaic) as live video: HLS segments in a folder (<hls>/<stream>/index.m3u8, the oldest segments
// deleted) and/or pushed to an RTSP server (<rtsp>/<source name>, or <rtsp> itself for the mosaic),
// reconnecting with backoff while the server is away (pipeline/sinks.h, StreamSink).
struct StreamSinkConfig {
  std::optional<std::string> hls;   // a folder
  std::optional<std::string> rtsp;  // an rtsp:// URL
  std::optional<MosaicConfig> mosaic;
  io::EncoderCodec codec = io::EncoderCodec::kH264;
  std::string preset = "veryfast";  // a live encoder must keep up with the cameras
  std::optional<int> qp;
  int segment_seconds = 2;  // HLS segment length, and the keyframe interval of both targets
  int playlist_size = 6;    // HLS segments kept
  io::RtspTransport transport = io::RtspTransport::kTcp;
  int reconnect_min_ms = 500;
  int reconnect_max_ms = 10000;
  bool operator==(const StreamSinkConfig&) const = default;
};

struct SinksConfig {
  std::optional<VideoSinkConfig> video;
  std::optional<MetadataSinkConfig> metadata;
  std::optional<MqttSinkConfig> mqtt;
  std::optional<StreamSinkConfig> stream;
  std::optional<ImageSinkConfig> images;
  bool null = false;  // discard the frames (benchmarks)
  bool operator==(const SinksConfig&) const = default;
};

struct StatsConfig {
  bool progress = true;               // the live progress line
  std::optional<std::string> report;  // report.json path; absent: none written
  bool operator==(const StatsConfig&) const = default;
};

struct PipelineConfig {
  std::vector<SourceConfig> sources;
  std::optional<ImagesConfig> images;  // an image flow: these files instead of `sources`
  MuxConfig mux;
  // `models:` (a list, each with a unique name) or one `model:`; models[0] is the primary model.
  std::vector<ModelConfig> models;
  FlowKind flow = FlowKind::kSegmentation;
  std::vector<StageKind> stages;  // empty: the preset's (stages_of)
  TaskConfig task;                // the segment stage
  DetectConfig detect;
  ClassifyFramesConfig classify_frames;
  TrackConfig track;
  std::vector<SecondaryConfig> secondary;  // the classify stage runs each, in order
  OsdConfig osd;
  SinksConfig sinks;
  StatsConfig stats;
  std::optional<std::string> file;  // the YAML file load_config read: an input, never an output
  bool operator==(const PipelineConfig&) const = default;
};

// The stages the flow runs: config.stages, or the preset's when it leaves them out.
std::vector<StageKind> stages_of(const PipelineConfig& config);
// The model a stage names ("" the primary model); nullptr when no model has that name.
const ModelConfig* find_model(const PipelineConfig& config, std::string_view name);

// Reads and checks a YAML file; errors name `path`. Relative paths in it (sources, every model's
// path, engine_cache and labels, outputs) are taken from the file's folder.
Result<PipelineConfig> load_config(const std::string& path);
// Parses YAML text; errors name `source_name` (a file name, "<stdin>", ...).
Result<PipelineConfig> parse_config(std::string_view text, std::string_view source_name);
// One `sources:` entry on its own (YAML or JSON, a map): the keys, checks and messages of the
// file's. `fovea serve` reads the sources its API is given with it.
Result<SourceConfig> parse_source_config(std::string_view text, std::string_view source_name);

// Applies one `--set key=value` override: `key` is a dotted path ("mux.batch_size",
// "sources.0.uri", "models.1.mean.1"; the index one past a list's end appends an entry) and `value`
// is YAML, typed and checked as in a file. `model.X`, the lone model's key, is `models.0.X`. On
// error `config` is left unchanged.
Status apply_override(PipelineConfig& config, std::string_view assignment);
// Several overrides at once, read as one edit of the file: values valid only together
// (sources.0.reconnect_initial with reconnect_max) can be given together. Errors name the key and
// the --set that gave it; on error `config` is left unchanged.
Status apply_overrides(PipelineConfig& config, std::span<const std::string> assignments);

// The configuration as YAML, every key written (absent optionals as null): parse_config reads it
// back to an equal PipelineConfig.
std::string dump_config(const PipelineConfig& config);

// How an error names the key it is about, for a configuration that was not read from a file: given
// the key path ("task.blur_kernel", "task.classes.1"; "" for the configuration as a whole), the
// words that stand for it, such as the command-line flag and value the user typed ("--blur 33").
using KeyNamer = std::function<std::string(std::string_view key_path)>;

// The checks parse_config makes, on a configuration built in code (the command line's); an error
// reads "<name_key(key)>: <reason>", e.g. "--blur 33: must be odd, got 33".
Result<PipelineConfig> check_config(const PipelineConfig& config, const KeyNamer& name_key);

// One key of the sections written as schema tables (models entries, detect, classify_frames, track,
// secondary entries, osd, sinks.video.mosaic, sinks.mqtt, sinks.stream), as docs/config.md's tables give it:
// `| `key` | kind | default | meaning` (the docs may say more after the meaning). A test holds the docs to
// these.
struct SchemaKey {
  std::string key;            // "detect.iou", "models[].path"
  std::string kind;           // "number in (0, 1]"
  std::string default_value;  // "`0.5`", "absent", "required"
  std::string meaning;
};
std::vector<SchemaKey> schema_keys();

// The encoder presets sinks.video.preset takes: x264's names and NVENC's p1..p7.
std::span<const std::string_view> encoder_presets();

// `config` with mux.width and mux.height set. When the configuration leaves them out, the sources
// are opened (not decoded) to read their size: their own size when they all agree, else the first
// source's, said in the log; a source that cannot be opened is left to fail when the flow runs.
// When they are given, the log names the sources that will be scaled to them. Sizes round down to
// even (4:2:0 frames). Fails only when the size is left out and no source can be opened.
Result<PipelineConfig> with_frame_size(PipelineConfig config, const std::atomic<bool>* cancel = nullptr);

}  // namespace fovea::pipeline
