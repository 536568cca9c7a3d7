// The DeepStream cascade on the CPU: detect (the demo detector, runtime/demo_detector.h) -> track
// -> classify, on synthetic clips whose shapes are known (io::ground_truth_boxes). Checks what a
// user would: with a detector interval every frame still has its objects, the skipped frames'
// flagged predicted; each shape keeps one track id over the clip, and two sources showing the same
// clip get the same ids (ids are per source); a source that restarts or loops starts its tracks
// again; a secondary classifier (a tiny color model written here) labels every object with its
// color, which the OSD shows, honours its class filter and minimum size; a model that is not a
// classifier is refused naming it; zero and many objects run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cascade_flow_fixture.h"
#include "core/box.h"
#include "core/image.h"
#include "pipeline/display_ops.h"
#include "pipeline/flow.h"
#include "pipeline/track_ops.h"
#include "runtime/demo_model.h"
#include "runtime/graph.h"
#include "runtime/onnx_writer.h"

namespace fovea::pipeline {
namespace {

using namespace detect_test;
using ::testing::HasSubstr;

Result<FlowResult> run_on_cpu(const PipelineConfig& config) {
  return run_flow(config, {.device = DeviceChoice::kCpu, .progress = nullptr});
}

// The ground-truth shape an object is, by class and the best IoU; -1 when none overlaps by half.
int shape_of(const ParsedObject& object, std::int64_t frame) {
  const std::vector<io::SyntheticObject> truth =
      io::ground_truth_boxes(static_cast<int>(frame), kWidth, kHeight);
  const Box box{object.box[0], object.box[1], object.box[2], object.box[3]};
  int best = -1;
  float best_iou = 0.5f;
  for (std::size_t k = 0; k < truth.size(); ++k) {
    const float iou = box_iou(box, truth[k].box);
    if (truth[k].class_id == object.class_id && iou >= best_iou) {
      best = truth[k].class_id;  // one shape per class in the synthetic scene
      best_iou = iou;
    }
  }
  return best;
}

TEST_F(CascadeFlow, EveryFrameHasItsObjectsAndEachShapeKeepsOneTrackId) {
  ASSERT_EQ(stages_of(tracked()),
            (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack, StageKind::kOsd}));
  Result<FlowResult> result = run_on_cpu(tracked());
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  const auto lines = records();
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(2 * kClipFrames));
  std::map<std::pair<std::size_t, int>, std::set<std::int64_t>> ids;  // (source, shape) -> track ids
  for (const auto& [key, record] : lines) {
    const bool inferred = record.frame % 3 == 0;
    EXPECT_EQ(record.inferred, inferred);
    ASSERT_TRUE(record.objects.has_value());
    EXPECT_FALSE(record.objects->empty()) << "source " << key.first << " frame " << key.second;
    for (const ParsedObject& object : *record.objects) {
      EXPECT_EQ(object.predicted, !inferred) << "frame " << record.frame;
      ASSERT_TRUE(object.track_id.has_value()) << "frame " << record.frame;
      // Predictions are clipped to the frame, as detections are (docs/metadata.md).
      EXPECT_GE(object.box[0], 0.0f) << "frame " << record.frame;
      EXPECT_GE(object.box[1], 0.0f) << "frame " << record.frame;
      EXPECT_LE(object.box[2], static_cast<float>(kWidth)) << "frame " << record.frame;
      EXPECT_LE(object.box[3], static_cast<float>(kHeight)) << "frame " << record.frame;
      const int shape = shape_of(object, record.frame);
      EXPECT_GE(shape, 0) << "frame " << record.frame << ": an object that is no shape";
      if (shape >= 0) ids[{key.first, shape}].insert(*object.track_id);
    }
  }
  ASSERT_FALSE(ids.empty());
  for (const auto& [key, track_ids] : ids) {
    EXPECT_EQ(track_ids.size(), 1u) << "source " << key.first << " shape " << key.second;
  }
  // The two sources show the same clip: the same ids, their states apart.
  for (const auto& [key, record] : lines) {
    if (key.first != 0) continue;
    const ParsedFrameRecord& other = lines.at({1, key.second});
    ASSERT_EQ(other.objects->size(), record.objects->size());
    for (std::size_t i = 0; i < record.objects->size(); ++i) {
      EXPECT_EQ((*other.objects)[i].track_id, (*record.objects)[i].track_id);
    }
  }
}

// Frames as the mux hands them to the track stage: one source, given indices and pass, one box each.
FrameBatch batch_of(const std::vector<std::int64_t>& indices, int pass = 0) {
  FrameBatch batch;
  for (const std::int64_t index : indices) {
    batch.frames.push_back(BatchFrame{.source = 0, .index = index, .payload = {.pass = pass}});
    batch.results.push_back(
        {.inferred = true,
         .objects = {ObjectResult{.box = Box{10, 10, 50, 50}, .class_id = 1, .score = 0.9f}}});
  }
  return batch;
}

TEST(TrackOp, ASourceThatRestartsOrJumpsStartsItsTracksAgain) {
  track::TrackerParams params = track::default_tracker_params(track::TrackerKind::kByteTrack);
  params.min_hits = 1;
  params.max_age = 5;
  Result<std::unique_ptr<TrackOp>> op = TrackOp::create(params, 1);
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  const auto ids = [&](const std::vector<std::int64_t>& indices, int pass = 0) {
    FrameBatch batch = batch_of(indices, pass);
    EXPECT_TRUE((*op)->run_host(batch).is_ok());
    std::vector<std::int64_t> out;
    for (const FrameResults& r : batch.results) out.push_back(r.objects.at(0).track_id);
    return out;
  };
  EXPECT_EQ(ids({0, 1, 2}), (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(ids({5, 6}), (std::vector<std::int64_t>{1, 1})) << "a gap within max_age keeps the track";
  EXPECT_EQ((*op)->resets(), 0u);
  EXPECT_EQ(ids({0, 1}), (std::vector<std::int64_t>{2, 2})) << "back to frame 0: a restart";
  EXPECT_EQ((*op)->resets(), 1u);
  EXPECT_EQ(ids({100}), (std::vector<std::int64_t>{3})) << "a jump past max_age";
  EXPECT_EQ((*op)->resets(), 2u);
  EXPECT_EQ(ids({101, 102}, 1), (std::vector<std::int64_t>{4, 4}))
      << "a new pass (a loop), the index going on";
  EXPECT_EQ((*op)->resets(), 3u);
}

// A looping source in a real flow, interrupted after a few passes: its index and pts keep rising
// across the loops, yet the tracks of a pass end with it, so a pass's shapes get new ids and none
// of a pass before. The passes are three frames long and the detector runs on every frame: the
// shapes barely move within a pass, so a tracker that missed the loop would keep its tracks.
TEST_F(CascadeFlow, ALoopingSourceStartsItsTracksAgainAtEachPass) {
  constexpr int kPassFrames = 3;
  PipelineConfig cfg = tracked({"long.mp4"});
  cfg.detect.interval = 0;
  cfg.sources[0].loop = true;
  cfg.sources[0].duration = (kPassFrames - 0.5) / 30.0;  // at the clip's 30 fps
  std::atomic<bool> interrupt{false};
  FlowOptions options{.device = DeviceChoice::kCpu, .interrupt = &interrupt, .progress = nullptr};
  options.on_progress = [&](const PipelineStats& stats) {
    if (stats.total_frames() >= static_cast<std::uint64_t>(3 * kPassFrames + 1)) interrupt = true;
  };
  Result<FlowResult> result = run_flow(cfg, options);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_TRUE(result->interrupted);
  std::map<std::int64_t, std::set<std::int64_t>> ids;                        // pass -> track ids
  std::map<std::pair<std::int64_t, int>, std::set<std::int64_t>> shape_ids;  // (pass, shape) -> ids
  for (const auto& [key, record] : records()) {
    const std::int64_t pass = record.frame / kPassFrames;
    for (const ParsedObject& object : *record.objects) {
      ASSERT_TRUE(object.track_id.has_value()) << "frame " << record.frame;
      ids[pass].insert(*object.track_id);
      const int shape = shape_of(object, record.frame % kPassFrames);
      if (shape >= 0) shape_ids[{pass, shape}].insert(*object.track_id);
    }
  }
  ASSERT_GE(ids.size(), 2u) << "the run did not get past its first pass";
  for (auto later = std::next(ids.begin()); later != ids.end(); ++later) {
    for (auto earlier = ids.begin(); earlier != later; ++earlier) {
      for (const std::int64_t id : later->second) {
        EXPECT_EQ(earlier->second.count(id), 0u)
            << "track " << id << " of pass " << earlier->first << " again in pass " << later->first;
      }
    }
  }
  for (const auto& [key, track_ids] : shape_ids) {
    EXPECT_EQ(track_ids.size(), 1u) << "pass " << key.first << " shape " << key.second;
  }
}

TEST_F(CascadeFlow, TheColorModelLabelsEveryObjectWithItsColor) {
  PipelineConfig cfg = tracked();
  add_color_model(cfg);
  ASSERT_EQ(stages_of(cfg), (std::vector<StageKind>{StageKind::kDetect, StageKind::kTrack,
                                                    StageKind::kClassify, StageKind::kOsd}));
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::size_t labelled = 0;
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) {
      ASSERT_EQ(object.secondary.size(), 1u) << "frame " << record.frame;
      const SecondaryLabel& label = object.secondary[0];
      EXPECT_EQ(label.model, "color");
      EXPECT_EQ(label.class_id, object.class_id - 1) << "frame " << record.frame;
      EXPECT_EQ(label.label, kColors[object.class_id - 1]);
      EXPECT_GT(label.score, 0.5f);
      ++labelled;
    }
  }
  EXPECT_GT(labelled, 0u);
}

TEST_F(CascadeFlow, TracksReuseTheirLabelsBetweenClassifications) {
  PipelineConfig cfg = tracked({"long.mp4"});
  add_color_model(cfg, {.model = "color", .reinfer_interval = 10, .top_k = 3});
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::uint64_t objects = 0;
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) {
      ++objects;
      ASSERT_EQ(object.secondary.size(), 3u) << "frame " << record.frame;
      EXPECT_EQ(object.secondary[0].class_id, object.class_id - 1) << "frame " << record.frame;
      EXPECT_GE(object.secondary[0].score, object.secondary[1].score);
      EXPECT_GE(object.secondary[1].score, object.secondary[2].score);
    }
  }
  // The classify stage's counters: every object classified or given its track's labels, and far
  // more of them reused than classified at an interval of 10.
  const auto stage = std::find_if(result->stats.stages.begin(), result->stats.stages.end(),
                                  [](const StageStats& s) { return s.name == "classify color"; });
  ASSERT_NE(stage, result->stats.stages.end());
  std::map<std::string, std::uint64_t> counted;
  for (const StageCounter& counter : stage->counters) counted[counter.name] = counter.value;
  EXPECT_EQ(counted["objects classified"] + counted["labels reused"], objects);
  EXPECT_GT(counted["labels reused"], 3 * counted["objects classified"]);
  EXPECT_LE(counted["of them without a track"], counted["objects classified"]);
  EXPECT_EQ(counted["objects over the batch bound"], 0u);
  EXPECT_NE(format_table(result->stats).find("labels reused"), std::string::npos);
}

// The OSD's label texts for one frame of objects, drawn by OsdOp on the CPU.
std::vector<std::string> osd_texts(OsdOp& op, const std::vector<ObjectResult>& objects) {
  constexpr int kSide = 96;
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kNV12, kSide, kSide);
  EXPECT_TRUE(allocation.is_ok());
  std::vector<std::byte> pixels(allocation->total_bytes);
  FrameBatch batch;
  batch.frames.push_back(BatchFrame{});
  batch.frames[0].payload.frame.image =
      image_view_in(pixels.data(), *allocation, PixelFormat::kNV12, kSide, kSide, MemoryKind::kHost);
  batch.results.push_back({.inferred = true, .objects = objects});
  const Status drawn = op.run_cpu(batch);
  EXPECT_TRUE(drawn.is_ok()) << drawn.to_string();
  std::vector<std::string> texts;
  for (const image::DrawCommand& command : op.commands()) {
    if (command.kind == image::DrawKind::kText) texts.emplace_back(command.text);
  }
  return texts;
}

TEST(OsdOp, TheLabelShowsTheFirstSecondaryLabel) {
  const FlowShape shape{.batch_size = 1, .frame_width = 96, .frame_height = 96};
  OsdOp op(OsdConfig{.enabled = true}, {"background", "car"}, 8, shape);
  const auto object = [](std::int64_t track, float score, std::vector<SecondaryLabel> secondary) {
    return ObjectResult{.box = Box{10, 30, 60, 80},
                        .class_id = 1,
                        .score = score,
                        .track_id = track,
                        .secondary = std::move(secondary)};
  };
  const SecondaryLabel red{.model = "color", .class_id = 0, .label = "red", .score = 0.98f};
  const SecondaryLabel sedan{.model = "type", .class_id = 2, .label = "sedan", .score = 0.7f};
  EXPECT_THAT(osd_texts(op, {object(3, 0.91f, {red, sedan}), object(4, 0.5f, {}),
                             object(5, 0.6f, {{.model = "color", .class_id = 2, .score = 0.25f}})}),
              ::testing::ElementsAre("#3 red 0.98 | car 0.91", "#4 car 0.50", "#5 color 2 0.25 | car 0.60"));
  // The next batch composes into the same storage: no text of the last one is left.
  EXPECT_THAT(osd_texts(op, {object(6, 0.8f, {sedan}), object(7, 0.9f, {red})}),
              ::testing::ElementsAre("#6 sedan 0.70 | car 0.80", "#7 red 0.98 | car 0.90"));

  OsdOp unnamed(OsdConfig{.enabled = true, .scores = false}, {}, 8, shape);
  EXPECT_THAT(osd_texts(unnamed, {object(3, 0.91f, {red})}), ::testing::ElementsAre("#3 red | class 1"));
}

TEST_F(CascadeFlow, TheClassFilterAndTheMinimumSizeChooseTheObjects) {
  PipelineConfig cfg = config({"a.mp4"});
  add_color_model(cfg, {.model = "color", .operate_on_classes = {runtime::kDemoDetectorRedClass}});
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::size_t red = 0;
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) {
      const bool is_red = object.class_id == runtime::kDemoDetectorRedClass;
      EXPECT_EQ(object.secondary.size(), is_red ? 1u : 0u);
      red += is_red ? 1 : 0;
    }
  }
  EXPECT_GT(red, 0u);

  cfg = config({"a.mp4"});
  add_color_model(cfg, {.model = "color", .min_width = static_cast<float>(kWidth)});
  result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) EXPECT_TRUE(object.secondary.empty());
  }

  cfg = config({"a.mp4"});
  add_color_model(cfg, {.model = "color", .operate_on_classes = {7}});
  result = run_on_cpu(cfg);
  ASSERT_FALSE(result.is_ok());
  EXPECT_THAT(result.status().message(), HasSubstr("secondary.0.operate_on_classes: class 7"));
}

// skip_untracked: the detections no confirmed track has taken yet (a track needs three hits here)
// get no labels and are counted as neither classified nor reused; tracked objects get theirs.
TEST_F(CascadeFlow, SkipUntrackedClassifiesTrackedObjectsOnly) {
  PipelineConfig cfg = tracked({"long.mp4"});
  cfg.track.min_hits = 3;
  add_color_model(cfg, {.model = "color", .skip_untracked = true});
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::uint64_t tracked_objects = 0, untracked = 0;
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) {
      const bool has_track = object.track_id >= 0;
      EXPECT_EQ(object.secondary.size(), has_track ? 1u : 0u) << "frame " << record.frame;
      (has_track ? tracked_objects : untracked) += 1;
    }
  }
  EXPECT_GT(tracked_objects, 0u);
  EXPECT_GT(untracked, 0u);  // the first hits of each track
  for (const StageStats& stage : result->stats.stages) {
    if (stage.name != "classify color") continue;
    std::map<std::string, std::uint64_t> counted;
    for (const StageCounter& counter : stage.counters) counted[counter.name] = counter.value;
    EXPECT_EQ(counted["of them without a track"], 0u);
    EXPECT_EQ(counted["objects classified"] + counted["labels reused"], tracked_objects);
  }
}

TEST_F(CascadeFlow, AModelThatIsNotAClassifierIsRefusedNamingIt) {
  ASSERT_TRUE(runtime::write_demo_segmentation_model(path("segmenter.onnx")).is_ok());
  PipelineConfig cfg = config({"a.mp4"});
  // Its input size open, it needs one as a secondary model (next test); given, the output is refused.
  cfg.models.push_back(
      {.name = "segmenter", .path = path("segmenter.onnx"), .input_width = 32, .input_height = 32});
  cfg.secondary.push_back({.model = "segmenter"});
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = result.status().message();
  EXPECT_THAT(message, HasSubstr("segmenter.onnx"));
  EXPECT_THAT(message, HasSubstr("secondary model 'segmenter'"));
  EXPECT_THAT(message, HasSubstr("output 'out'"));
  EXPECT_THAT(message, HasSubstr("[N, C]"));
}

// Object crops have no common size: a classifier that does not fix its input's needs input_width
// and input_height, instead of running each crop at the frame size.
TEST_F(CascadeFlow, AClassifierOfAnyInputSizeNeedsItsInputSize) {
  Result<std::string> bytes = runtime::serialize_onnx(color_model_graph(/*any_size=*/true), {});
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  std::ofstream(path("color.onnx"), std::ios::binary) << *bytes;
  PipelineConfig cfg = tracked();
  add_color_model(cfg);
  Result<FlowResult> refused = run_on_cpu(cfg);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("secondary.0 (model 'color'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("input_width and input_height"));

  cfg.models.back().input_width = kColorSide;
  cfg.models.back().input_height = kColorSide;
  Result<FlowResult> result = run_on_cpu(cfg);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  for (const auto& [key, record] : records()) {
    for (const ParsedObject& object : *record.objects) {
      ASSERT_EQ(object.secondary.size(), 1u) << "frame " << record.frame;
      EXPECT_EQ(object.secondary[0].label, kColors[object.class_id - 1]);
    }
  }
}

TEST_F(CascadeFlow, ZeroAndManyObjectsRun) {
  PipelineConfig none = tracked({"a.mp4"});
  none.detect.confidence = 1.0f;  // a detection counts above it: none does
  none.detect.classes = {runtime::kDemoDetectorRedClass};
  add_color_model(none);
  Result<FlowResult> result = run_on_cpu(none);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::size_t empty = 0;
  for (const auto& [key, record] : records()) empty += record.objects->empty() ? 1 : 0;
  EXPECT_GT(empty, 0u);

  // Every box the detector scores above 0 (about 60 a frame at this size, 180 a batch, in 45
  // chunks of the color model's batch of 4), each classified.
  PipelineConfig many = tracked({"a.mp4"});
  many.detect.confidence = 0.0f;
  many.detect.iou = 1.0f;
  many.detect.top_k = 2000;
  add_color_model(many, {.model = "color", .top_k = 3});
  result = run_on_cpu(many);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  std::size_t most = 0;
  for (const auto& [key, record] : records()) {
    most = std::max(most, record.objects->size());
    for (const ParsedObject& object : *record.objects) {
      const float w = object.box[2] - object.box[0], h = object.box[3] - object.box[1];
      if (w > 0 && h > 0) {
        EXPECT_EQ(object.secondary.size(), 3u);
      }
    }
  }
  EXPECT_GE(most, 50u);
}

}  // namespace
}  // namespace fovea::pipeline
