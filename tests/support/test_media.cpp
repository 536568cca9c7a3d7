#include "support/test_media.h"

#include <fmt/format.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <system_error>
#include <vector>

#include "core/hash.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace fovea::testing {
namespace {

// A cheap integer hash (the finalizer of MurmurHash3) for reproducible texture.
std::uint32_t hash2(std::uint32_t x, std::uint32_t y) {
  return murmur_finalize(x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u);
}

std::uint8_t to_u8(int value) {
  return static_cast<std::uint8_t>(value);
}

// Luma: a diagonal gradient sliding by 4 per frame plus 4x4-block texture sliding by (2, 1) per
// frame; the range stays within 16..238 so no encoder clips it.
void fill_luma(const ImageView& image, int index) {
  for (int y = 0; y < image.height; ++y) {
    std::uint8_t* row = image.row(0, y);
    for (int x = 0; x < image.width; ++x) {
      const auto tx = static_cast<std::uint32_t>(x - 2 * index + (1 << 20)) / 4;
      const auto ty = static_cast<std::uint32_t>(y - index + (1 << 20)) / 4;
      row[x] = to_u8(16 + (3 * x + 2 * y + 4 * index) % 160 + static_cast<int>(hash2(tx, ty) & 63u));
    }
  }
}

void fill_chroma(const ImageView& image, int index) {
  const int chroma_w = (image.width + 1) / 2;
  const int chroma_h = (image.height + 1) / 2;
  for (int y = 0; y < chroma_h; ++y) {
    std::uint8_t* u = image.row(1, y);
    std::uint8_t* v = image.row(2, y);
    for (int x = 0; x < chroma_w; ++x) {
      const int texture = static_cast<int>(
          hash2(static_cast<std::uint32_t>(x / 2 + 7919), static_cast<std::uint32_t>(y / 2)) & 15u);
      u[x] = to_u8(64 + (2 * x + 3 * index) % 112 + texture);
      v[x] = to_u8(64 + (2 * y + x + 5 * index) % 112 + texture);
    }
  }
}

Result<std::vector<char>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(StatusCode::kNotFound, "cannot open ", path, " for reading");
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return make_error(StatusCode::kIoError, "reading ", path, " failed");
  }
  return bytes;
}

Status write_file(const std::string& path, const char* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    return make_error(StatusCode::kIoError, "writing ", path, " failed");
  }
  return Status::ok();
}

std::string sanitized(std::string text) {
  for (char& c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!keep) {
      c = '_';
    }
  }
  return text;
}

// xorshift64* (Vigna): a tiny generator that gives the same positions on every platform.
class XorShift64Star {
 public:
  explicit XorShift64Star(unsigned seed) : state_(0x9E3779B97F4A7C15ull ^ (std::uint64_t{seed} << 1 | 1u)) {}
  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }

 private:
  std::uint64_t state_;
};

}  // namespace

Frame synthetic_frame(int width, int height, int index) {
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kYUV420P, width, height, 3, 64);
  EXPECT_TRUE(allocation.is_ok()) << allocation.status().to_string();
  if (!allocation.is_ok()) {
    return Frame{};
  }
  auto storage = std::make_shared<std::vector<std::uint8_t>>(allocation->total_bytes);
  Frame frame;
  // Pitches are 64-byte aligned, wider than the rows for most widths, so consumers that ignore
  // the pitch show up in tests.
  frame.image =
      image_view_in(storage->data(), *allocation, PixelFormat::kYUV420P, width, height, MemoryKind::kHost);
  frame.owner = storage;
  frame.pts = index;
  frame.has_pts = true;
  frame.time_base = Rational{1, 30};
  frame.index = index;
  frame.keyframe = index == 0;
  fill_luma(frame.image, index);
  fill_chroma(frame.image, index);
  return frame;
}

Frame synthetic_frame_p016(int width, int height, int index) {
  const Frame source = synthetic_frame(width, height, index);
  Result<ImageAllocation> allocation = plan_image_allocation(PixelFormat::kP016, width, height);
  EXPECT_TRUE(allocation.is_ok()) << allocation.status().to_string();
  if (!allocation.is_ok()) {
    return Frame{};
  }
  auto storage = std::make_shared<std::vector<std::uint8_t>>(allocation->total_bytes);
  Frame frame = source;
  frame.image =
      image_view_in(storage->data(), *allocation, PixelFormat::kP016, width, height, MemoryKind::kHost);
  frame.owner = storage;
  frame.bit_depth = 10;
  const auto widen = [](std::uint8_t value, int x, int y) {
    return static_cast<std::uint16_t>(((value << 2) | ((x + y) & 3)) << 6);
  };
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      frame.image.row<std::uint16_t>(0, y)[x] = widen(source.image.row(0, y)[x], x, y);
    }
  }
  for (int y = 0; y < (height + 1) / 2; ++y) {
    for (int x = 0; x < (width + 1) / 2; ++x) {
      frame.image.row<std::uint16_t>(1, y)[2 * x] = widen(source.image.row(1, y)[x], x, y);
      frame.image.row<std::uint16_t>(1, y)[2 * x + 1] = widen(source.image.row(2, y)[x], x, y);
    }
  }
  return frame;
}

Result<std::string> write_clip(const std::string& path, const ClipSpec& spec) {
  io::EncoderOptions options;
  options.codec = spec.codec;
  options.backend = io::EncoderBackend::kCpu;
  options.width = spec.width;
  options.height = spec.height;
  options.frame_rate = spec.frame_rate;
  options.time_base = Rational{spec.frame_rate.den, spec.frame_rate.num};
  options.preset = spec.preset;
  options.qp = spec.qp;
  options.gop = spec.gop;
  options.max_b_frames = spec.max_b_frames;
  options.bit_depth = spec.bit_depth;
  options.full_range = spec.full_range;
  FOVEA_ASSIGN_OR_RETURN(std::unique_ptr<io::Encoder> encoder, io::Encoder::open(path, options));
  for (int i = spec.first_index; i < spec.first_index + spec.frames; ++i) {
    Frame frame = spec.bit_depth > 8 ? synthetic_frame_p016(spec.width, spec.height, i)
                                     : synthetic_frame(spec.width, spec.height, i);
    frame.time_base = options.time_base;
    FOVEA_TRY(encoder->encode(frame));
  }
  FOVEA_TRY(encoder->finish());
  return path;
}

std::string test_temp_dir() {
  static std::atomic<int> counter{0};
  const char* tmpdir = std::getenv("TMPDIR");
  std::filesystem::path root = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
  // Built with fmt rather than "literal" + std::string, which trips GCC 12's false -Wrestrict
  // positive at -O3.
  std::string test_name = "none";
  if (const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info()) {
    test_name = sanitized(fmt::format("{}.{}", test->test_suite_name(), test->name()));
  }
  const std::string name = fmt::format("fovea-test-{}-{}-{}", test_name, getpid(), counter++);
  const std::filesystem::path dir = root / name;
  std::error_code error;
  // A leftover from an earlier process with the same pid would not be fresh.
  std::filesystem::remove_all(dir, error);
  std::filesystem::create_directories(dir, error);
  if (error) {
    ADD_FAILURE() << "cannot create test directory " << dir << ": " << error.message();
  }
  return dir.string();
}

bool has_ffmpeg_encoder(std::string_view name) {
  return avcodec_find_encoder_by_name(std::string(name).c_str()) != nullptr;
}

Result<std::string> write_resolution_change_ts(const std::string& path, const ClipSpec& first,
                                               ClipSpec second) {
  second.first_index = first.first_index + first.frames;
  FOVEA_ASSIGN_OR_RETURN(const std::string first_path, write_clip(path + ".first.ts", first));
  FOVEA_ASSIGN_OR_RETURN(const std::string second_path, write_clip(path + ".second.ts", second));
  FOVEA_ASSIGN_OR_RETURN(std::vector<char> bytes, read_file(first_path));
  FOVEA_ASSIGN_OR_RETURN(const std::vector<char> tail, read_file(second_path));
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  FOVEA_TRY(write_file(path, bytes.data(), bytes.size()));
  return path;
}

Status copy_faststart(const std::string& from, const std::string& to) {
  AVFormatContext* raw_input = nullptr;
  if (avformat_open_input(&raw_input, from.c_str(), nullptr, nullptr) < 0) {
    return make_error(StatusCode::kIoError, "cannot open ", from);
  }
  const std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> input(
      raw_input, [](AVFormatContext* context) { avformat_close_input(&context); });
  AVFormatContext* raw_output = nullptr;
  if (avformat_find_stream_info(input.get(), nullptr) < 0 ||
      avformat_alloc_output_context2(&raw_output, nullptr, "mp4", to.c_str()) < 0) {
    return make_error(StatusCode::kIoError, "cannot remux ", from);
  }
  const std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> output(raw_output,
                                                                            [](AVFormatContext* context) {
                                                                              avio_closep(&context->pb);
                                                                              avformat_free_context(context);
                                                                            });
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    AVStream* stream = avformat_new_stream(output.get(), nullptr);
    if (stream == nullptr || avcodec_parameters_copy(stream->codecpar, input->streams[i]->codecpar) < 0) {
      return make_error(StatusCode::kResourceExhausted, "out of memory remuxing ", from);
    }
    stream->time_base = input->streams[i]->time_base;
  }
  AVDictionary* options = nullptr;
  av_dict_set(&options, "movflags", "faststart", 0);
  const bool opened = avio_open(&output->pb, to.c_str(), AVIO_FLAG_WRITE) >= 0 &&
                      avformat_write_header(output.get(), &options) >= 0;
  av_dict_free(&options);
  if (!opened) {
    return make_error(StatusCode::kIoError, "cannot write ", to);
  }
  AVPacket* packet = av_packet_alloc();
  int read = 0;
  while (packet != nullptr && (read = av_read_frame(input.get(), packet)) >= 0) {
    av_packet_rescale_ts(packet, input->streams[packet->stream_index]->time_base,
                         output->streams[packet->stream_index]->time_base);
    if (av_interleaved_write_frame(output.get(), packet) < 0) {
      break;
    }
  }
  av_packet_free(&packet);
  if (read != AVERROR_EOF || av_write_trailer(output.get()) < 0) {
    return make_error(StatusCode::kIoError, "remuxing ", from, " to ", to, " failed");
  }
  return Status::ok();
}

Status copy_truncated(const std::string& from, const std::string& to, double keep_fraction) {
  if (!(keep_fraction >= 0.0 && keep_fraction <= 1.0)) {
    return make_error(StatusCode::kInvalidArgument, "keep fraction ", std::to_string(keep_fraction),
                      " is outside 0..1");
  }
  FOVEA_ASSIGN_OR_RETURN(std::vector<char> bytes, read_file(from));
  const auto keep = static_cast<std::size_t>(std::floor(static_cast<double>(bytes.size()) * keep_fraction));
  return write_file(to, bytes.data(), keep);
}

Status copy_bit_flipped(const std::string& from, const std::string& to, int count, std::size_t skip_bytes,
                        unsigned seed) {
  FOVEA_ASSIGN_OR_RETURN(std::vector<char> bytes, read_file(from));
  if (count > 0 && bytes.size() <= skip_bytes) {
    return make_error(StatusCode::kInvalidArgument, from, " has ", std::to_string(bytes.size()),
                      " bytes, none past the ", std::to_string(skip_bytes), " to skip");
  }
  XorShift64Star random(seed);
  const std::uint64_t span = bytes.size() - skip_bytes;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t draw = random.next();
    const std::size_t position = skip_bytes + static_cast<std::size_t>(draw % span);
    const auto bit = static_cast<unsigned>((draw >> 61) & 7u);
    bytes[position] = static_cast<char>(static_cast<unsigned char>(bytes[position]) ^ (1u << bit));
  }
  return write_file(to, bytes.data(), bytes.size());
}

}  // namespace fovea::testing
