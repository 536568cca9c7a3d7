#include "pipeline/image_sink.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "core/log.h"
#include "core/output_file.h"
#include "io/image_codec.h"
#include "io/nvjpeg_encoder.h"
#include "pipeline/queue.h"
#include "post/class_mask.h"

#if defined(FOVEA_HAVE_CUDA)
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {
namespace {

// A picture copied out of its batch's slot, or its file already encoded on the GPU (encoded set),
// and where it goes. A class map becomes its label image at the frame's size on the writer's
// thread (label_size and mapping set).
struct PendingPicture {
  io::HostImage image;
  std::optional<std::string> encoded;
  std::filesystem::path path;
  std::string input;  // the file it came from, never written over
  std::optional<post::MaskMapping> mapping;
  int label_width = 0;
  int label_height = 0;
};

std::string_view extension(ImageOutputFormat format) {
  return format == ImageOutputFormat::kPng ? ".png" : ".jpg";
}

// A packed copy of an RGB8 picture or a GRAY8 class map.
Result<io::HostImage> copy_picture(const ImageView& picture) {
  FOVEA_ASSIGN_OR_RETURN(io::HostImage copy,
                         io::HostImage::allocate(picture.format, picture.width, picture.height));
  const std::size_t row_bytes =
      static_cast<std::size_t>(picture.width) * (picture.format == PixelFormat::kGRAY8 ? 1 : 3);
  for (int y = 0; y < picture.height; ++y) std::memcpy(copy.row(y), picture.row(0, y), row_bytes);
  return copy;
}

// The label image of a class map at its frame's size (post/class_mask.h).
Result<io::HostImage> label_image(const PendingPicture& picture) {
  FOVEA_ASSIGN_OR_RETURN(
      io::HostImage labels,
      io::HostImage::allocate(PixelFormat::kGRAY8, picture.label_width, picture.label_height));
  FOVEA_TRY(post::run_label_image_cpu(picture.image.view(), *picture.mapping, labels.view()));
  return labels;
}

}  // namespace

std::filesystem::path image_output_path(const ImageSinkConfig& config,
                                        const std::filesystem::path& relative) {
  std::filesystem::path path = std::filesystem::path(config.output_dir) / relative;
  path.replace_extension(extension(config.format));
  return path;
}

namespace {

// The picture of the input named `name` (relative to its folder): where it goes, and the file it
// must not be written over.
PendingPicture pending_for(const ImageSinkConfig& config,
                           const std::unordered_map<std::string, std::string>& input_of,
                           const std::string& name) {
  const auto input = input_of.find(name);
  return {.path = image_output_path(config, name),
          .input = input == input_of.end() ? std::string() : input->second};
}

}  // namespace

struct ImageSink::Writers {
  BoundedQueue<PendingPicture> queue;
  io::ImageEncodeOptions options;
  std::vector<std::thread> threads;
  mutable std::mutex mutex;  // guards the counters
  std::int64_t written = 0;
  std::int64_t failed = 0;
  std::vector<SkippedItem> failures;
  bool finished = false;

  Writers(std::size_t capacity, io::ImageEncodeOptions encode) : queue(capacity), options(encode) {}

  Status add(PendingPicture picture) {
    if (queue.push(std::move(picture)) == PushResult::kPushed) return Status::ok();
    return make_error(StatusCode::kInternal, "the image writers stopped early");
  }

  void run() {
    while (std::optional<PendingPicture> picture = queue.pop()) {
      const Status status = write_one(*picture);
      const std::lock_guard lock(mutex);
      if (status.is_ok()) {
        ++written;
        continue;
      }
      log_error("{}: not written: {}", picture->path.string(), status.message());
      ++failed;
      if (failures.size() < kMaxListedFailures)
        failures.push_back({picture->path.string(), status.message()});
    }
  }

  Status write_one(const PendingPicture& picture) const {
    std::error_code error;
    std::filesystem::create_directories(picture.path.parent_path(), error);
    if (error) return make_error(StatusCode::kIoError, "cannot create its folder: ", error.message());
    if (picture.encoded) {
      FOVEA_TRY(check_not_an_input({"image", picture.path}, {picture.input}));
      return write_file_atomically(picture.path, *picture.encoded, "image");
    }
    if (!picture.mapping)
      return io::write_image_file(picture.path, picture.image.view(), options, {picture.input});
    FOVEA_ASSIGN_OR_RETURN(const io::HostImage labels, label_image(picture));
    return io::write_image_file(picture.path, labels.view(), options, {picture.input});
  }
};

// The GPU's JPEG encoder with the stream it encodes on.
struct ImageSink::GpuJpeg {
  std::unique_ptr<io::NvjpegEncoder> encoder;
#if defined(FOVEA_HAVE_CUDA)
  CudaStream stream;
#endif
};

ImageSink::ImageSink(ImageSinkConfig config, const std::vector<io::ListedImage>& images, bool gpu,
                     int threads)
    : config_(std::move(config)), gpu_(gpu), threads_(threads) {
  for (const io::ListedImage& image : images)
    input_of_[image.relative.generic_string()] = image.path.string();
}

ImageSink::~ImageSink() {
  static_cast<void>(finish());
}

Status ImageSink::start(std::span<const Rational>) {
  std::error_code error;
  std::filesystem::create_directories(config_.output_dir, error);
  if (error) {
    return make_error(StatusCode::kIoError, "sinks.images.output_dir ", config_.output_dir,
                      ": cannot create it: ", error.message());
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int count = threads_ > 0 ? threads_ : cores;
  io::ImageEncodeOptions options;
  options.format =
      config_.format == ImageOutputFormat::kPng ? io::ImageFileFormat::kPng : io::ImageFileFormat::kJpeg;
  options.jpeg_quality = config_.quality;
  FOVEA_TRY(start_gpu_jpeg());
  // Two pictures per writer keep every writer busy while the sink stage copies the next batch.
  writers_ = std::make_unique<Writers>(static_cast<std::size_t>(2 * count), options);
  for (int i = 0; i < count; ++i) writers_->threads.emplace_back([this] { writers_->run(); });
  return Status::ok();
}

// Only when asked: nvJPEG shares the SMs with the model and encodes on the sink's one thread, and
// the GPU machine measured it slower than libjpeg-turbo on the writer threads (docs/perf.md,
// "JPEG pictures on the GPU"), so `auto` keeps the writers.
Status ImageSink::start_gpu_jpeg() {
  if (config_.encoder != JpegCodec::kNvjpeg || config_.format != ImageOutputFormat::kJpeg)
    return Status::ok();
  if (!gpu_) {
    return make_error(StatusCode::kInvalidArgument,
                      "sinks.images.encoder: nvjpeg encodes pictures on the GPU; this flow runs on the CPU");
  }
  Result<std::unique_ptr<io::NvjpegEncoder>> encoder = io::NvjpegEncoder::create(config_.quality);
  if (!encoder.is_ok()) return encoder.status().with_context("sinks.images.encoder: nvjpeg");
  gpu_jpeg_ = std::make_unique<GpuJpeg>();
  gpu_jpeg_->encoder = std::move(encoder).value();
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_ASSIGN_OR_RETURN(gpu_jpeg_->stream, CudaStream::create());
#endif
  return Status::ok();
}

Status ImageSink::write_gpu_jpeg(const FrameBatch& batch) {
  std::vector<std::size_t> frames;
  std::vector<ImageView> pictures;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch.results[i].picture_device) continue;
    frames.push_back(i);
    pictures.push_back(*batch.results[i].picture_device);
  }
#if defined(FOVEA_HAVE_CUDA)
  cudaStream_t stream = gpu_jpeg_->stream.get();
#else
  cudaStream_t stream = nullptr;
#endif
  FOVEA_ASSIGN_OR_RETURN(std::vector<std::string> files, gpu_jpeg_->encoder->encode_batch(stream, pictures));
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const std::string& name = *batch.frames[frames[k]].payload.name;
    PendingPicture pending = pending_for(config_, input_of_, name);
    pending.encoded = std::move(files[k]);
    FOVEA_TRY(writers_->add(std::move(pending)));
  }
  return Status::ok();
}

Status ImageSink::write(const std::shared_ptr<const FrameBatch>& batch) {
  if (gpu_jpeg_) return write_gpu_jpeg(*batch);
  for (std::size_t i = 0; i < batch->size(); ++i) {
    const FrameResults& results = batch->results[i];
    if (!results.picture && !results.class_map) continue;
    const std::string& name = *batch->frames[i].payload.name;
    PendingPicture pending = pending_for(config_, input_of_, name);
    FOVEA_ASSIGN_OR_RETURN(pending.image,
                           copy_picture(results.picture ? *results.picture : results.class_map->map));
    if (results.class_map) {
      pending.mapping = results.class_map->mapping;
      pending.label_width = batch->image(i).width;
      pending.label_height = batch->image(i).height;
    }
    FOVEA_TRY(writers_->add(std::move(pending)));
  }
  return Status::ok();
}

Status ImageSink::finish() {
  if (!writers_ || writers_->finished) return Status::ok();
  writers_->queue.close();
  for (std::thread& thread : writers_->threads) thread.join();
  writers_->finished = true;
  return Status::ok();
}

std::vector<SinkReport> ImageSink::reports() const {
  if (!writers_) return {};
  const std::lock_guard lock(writers_->mutex);
  const std::string format(extension(config_.format).substr(1));
  SinkReport folder{.source = "images",
                    .path = config_.output_dir,
                    .encoder = gpu_jpeg_ ? format + " (nvjpeg)" : format,
                    .frames = writers_->written};
  std::vector<SinkReport> reports{folder};
  for (const SkippedItem& failure : writers_->failures) {
    reports.push_back({.source = "images", .path = failure.path, .error = failure.reason});
  }
  return reports;
}

}  // namespace fovea::pipeline
