// The per-frame metadata record (schema v2, docs/metadata.md): what the writer produces reads back
// equal, the exact text of one record, floats round-trip as float32 with the fewest digits, text
// that is not plain ASCII stays valid JSON, and the reader names the key of every schema error.
#include "pipeline/frame_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/box.h"

namespace fovea::pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::string> kLabels = {"background", "person", "bicycle", "car"};

FrameRecordContext context_with(std::span<const std::string> labels) {
  return FrameRecordContext{.source = "cam1",
                            .source_id = 2,
                            .frame = 12,
                            .pts_us = 400000,
                            .capture_time_us = 1795689600000000,
                            .batch = 3,
                            .labels = labels};
}

// The schema's mapping restated: what the record of (context, results) must read back as.
ParsedFrameRecord expected_record(const FrameRecordContext& context, const FrameResults& results) {
  ParsedFrameRecord record{.source = std::string(context.source),
                           .source_id = context.source_id,
                           .frame = context.frame,
                           .pts_us = context.pts_us,
                           .capture_time_us = context.capture_time_us,
                           .batch = context.batch,
                           .inferred = results.inferred};
  if (results.classes) {
    record.classes = results.classes;
    return record;
  }
  if (results.target_fraction) {
    record.target_fraction = results.target_fraction;
    return record;
  }
  record.objects.emplace();
  for (const ObjectResult& object : results.objects) {
    ParsedObject parsed{.box = {object.box.x1, object.box.y1, object.box.x2, object.box.y2},
                        .class_id = object.class_id,
                        .score = object.score,
                        .predicted = object.predicted,
                        .secondary = object.secondary};
    const auto id = static_cast<std::size_t>(object.class_id);
    if (id < context.labels.size() && !context.labels[id].empty()) parsed.label = context.labels[id];
    if (object.track_id >= 0) parsed.track_id = object.track_id;
    record.objects->push_back(std::move(parsed));
  }
  return record;
}

ParsedFrameRecord parse_ok(const std::string& line) {
  Result<ParsedFrameRecord> record = parse_frame_record(line);
  EXPECT_TRUE(record.is_ok()) << record.status().to_string() << "\n" << line;
  return record.is_ok() ? std::move(record).value() : ParsedFrameRecord{};
}

std::string parse_error(const std::string& line) {
  const Result<ParsedFrameRecord> record = parse_frame_record(line);
  EXPECT_FALSE(record.is_ok()) << "parsed: " << line;
  return record.is_ok() ? std::string() : record.status().message();
}

void expect_round_trip(const FrameRecordContext& context, const FrameResults& results) {
  const std::string line = frame_record_json(context, results);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(parse_ok(line), expected_record(context, results)) << line;
}

// Objects in a 1920x1080 frame; class ids run past the label list, a third are untracked, and some
// carry secondary labels, some of those without a label.
std::vector<ObjectResult> random_objects(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> x(0.0f, 1920.0f);
  std::uniform_real_distribution<float> y(0.0f, 1080.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> class_id(0, static_cast<int>(kLabels.size()) + 2);
  std::uniform_int_distribution<int> small(0, 2);
  std::vector<ObjectResult> objects(count);
  for (ObjectResult& object : objects) {
    const float x1 = x(rng);
    const float y1 = y(rng);
    object.box = Box{x1, y1, x1 + x(rng) / 4, y1 + y(rng) / 4};
    object.class_id = class_id(rng);
    object.score = unit(rng);
    object.track_id = small(rng) == 0 ? -1 : static_cast<std::int64_t>(rng() % 100000);
    for (int i = small(rng); i > 0; --i) {
      object.secondary.push_back(SecondaryLabel{.model = i == 1 ? "color" : "make",
                                                .class_id = small(rng),
                                                .label = i == 1 ? "red" : "",
                                                .score = unit(rng)});
    }
  }
  return objects;
}

TEST(FrameRecord, ZeroObjectsRoundTrip) {
  const FrameResults results{.inferred = false};
  const std::string line = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(line, HasSubstr(R"("inferred":false,"objects":[]})"));
  expect_round_trip(context_with(kLabels), results);
}

TEST(FrameRecord, ManyObjectsRoundTrip) {
  for (const std::uint32_t seed : {1u, 2u, 3u}) {
    expect_round_trip(context_with(kLabels),
                      FrameResults{.inferred = true, .objects = random_objects(100, seed)});
  }
}

TEST(FrameRecord, TrackedObjectsWithSecondaryLabelsRoundTrip) {
  const FrameResults results{
      .inferred = true,
      .objects = {ObjectResult{.box = Box{10.5f, 20.25f, 110.0f, 220.75f},
                               .class_id = 3,
                               .score = 0.87f,
                               .track_id = 5,
                               .secondary = {{"color", 2, "red", 0.9f}, {"make", 7, "", 0.4f}}},
                  ObjectResult{.box = Box{0, 0, 1, 1}, .class_id = 1, .score = 0.5f, .track_id = 0}}};
  const std::string line = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(line, HasSubstr(R"("track_id":5,"secondary":[{"model":"color","class_id":2,"label":"red")"));
  EXPECT_THAT(line, HasSubstr(R"({"model":"make","class_id":7,"score":0.4})")) << "an empty label is omitted";
  EXPECT_THAT(line, HasSubstr(R"("track_id":0})")) << "track id 0 is a track";
  expect_round_trip(context_with(kLabels), results);
}

TEST(FrameRecord, LabelsPresentAbsentAndBeyondTheLabelFile) {
  const FrameResults results{.inferred = true,
                             .objects = {ObjectResult{.box = Box{1, 2, 3, 4}, .class_id = 1, .score = 0.5f},
                                         ObjectResult{.box = Box{1, 2, 3, 4}, .class_id = 9, .score = 0.5f}}};
  const std::string labelled = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(labelled, HasSubstr(R"("class_id":1,"label":"person","score")"));
  EXPECT_THAT(labelled, HasSubstr(R"("class_id":9,"score")")) << "class 9 has no line in the label file";
  expect_round_trip(context_with(kLabels), results);

  const std::string unlabelled = frame_record_json(context_with({}), results);
  EXPECT_THAT(unlabelled, Not(HasSubstr("label")));
  expect_round_trip(context_with({}), results);
}

TEST(FrameRecord, UntrackedObjectHasNoTrackIdNorSecondary) {
  const FrameResults results{.inferred = true,
                             .objects = {ObjectResult{.box = Box{1, 2, 3, 4}, .class_id = 1, .score = 0.5f}}};
  const std::string line = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(line, Not(HasSubstr("track_id")));
  EXPECT_THAT(line, Not(HasSubstr("secondary")));
  expect_round_trip(context_with(kLabels), results);
}

TEST(FrameRecord, PtsAbsentIsNull) {
  FrameRecordContext context = context_with(kLabels);
  context.pts_us.reset();
  const FrameResults results{.inferred = true, .objects = random_objects(3, 7)};
  EXPECT_THAT(frame_record_json(context, results), HasSubstr(R"("pts_us":null,)"));
  expect_round_trip(context, results);

  context.pts_us = -33366;  // streams may start before 0 (an edit list)
  expect_round_trip(context, results);
}

TEST(FrameRecord, SegmentationRecordHasTargetFractionAndNoObjects) {
  for (const double fraction : {0.0, 0.25, 1.0 / 3.0, 1.0}) {
    const FrameResults results{.inferred = true, .target_fraction = fraction};
    const std::string line = frame_record_json(context_with({}), results);
    EXPECT_THAT(line, Not(HasSubstr("objects")));
    expect_round_trip(context_with({}), results);
  }
  EXPECT_THAT(frame_record_json(context_with({}), FrameResults{.inferred = true, .target_fraction = 0.25}),
              HasSubstr(R"("inferred":true,"target_fraction":0.25})"));
}

TEST(FrameRecord, ExactTextOfOneRecord) {
  const FrameResults results{
      .inferred = true,
      .objects = {ObjectResult{.box = Box{100.0f, 50.5f, 300.25f, 400.0f},
                               .class_id = 1,
                               .score = 0.87f,
                               .track_id = 5,
                               .secondary = {{"color", 2, "red", 0.9f}}},
                  ObjectResult{.box = Box{0.0f, 0.0f, 1920.0f, 1080.0f}, .class_id = 7, .score = 0.4f}}};
  EXPECT_EQ(
      frame_record_json(context_with(kLabels), results),
      R"({"v":2,"source":"cam1","source_id":2,"frame":12,"pts_us":400000,"capture_time_us":1795689600000000,)"
      R"("batch":3,"inferred":true,)"
      R"("objects":[{"box":[100.0,50.5,300.25,400.0],"class_id":1,"label":"person","score":0.87,)"
      R"("track_id":5,"secondary":[{"model":"color","class_id":2,"label":"red","score":0.9}]},)"
      R"({"box":[0.0,0.0,1920.0,1080.0],"class_id":7,"score":0.4}]})");
}

// A record whose one object has these four corners and score.
std::string record_with_floats(const std::array<float, 4>& corners, float score) {
  const FrameResults results{
      .inferred = true,
      .objects = {ObjectResult{
          .box = Box{corners[0], corners[1], corners[2], corners[3]}, .class_id = 0, .score = score}}};
  return frame_record_json(context_with({}), results);
}

TEST(FrameRecord, AwkwardFloatsAreShortestFloat32TextAndReadBackExactly) {
  const std::array<float, 4> corners = {1e-8f, 0.1f, 1919.99f, 3.4e38f};
  const std::string line = record_with_floats(corners, -0.0f);
  EXPECT_THAT(line, HasSubstr(R"("box":[1e-08,0.1,1919.99,3.4e+38],"class_id":0,"score":-0.0})"));
  const ParsedObject object = parse_ok(line).objects.value().at(0);
  for (std::size_t i = 0; i < corners.size(); ++i)
    EXPECT_EQ(float_to_bits(object.box[i]), float_to_bits(corners[i])) << i;
  EXPECT_EQ(float_to_bits(object.score), float_to_bits(-0.0f));
}

TEST(FrameRecord, RandomFloat32BitPatternsReadBackExactly) {
  std::mt19937 rng(11);
  for (int record = 0; record < 2000; ++record) {
    std::array<float, 5> values{};
    for (float& value : values) {
      do {
        value = bits_to_float(static_cast<std::uint32_t>(rng()));
      } while (!std::isfinite(value));
    }
    const ParsedObject object =
        parse_ok(record_with_floats({values[0], values[1], values[2], values[3]}, values[4]))
            .objects.value()
            .at(0);
    for (std::size_t i = 0; i < 4; ++i)
      ASSERT_EQ(float_to_bits(object.box[i]), float_to_bits(values[i])) << values[i];
    ASSERT_EQ(float_to_bits(object.score), float_to_bits(values[4])) << values[4];
  }
}

TEST(FrameRecord, NonFiniteFloatsAreNullAndReadAsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string line = record_with_floats({nan, -inf, inf, 1.0f}, nan);
  EXPECT_THAT(line, HasSubstr(R"("box":[null,null,null,1.0],"class_id":0,"score":null})"));
  const ParsedObject object = parse_ok(line).objects.value().at(0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(object.box[i])) << i;
  EXPECT_TRUE(std::isnan(object.score));

  const std::string segmentation = frame_record_json(context_with({}), FrameResults{.target_fraction = nan});
  EXPECT_THAT(segmentation, HasSubstr(R"("target_fraction":null})"));
  EXPECT_TRUE(std::isnan(parse_ok(segmentation).target_fraction.value()));
}

TEST(FrameRecord, NamesAreEscapedAndStayValidUtf8) {
  const std::string name =
      "a \"quoted\" \\ name\twith\ncontrols\x01 and caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xa5";
  FrameRecordContext context = context_with({});
  context.source = name;
  const FrameResults results{.inferred = true};
  expect_round_trip(context, results);

  // Bytes that are not UTF-8 (a Latin-1 file name, a cut sequence, an overlong '/', a surrogate)
  // become U+FFFD, one per byte that starts no valid sequence.
  context.source = "caf\xe9 \xe2\x82 \xc0\xaf \xed\xa0\x80.mp4";
  const std::string line = frame_record_json(context, results);
  EXPECT_THAT(line, HasSubstr(R"("source":"caf\ufffd \ufffd\ufffd \ufffd\ufffd \ufffd\ufffd\ufffd.mp4")"));
  EXPECT_EQ(parse_ok(line).source,
            "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd.mp4");
}

// A valid record with `replace` put in place of `original`.
std::string valid_with(std::string_view original, std::string_view replace) {
  const FrameResults results{.inferred = true,
                             .objects = {ObjectResult{.box = Box{1, 2, 3, 4},
                                                      .class_id = 1,
                                                      .score = 0.5f,
                                                      .track_id = 4,
                                                      .secondary = {{"color", 2, "red", 0.9f}}}}};
  std::string line = frame_record_json(context_with(kLabels), results);
  const std::size_t at = line.find(original);
  EXPECT_NE(at, std::string::npos) << original << " is not in " << line;
  return at == std::string::npos ? line : line.replace(at, original.size(), replace);
}

TEST(FrameRecord, ParseErrorsNameTheKey) {
  EXPECT_THAT(parse_error(valid_with("\"v\":2,", "")), HasSubstr("missing key 'v'"));
  EXPECT_THAT(parse_error(valid_with("\"v\":2", "\"v\":3")), HasSubstr("'v': version 3 is not supported"));
  EXPECT_THAT(parse_error(valid_with("\"v\":2", "\"v\":0")), HasSubstr("'v': version 0 is not supported"));
  EXPECT_THAT(parse_error(valid_with("\"v\":2", "\"v\":\"1\"")), HasSubstr("key 'v' must be an integer"));
  EXPECT_THAT(parse_error(valid_with("\"source\":\"cam1\"", "\"source\":7")),
              HasSubstr("key 'source' must be a string, not number"));
  EXPECT_THAT(parse_error(valid_with("\"source_id\":2", "\"source_id\":-2")),
              HasSubstr("key 'source_id' must be an integer from 0"));
  EXPECT_THAT(parse_error(valid_with("\"frame\":12,", "")), HasSubstr("missing key 'frame'"));
  EXPECT_THAT(parse_error(valid_with("\"frame\":12", "\"frame\":12.5")),
              HasSubstr("key 'frame' must be an integer"));
  EXPECT_THAT(parse_error(valid_with("\"pts_us\":400000,", "")), HasSubstr("missing key 'pts_us'"));
  EXPECT_THAT(parse_error(valid_with("\"capture_time_us\":1795689600000000", "\"capture_time_us\":1.5")),
              HasSubstr("key 'capture_time_us' must be an integer or null"));
  EXPECT_THAT(parse_error(valid_with("\"pts_us\":400000", "\"pts_us\":\"0\"")),
              HasSubstr("key 'pts_us' must be an integer or null"));
  EXPECT_THAT(parse_error(valid_with("\"batch\":3", "\"batch\":null")),
              HasSubstr("key 'batch' must be an integer"));
  EXPECT_THAT(parse_error(valid_with("\"inferred\":true", "\"inferred\":1")),
              HasSubstr("key 'inferred' must be true or false"));
  EXPECT_THAT(parse_error(valid_with("\"objects\"", "\"things\"")), HasSubstr("unknown key 'things'"));
  EXPECT_THAT(parse_error(valid_with(",\"objects\":[", ",\"target_fraction\":0.5,\"objects\":[")),
              HasSubstr("both keys 'objects' and 'target_fraction'"));
  EXPECT_THAT(parse_error(valid_with("\"objects\":[{", "\"objects\":[7,{")),
              HasSubstr("key 'objects[0]' must be an object"));
  EXPECT_THAT(parse_error(valid_with("\"box\":[1.0,2.0,3.0,4.0]", "\"box\":[1.0,2.0,3.0]")),
              HasSubstr("key 'objects[0].box' must be 4 numbers"));
  EXPECT_THAT(parse_error(valid_with("3.0,4.0]", "3.0,\"4\"]")),
              HasSubstr("key 'objects[0].box[3]' must be a number or null, not string"));
  EXPECT_THAT(parse_error(valid_with("4.0]", "4e39]")),
              HasSubstr("key 'objects[0].box[3]' must be within float32"));
  EXPECT_THAT(parse_error(valid_with("\"class_id\":1,", "")), HasSubstr("missing key 'objects[0].class_id'"));
  EXPECT_THAT(parse_error(valid_with("\"label\":\"person\"", "\"label\":null")),
              HasSubstr("key 'objects[0].label' must be a string, not null"));
  EXPECT_THAT(parse_error(valid_with("\"score\":0.5", "\"score\":true")),
              HasSubstr("key 'objects[0].score' must be a number or null, not boolean"));
  EXPECT_THAT(parse_error(valid_with("\"track_id\":4", "\"track_id\":-1")),
              HasSubstr("key 'objects[0].track_id' must be an integer from 0"));
  EXPECT_THAT(parse_error(valid_with("\"secondary\":[", "\"secondary\":{},\"x\":[")),
              HasSubstr("unknown key 'objects[0].x'"));
  EXPECT_THAT(
      parse_error(valid_with(R"("secondary":[{"model":"color","class_id":2,"label":"red","score":0.9}])",
                             R"("secondary":{"model":"color"})")),
      HasSubstr("key 'objects[0].secondary' must be an array, not object"));
  EXPECT_THAT(parse_error(valid_with("\"model\":\"color\",", "")),
              HasSubstr("missing key 'objects[0].secondary[0].model'"));
  EXPECT_THAT(parse_error(valid_with("\"score\":0.9", "\"score\":0.9,\"colour\":1")),
              HasSubstr("unknown key 'objects[0].secondary[0].colour'"));
}

TEST(FrameRecord, ParseErrorsOfSegmentationRecordsAndOfText) {
  const std::string segmentation = frame_record_json(context_with({}), FrameResults{.target_fraction = 0.5});
  const auto with = [&](std::string_view original, std::string_view replace) {
    std::string line = segmentation;
    return line.replace(line.find(original), original.size(), replace);
  };
  EXPECT_THAT(parse_error(with(",\"target_fraction\":0.5", "")),
              HasSubstr("missing key 'objects' (or 'target_fraction'"));
  EXPECT_THAT(parse_error(with("0.5}", "1.5}")),
              HasSubstr("key 'target_fraction' must be a number from 0 to 1"));
  EXPECT_THAT(parse_error(with("0.5}", "\"half\"}")),
              HasSubstr("key 'target_fraction' must be a number or null"));

  EXPECT_THAT(parse_error(""), HasSubstr("not JSON"));
  EXPECT_THAT(parse_error(segmentation.substr(0, segmentation.size() - 1)), HasSubstr("not JSON"));
  EXPECT_THAT(parse_error("[1,2]"), HasSubstr("metadata record: the line must be a JSON object, not array"));
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The lines of every ```jsonl block of docs/metadata.md: the documented example records.
std::vector<std::string> doc_records(const std::string& doc) {
  std::vector<std::string> lines;
  const std::string fence = "```jsonl\n";
  for (std::size_t begin = doc.find(fence); begin != std::string::npos; begin = doc.find(fence, begin)) {
    begin += fence.size();
    std::istringstream block(doc.substr(begin, doc.find("```", begin) - begin));
    for (std::string line; std::getline(block, line);) lines.push_back(line);
  }
  return lines;
}

void collect_keys(const nlohmann::json& value, std::vector<std::string>& keys) {
  if (value.is_object()) {
    for (const auto& item : value.items()) {
      keys.push_back(item.key());
      collect_keys(item.value(), keys);
    }
  } else if (value.is_array()) {
    for (const nlohmann::json& element : value) collect_keys(element, keys);
  }
}

TEST(FrameRecord, DocumentedExamplesAreValidAndEveryKeyIsDocumented) {
  const std::string doc = read_text(std::filesystem::path(FOVEA_DOCS_DIR) / "metadata.md");
  const std::vector<std::string> records = doc_records(doc);
  ASSERT_GE(records.size(), 3u) << "docs/metadata.md has no ```jsonl examples";
  std::vector<std::string> keys;
  for (const std::string& line : records) {
    parse_ok(line);
    collect_keys(nlohmann::json::parse(line), keys);
  }
  for (const std::string& key : keys) {
    EXPECT_THAT(doc, HasSubstr("| `" + key + "`")) << "docs/metadata.md has no table row for " << key;
  }
}

TEST(FrameRecord, ClassificationRecordHasClassesAndNoObjects) {
  const FrameResults results{.inferred = true,
                             .classes = std::vector<ClassLabel>{{2, "red", 0.75f}, {0, "", 0.125f}}};
  const std::string line = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(line, HasSubstr(R"("inferred":true,"classes":[{"class_id":2,"label":"red","score":0.75},)"
                              R"({"class_id":0,"score":0.125}]})"));
  EXPECT_THAT(line, Not(HasSubstr("objects")));
  expect_round_trip(context_with(kLabels), results);
  // None above the stage's min_score: still a classification record.
  const FrameResults none{.inferred = true, .classes = std::vector<ClassLabel>{}};
  EXPECT_THAT(frame_record_json(context_with({}), none), HasSubstr(R"("classes":[]})"));
  expect_round_trip(context_with({}), none);

  // One kind of results per record; classes are version 2's.
  const std::string with_classes = R"("objects":[],"classes":[])";
  std::string both = frame_record_json(context_with({}), FrameResults{.inferred = true});
  both.replace(both.find(R"("objects":[])"), 12, with_classes);
  EXPECT_THAT(parse_error(both), HasSubstr("both keys 'objects' and 'classes'"));
  std::string old = line;
  old.replace(old.find(R"("v":2)"), 5, R"("v":1)");
  EXPECT_THAT(parse_error(old), HasSubstr("'classes' is version 2's"));
  std::string bad = line;
  bad.replace(bad.find(R"("score":0.125)"), 13, R"("score":"high")");
  EXPECT_THAT(parse_error(bad), HasSubstr("classes[1].score"));
}

// Version 1 records (before "classes") still read.
TEST(FrameRecord, VersionOneRecordsStillRead) {
  std::string line =
      frame_record_json(context_with({}), FrameResults{.inferred = true, .target_fraction = 0.5});
  line.replace(line.find(R"("v":2)"), 5, R"("v":1)");
  EXPECT_EQ(parse_ok(line).version, 1);
}

TEST(FrameRecord, APredictedObjectSaysSoAndADetectionDoesNot) {
  const FrameResults results{
      .inferred = false,
      .objects = {ObjectResult{
                      .box = Box{1, 2, 3, 4}, .class_id = 1, .score = 0.5f, .track_id = 3, .predicted = true},
                  ObjectResult{.box = Box{1, 2, 3, 4}, .class_id = 1, .score = 0.5f, .track_id = 4}}};
  const std::string line = frame_record_json(context_with(kLabels), results);
  EXPECT_THAT(line, HasSubstr(R"("track_id":3,"predicted":true})"));
  EXPECT_THAT(line, HasSubstr(R"("track_id":4})"));
  expect_round_trip(context_with(kLabels), results);
  // Only true is written; false is the key left out.
  EXPECT_THAT(parse_error(valid_with("\"track_id\":4", "\"track_id\":4,\"predicted\":false")),
              HasSubstr("objects[0].predicted"));
  EXPECT_THAT(parse_error(valid_with("\"track_id\":4", "\"track_id\":4,\"predicted\":1")),
              HasSubstr("objects[0].predicted"));
}

}  // namespace
}  // namespace fovea::pipeline
