// The demo's synthetic clip: the scene keeps the colorfulness contract the demo model relies on,
// the mask matches the rendering, and the clip encodes, probes and decodes with the asked-for size,
// frame count and rate.
#include "io/synthetic_clip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "support/test_media.h"

namespace fovea::io {
namespace {

constexpr int kWidth = 320;
constexpr int kHeight = 180;

float colorfulness(const std::uint8_t* rgb) {
  const auto [lo, hi] = std::minmax({rgb[0], rgb[1], rgb[2]});
  return static_cast<float>(hi - lo) / 255.0f;
}

TEST(SyntheticClip, SubjectsAreSaturatedAndTheBackgroundIsNearlyGray) {
  for (int index : {0, 23, 61}) {
    const Frame frame = render_synthetic_rgb(index, kWidth, kHeight, 7);
    const std::vector<std::uint8_t> mask = ground_truth_mask(index, kWidth, kHeight);
    std::int64_t subject_pixels = 0;
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const float c = colorfulness(frame.image.row(0, y) + 3 * x);
        if (mask[static_cast<std::size_t>(y) * kWidth + x] != 0) {
          ++subject_pixels;
          ASSERT_GE(c, kSyntheticSubjectMinColorfulness) << "frame " << index << " at " << x << "," << y;
          ASSERT_LE(c, kSyntheticSubjectMaxColorfulness) << "frame " << index << " at " << x << "," << y;
        } else {
          ASSERT_LE(c, kSyntheticBackgroundMaxColorfulness) << "frame " << index << " at " << x << "," << y;
        }
      }
    }
    // Three shapes of radius/half-size 0.10..0.14 of the height: about 10% of the frame.
    EXPECT_GT(subject_pixels, kWidth * kHeight / 20) << "frame " << index;
    EXPECT_LT(subject_pixels, kWidth * kHeight / 4) << "frame " << index;
  }
}

// The class a subject pixel shows: its largest channel (1 red, 2 green, 3 blue).
int dominant_class(const std::uint8_t* rgb) {
  return static_cast<int>(std::max_element(rgb, rgb + 3) - rgb) + kSyntheticRedClass;
}

// A class's hue margin at a pixel: its channel minus the larger of the other two, 0..1 scale.
float hue_margin(const std::uint8_t* rgb, int class_id) {
  const int own = class_id - kSyntheticRedClass;
  const int others = std::max(rgb[(own + 1) % 3], rgb[(own + 2) % 3]);
  return static_cast<float>(rgb[own] - others) / 255.0f;
}

TEST(SyntheticClip, EachClassHasItsHueMargin) {
  for (int index : {0, 51, 74}) {
    const Frame frame = render_synthetic_rgb(index, kWidth, kHeight, 5);
    const std::vector<std::uint8_t> mask = ground_truth_mask(index, kWidth, kHeight);
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const std::uint8_t* rgb = frame.image.row(0, y) + 3 * x;
        const bool subject = mask[static_cast<std::size_t>(y) * kWidth + x] != 0;
        for (int c = kSyntheticRedClass; c <= kSyntheticBlueClass; ++c) {
          const float margin = hue_margin(rgb, c);
          if (!subject) {
            ASSERT_LE(margin, kSyntheticBackgroundMaxColorfulness) << index << " at " << x << "," << y;
          } else if (c == dominant_class(rgb)) {
            ASSERT_GE(margin, kSyntheticSubjectMinHueMargin) << index << " at " << x << "," << y;
          } else {
            ASSERT_LT(margin, 0.0f) << index << " class " << c << " at " << x << "," << y;
          }
        }
      }
    }
  }
}

// The boxes against a reference built from the mask and the rendered colors: per class, the
// extent of the mask pixels whose largest channel is the class's.
std::vector<SyntheticObject> boxes_from_mask(int index, int width, int height) {
  const Frame frame = render_synthetic_rgb(index, width, height, 1);
  const std::vector<std::uint8_t> mask = ground_truth_mask(index, width, height);
  std::vector<SyntheticObject> objects;
  for (int c = kSyntheticRedClass; c <= kSyntheticBlueClass; ++c) {
    Box box{static_cast<float>(width), static_cast<float>(height), 0.0f, 0.0f};
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        if (mask[static_cast<std::size_t>(y) * width + x] == 0 ||
            dominant_class(frame.image.row(0, y) + 3 * x) != c) {
          continue;
        }
        box = Box{std::min(box.x1, static_cast<float>(x)), std::min(box.y1, static_cast<float>(y)),
                  std::max(box.x2, static_cast<float>(x + 1)), std::max(box.y2, static_cast<float>(y + 1))};
      }
    }
    if (box.x1 < box.x2) objects.push_back({c, box});
  }
  return objects;
}

struct BoxesCase {
  int index, width, height;
  std::size_t objects;
};

TEST(SyntheticClip, GroundTruthBoxesAreTheVisibleExtents) {
  // Frames 51 and 82 have overlapping shapes at 480x272 (a later shape hides part of an earlier
  // one); at 24x300 the shapes overflow the narrow frame and in frame 116 one is wholly hidden.
  for (const BoxesCase& c :
       {BoxesCase{0, kWidth, kHeight, 3}, BoxesCase{51, 480, 272, 3}, BoxesCase{82, 480, 272, 3},
        BoxesCase{37, 96, 54, 3}, BoxesCase{116, 24, 300, 2}}) {
    const std::vector<SyntheticObject> boxes = ground_truth_boxes(c.index, c.width, c.height);
    const std::vector<SyntheticObject> expected = boxes_from_mask(c.index, c.width, c.height);
    ASSERT_EQ(boxes.size(), c.objects) << "frame " << c.index << " at " << c.width << "x" << c.height;
    ASSERT_EQ(expected.size(), c.objects) << "frame " << c.index << " at " << c.width << "x" << c.height;
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      EXPECT_EQ(boxes[i].class_id, expected[i].class_id) << "frame " << c.index;
      EXPECT_EQ(boxes[i].box.x1, expected[i].box.x1) << "frame " << c.index << " class " << boxes[i].class_id;
      EXPECT_EQ(boxes[i].box.y1, expected[i].box.y1) << "frame " << c.index << " class " << boxes[i].class_id;
      EXPECT_EQ(boxes[i].box.x2, expected[i].box.x2) << "frame " << c.index << " class " << boxes[i].class_id;
      EXPECT_EQ(boxes[i].box.y2, expected[i].box.y2) << "frame " << c.index << " class " << boxes[i].class_id;
    }
  }
}

TEST(SyntheticClip, IsDeterministicAndMoves) {
  const Frame a = render_synthetic_rgb(5, kWidth, kHeight, 3);
  const Frame b = render_synthetic_rgb(5, kWidth, kHeight, 3);
  const Frame other_seed = render_synthetic_rgb(5, kWidth, kHeight, 4);
  int differing_seed_rows = 0;
  for (int y = 0; y < kHeight; ++y) {
    ASSERT_TRUE(std::equal(a.image.row(0, y), a.image.row(0, y) + 3 * kWidth, b.image.row(0, y))) << y;
    differing_seed_rows +=
        std::equal(a.image.row(0, y), a.image.row(0, y) + 3 * kWidth, other_seed.image.row(0, y)) ? 0 : 1;
  }
  EXPECT_GT(differing_seed_rows, 0) << "the seed does not change the background";
  EXPECT_EQ(ground_truth_mask(5, kWidth, kHeight), ground_truth_mask(5, kWidth, kHeight));
  EXPECT_NE(ground_truth_mask(5, kWidth, kHeight), ground_truth_mask(15, kWidth, kHeight));
}

TEST(SyntheticClip, RejectsBadOptions) {
  SyntheticClipOptions odd;
  odd.width = 321;
  EXPECT_NE(check_synthetic_clip_options(odd).message().find("width 321"), std::string::npos);
  SyntheticClipOptions tiny;
  tiny.height = 8;
  EXPECT_NE(check_synthetic_clip_options(tiny).message().find("height 8"), std::string::npos);
  SyntheticClipOptions no_frames;
  no_frames.frames = 0;
  EXPECT_NE(check_synthetic_clip_options(no_frames).message().find("frames 0"), std::string::npos);
  SyntheticClipOptions no_rate;
  no_rate.frame_rate = Rational{0, 1};
  const Status status = write_synthetic_clip(fovea::testing::test_temp_dir() + "/never.mp4", no_rate);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("frame rate 0/1"), std::string::npos) << status.to_string();
}

TEST(SyntheticClip, WritesProbesAndDecodes) {
  SyntheticClipOptions options;
  options.width = kWidth;
  options.height = kHeight;
  options.frames = 12;
  options.frame_rate = Rational{25, 1};
  const std::string path = fovea::testing::test_temp_dir() + "/demo.mp4";
  const Status written = write_synthetic_clip(path, options);
  ASSERT_TRUE(written.is_ok()) << written.to_string();

  Result<std::unique_ptr<Demuxer>> demuxer = Demuxer::open(path);
  ASSERT_TRUE(demuxer.is_ok()) << demuxer.status().to_string();
  const StreamInfo& info = (*demuxer)->info();
  EXPECT_EQ(info.codec_name, "h264");
  EXPECT_EQ(info.width, kWidth);
  EXPECT_EQ(info.height, kHeight);
  EXPECT_EQ(info.frame_count, 12);
  EXPECT_DOUBLE_EQ(info.frame_rate.to_double(), 25.0);

  Result<fovea::testing::DecodeOutcome> decoded = fovea::testing::decode_with_cpu(path);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  ASSERT_TRUE(decoded->status.is_ok()) << decoded->status.to_string();
  ASSERT_EQ(decoded->frames.size(), 12u);
  for (const Frame& frame : decoded->frames) {
    EXPECT_EQ(frame.image.width, kWidth);
    EXPECT_EQ(frame.image.height, kHeight);
  }
}

// After compression the chroma still tells subject from background: mean |Cb-128| + |Cr-128| of
// the decoded frame is far apart inside and outside the mask (the model reads the same signal).
TEST(SyntheticClip, ChromaSurvivesCompression) {
  SyntheticClipOptions options;
  options.width = kWidth;
  options.height = kHeight;
  options.frames = 3;
  const std::string path = fovea::testing::test_temp_dir() + "/chroma.mp4";
  ASSERT_TRUE(write_synthetic_clip(path, options).is_ok());
  Result<fovea::testing::DecodeOutcome> decoded = fovea::testing::decode_with_cpu(path);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  ASSERT_EQ(decoded->frames.size(), 3u);
  const ImageView& image = decoded->frames[2].image;
  const std::vector<std::uint8_t> mask = ground_truth_mask(2, kWidth, kHeight);
  double chroma_sum[2] = {0, 0};
  int count[2] = {0, 0};
  for (int y = 0; y < kHeight; y += 2) {
    for (int x = 0; x < kWidth; x += 2) {
      const int inside = mask[static_cast<std::size_t>(y) * kWidth + x];
      chroma_sum[inside] +=
          std::abs(image.row(1, y / 2)[x / 2] - 128) + std::abs(image.row(2, y / 2)[x / 2] - 128);
      ++count[inside];
    }
  }
  const double background = chroma_sum[0] / count[0];
  const double subject = chroma_sum[1] / count[1];
  EXPECT_LT(background, 6.0);
  EXPECT_GT(subject, 60.0);
}

}  // namespace
}  // namespace fovea::io
