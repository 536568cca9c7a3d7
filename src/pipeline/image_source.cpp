#include "pipeline/image_source.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/log.h"
#include "io/image_codec.h"
#include "io/nvjpeg_decoder.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {
namespace {

// What a decode thread leaves for the pusher at the image's position in the list: its frame, or
// nothing when the file was skipped.
struct Decoded {
  std::optional<SourceFrame> frame;
};

// The part of a decoded picture that becomes the frame: all of it, or one half of an AB pair.
ImageView split_view(const ImageView& image, AbSplit split) {
  if (split == AbSplit::kNone) return image;
  ImageView half = image;
  half.width = image.width / 2;
  if (split == AbSplit::kB) half.planes[0].data = image.row(0, 0) + static_cast<std::size_t>(half.width) * 3;
  return half;
}

}  // namespace

std::string image_inputs_label(const std::vector<std::string>& inputs) {
  if (inputs.empty()) return "";
  return inputs.size() == 1 ? inputs[0] : fmt::format("{} + {} more", inputs[0], inputs.size() - 1);
}

// Frames held downstream, in count and bytes. Shared with the frames' owners, which give their
// share back when the last copy of a frame goes (after the batch holding it has left the sink).
struct FrameBudget {
  std::mutex mutex;
  std::condition_variable changed;
  int frames = 0;
  std::int64_t bytes = 0;
  bool stopping = false;
};

struct ImageSources::State {
  std::vector<io::ListedImage> images;
  std::string name;
  std::string uri;
  ImageSourceOptions options;
  StreamMux<SourceFrame>& mux;
  std::shared_ptr<const std::string> source_name;
  std::shared_ptr<FrameBudget> budget = std::make_shared<FrameBudget>();

  // The reorder window: decode threads take positions in order and may run `window` images ahead
  // of the next one the pusher needs.
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::size_t next_take = 0;
  std::size_t next_push = 0;
  std::size_t window = 8;
  std::map<std::size_t, Decoded> ready;
  bool stopping = false;

  // The report's counters (under `mutex`).
  SourceState source_state = SourceState::kConnecting;
  std::int64_t decoded_count = 0;
  std::int64_t failed = 0;
  std::int64_t unlisted = 0;
  std::int64_t nvjpeg_count = 0;  // of decoded_count: on the GPU
  std::int64_t cpu_count = 0;     // of `failed`: entries the listing could not read (not in `images`)
  std::vector<SkippedItem> failures;

  std::vector<std::thread> threads;
#if defined(FOVEA_HAVE_CUDA)
  // One upload stream per decode thread (each thread's copies and its frames' ready events), and
  // the frames' device memory from a stream-ordered pool that keeps what it freed for reuse.
  std::vector<CudaStream> streams;
  std::vector<std::vector<CudaEvent>> events;
  std::vector<std::size_t> next_event;
  cudaMemPool_t memory_pool = nullptr;
#endif
  // Per decode thread on the GPU path, when nvJPEG serves (images.decoder); empty otherwise.
  std::vector<std::unique_ptr<io::NvjpegDecoder>> jpeg_decoders;

  State(std::vector<io::ListedImage> listed, std::string source, std::string label, ImageSourceOptions opts,
        StreamMux<SourceFrame>& m)
      : images(std::move(listed)),
        name(std::move(source)),
        uri(std::move(label)),
        options(opts),
        mux(m),
        source_name(std::make_shared<const std::string>(name)) {}

  int thread_count() const {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return std::max(1, options.threads > 0 ? options.threads : cores);
  }

  void stop() {
    {
      const std::lock_guard lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    {
      const std::lock_guard lock(budget->mutex);
      budget->stopping = true;
    }
    budget->changed.notify_all();
  }

  // Decode thread `worker`: takes the next position while the window allows, decodes it and
  // leaves the result for the pusher.
  void decode_loop(std::size_t worker) {
    for (;;) {
      std::size_t position = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(
            lock, [&] { return stopping || next_take >= images.size() || next_take < next_push + window; });
        if (stopping || next_take >= images.size()) return;
        position = next_take++;
      }
      Decoded result = load(worker, position);
      {
        const std::lock_guard lock(mutex);
        ready.emplace(position, std::move(result));
      }
      changed.notify_all();
    }
  }

  Decoded load(std::size_t worker, std::size_t position) {
    const io::ListedImage& listed = images[position];
    bool on_gpu = false;
    Result<SourceFrame> frame = read_and_decode(worker, position, on_gpu);
    Decoded out;
    const std::lock_guard lock(mutex);
    if (frame.is_ok()) {
      ++decoded_count;
      ++(on_gpu ? nvjpeg_count : cpu_count);
      out.frame = std::move(frame).value();
    } else if (frame.status().code() != StatusCode::kCancelled) {
      skip(listed, frame.status());
    }
    return out;
  }

  // nvJPEG where this thread has a decoder and the file is a JPEG it takes as stored (its EXIF
  // orientation is applied on the CPU path only); libjpeg-turbo, libpng, ... otherwise.
  Result<SourceFrame> read_and_decode(std::size_t worker, std::size_t position, bool& on_gpu) {
    const io::ListedImage& listed = images[position];
    FOVEA_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, io::read_image_bytes(listed.path));
    const std::string file = listed.path.string();
    if (worker < jpeg_decoders.size() && jpeg_decoders[worker] &&
        io::sniff_image_format(bytes) == io::ImageFileFormat::kJpeg) {
      FOVEA_ASSIGN_OR_RETURN(const io::JpegInfo info, jpeg_decoders[worker]->probe(bytes, file));
      if (info.route != io::JpegRoute::kCpu && info.orientation == 1) {
        on_gpu = true;
        return decode_on_gpu(worker, position, std::move(bytes), info);
      }
    }
    FOVEA_ASSIGN_OR_RETURN(io::DecodedImage picture, io::decode_image(bytes, file));
    return make_frame(worker, position, std::move(picture));
  }

  // Under `mutex`.
  void skip(const io::ListedImage& listed, const Status& status) {
    // io's errors start with the file's name already; the report keeps the path and the reason apart.
    const std::string path = listed.path.string();
    std::string reason = status.message();
    if (reason.starts_with(path + ": ")) reason.erase(0, path.size() + 2);
    log_warn("{}: skipped: {}", path, reason);
    ++failed;
    if (failures.size() < kMaxListedFailures) failures.push_back({path, std::move(reason)});
  }

  // Waits until the frame's bytes fit the budget; the image the pusher needs next never waits,
  // so progress does not depend on the images after it giving memory back.
  Status reserve(std::size_t position, std::int64_t bytes) {
    std::unique_lock lock(budget->mutex);
    budget->changed.wait(lock, [&] {
      if (budget->stopping) return true;
      if (position == next_push_now()) return true;
      return budget->frames < options.max_frames_in_flight &&
             budget->bytes + bytes <= options.max_bytes_in_flight;
    });
    if (budget->stopping) return make_error(StatusCode::kCancelled, "the flow is stopping");
    ++budget->frames;
    budget->bytes += bytes;
    return Status::ok();
  }

  std::size_t next_push_now() const {
    const std::lock_guard lock(mutex);
    return next_push;
  }

  // The frame's owner: the pixels, and the budget share given back when the frame goes.
  std::shared_ptr<void> owner(std::shared_ptr<void> pixels, std::int64_t bytes) const {
    // Built in place: a temporary Held would give the share back when it went.
    struct Held {
      Held(std::shared_ptr<void> held_pixels, std::shared_ptr<FrameBudget> held_budget,
           std::int64_t held_bytes)
          : pixels(std::move(held_pixels)), budget(std::move(held_budget)), bytes(held_bytes) {}
      Held(const Held&) = delete;
      Held& operator=(const Held&) = delete;
      ~Held() {
        pixels.reset();
        {
          const std::lock_guard lock(budget->mutex);
          --budget->frames;
          budget->bytes -= bytes;
        }
        budget->changed.notify_all();
      }
      std::shared_ptr<void> pixels;
      std::shared_ptr<FrameBudget> budget;
      std::int64_t bytes;
    };
    return std::make_shared<Held>(std::move(pixels), budget, bytes);
  }

  Result<ImageView> part_of(const ImageView& picture) const {
    const ImageView view = split_view(picture, options.split);
    if (view.width < 1) {
      return make_error(StatusCode::kInvalidArgument, "an image ", std::to_string(picture.width),
                        " pixels wide has no A and B halves");
    }
    return view;
  }

  SourceFrame named_frame(std::size_t position) const {
    SourceFrame frame;
    frame.name = std::make_shared<const std::string>(images[position].relative.generic_string());
    frame.frame.index = static_cast<std::int64_t>(position);
    return frame;
  }

  Result<SourceFrame> make_frame(std::size_t worker, std::size_t position, io::DecodedImage picture) {
    auto host = std::make_shared<io::HostImage>(std::move(picture.image));
    FOVEA_ASSIGN_OR_RETURN(const ImageView view, part_of(host->view()));
    const std::int64_t bytes = static_cast<std::int64_t>(view.width) * view.height * 3;
    FOVEA_TRY(reserve(position, bytes));
    SourceFrame frame = named_frame(position);
    if (!options.gpu) {
      frame.frame.image = view;
      frame.frame.owner = owner(std::move(host), bytes);
      return frame;
    }
    FOVEA_TRY(upload(worker, view, bytes, frame));
    return frame;
  }

#if defined(FOVEA_HAVE_CUDA)
  Status prepare_device() {
    FOVEA_CUDA_TRY(cudaSetDevice(options.device));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = options.device;
    FOVEA_CUDA_TRY(cudaMemPoolCreate(&memory_pool, &props));
    // Keep what was freed: the next images reuse it instead of going back to the driver.
    std::uint64_t keep_all = ~std::uint64_t{0};
    FOVEA_CUDA_TRY(cudaMemPoolSetAttribute(memory_pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    const int workers = thread_count();
    next_event.assign(static_cast<std::size_t>(workers), 0);
    for (int w = 0; w < workers; ++w) {
      FOVEA_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create(CudaStream::Priority::kHigh));
      streams.push_back(std::move(stream));
      // A ring of ready events per thread, as video sources keep (video_source.cpp says why a
      // ring one longer than the frames in flight is enough).
      std::vector<CudaEvent> ring;
      for (int i = 0; i <= options.max_frames_in_flight; ++i) {
        FOVEA_ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::create());
        ring.push_back(std::move(event));
      }
      events.push_back(std::move(ring));
    }
    return prepare_jpeg_decoders(workers);
  }

  // One nvJPEG decoder per decode thread (its decoding state is the thread's). Asked for by name,
  // one that cannot be had fails the source; `auto` says why once and decodes on the CPU.
  Status prepare_jpeg_decoders(int workers) {
    if (options.decoder == ImageDecoder::kCpu) return Status::ok();
    for (int w = 0; w < workers; ++w) {
      Result<std::unique_ptr<io::NvjpegDecoder>> decoder =
          io::NvjpegDecoder::create(io::NvjpegBackend::kAuto, options.device);
      if (!decoder.is_ok()) {
        jpeg_decoders.clear();
        if (options.decoder == ImageDecoder::kNvjpeg)
          return decoder.status().with_context("images.decoder nvjpeg");
        log_info("images: JPEG decodes on the CPU ({})", decoder.status().message());
        return Status::ok();
      }
      jpeg_decoders.push_back(std::move(decoder).value());
    }
    const io::NvjpegDecoder& first = *jpeg_decoders.front();
    log_info("images: JPEG decodes on the GPU (nvJPEG {} backend{}), other files on {} CPU threads",
             io::nvjpeg_backend_name(first.backend()),
             first.hardware_engines() > 0 ? fmt::format(", {} JPEG engines", first.hardware_engines()) : "",
             workers);
    return Status::ok();
  }

  // Device memory for one frame from the source's pool, on the thread's stream. The frame is
  // released after the GPU work that read it has completed (core/pool.h's rule).
  Result<std::shared_ptr<void>> allocate(std::size_t worker, std::int64_t bytes) {
    FOVEA_CUDA_TRY(cudaSetDevice(options.device));
    cudaStream_t stream = streams[worker].get();
    void* device = nullptr;
    FOVEA_CUDA_TRY(cudaMallocFromPoolAsync(&device, static_cast<std::size_t>(bytes), memory_pool, stream));
    return std::shared_ptr<void>(device, [stream](void* p) { cudaFreeAsync(p, stream); });
  }

  Status mark_ready(std::size_t worker, SourceFrame& frame) {
    std::vector<CudaEvent>& ring = events[worker];
    const CudaEvent& event = ring[next_event[worker]];
    next_event[worker] = (next_event[worker] + 1) % ring.size();
    FOVEA_TRY(event.record(streams[worker].get()));
    frame.ready = event.get();
    return Status::ok();
  }

  // From pageable memory the copy returns once the rows are staged, so the host image may go as
  // soon as the call returns.
  Status upload(std::size_t worker, const ImageView& picture, std::int64_t bytes, SourceFrame& frame) {
    FOVEA_ASSIGN_OR_RETURN(std::shared_ptr<void> pixels, allocate(worker, bytes));
    const std::size_t row_bytes = static_cast<std::size_t>(picture.width) * 3;
    FOVEA_CUDA_TRY(cudaMemcpy2DAsync(pixels.get(), row_bytes, picture.row(0, 0), picture.planes[0].pitch,
                                     row_bytes, static_cast<std::size_t>(picture.height),
                                     cudaMemcpyHostToDevice, streams[worker].get()));
    frame.frame.image = picture;
    frame.frame.image.memory = MemoryKind::kDevice;
    frame.frame.image.planes[0].data = pixels.get();
    frame.frame.image.planes[0].pitch = row_bytes;
    frame.frame.owner = owner(std::move(pixels), bytes);
    return mark_ready(worker, frame);
  }

  // The whole picture is decoded into the frame's memory (a split keeps a view of one half); the
  // file's bytes stay with the frame until the decode that reads them has run.
  Result<SourceFrame> decode_on_gpu(std::size_t worker, std::size_t position, std::vector<std::uint8_t> bytes,
                                    const io::JpegInfo& info) {
    const std::int64_t size = static_cast<std::int64_t>(info.width) * info.height * 3;
    FOVEA_TRY(reserve(position, size));
    Result<std::shared_ptr<void>> allocated = allocate(worker, size);
    auto jpeg = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
    // The owner gives the budget back however this ends.
    std::shared_ptr<void> pixels = allocated.is_ok() ? *allocated : nullptr;
    std::shared_ptr<void> held =
        owner(std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(pixels, jpeg), size);
    FOVEA_TRY(allocated.status());
    ImageView full;
    full.format = PixelFormat::kRGB8;
    full.width = info.width;
    full.height = info.height;
    full.memory = MemoryKind::kDevice;
    full.num_planes = 1;
    full.planes[0] = {pixels.get(), static_cast<std::size_t>(info.width) * 3};
    const std::string file = images[position].path.string();
    const std::span<const std::uint8_t> data(*jpeg);
    const std::string_view name_view(file);
    FOVEA_TRY(
        jpeg_decoders[worker]->decode_batch(streams[worker].get(), {&data, 1}, {&name_view, 1}, {&full, 1}));
    SourceFrame frame = named_frame(position);
    FOVEA_ASSIGN_OR_RETURN(frame.frame.image, part_of(full));
    frame.frame.owner = std::move(held);
    FOVEA_TRY(mark_ready(worker, frame));
    return frame;
  }
#else
  Status prepare_device() const {
    return make_error(StatusCode::kUnsupported, "the GPU path needs CUDA, and this build of fovea has none");
  }
  Status upload(std::size_t, const ImageView&, std::int64_t, SourceFrame&) const {
    return prepare_device();
  }
  Result<SourceFrame> decode_on_gpu(std::size_t, std::size_t, std::vector<std::uint8_t>,
                                    const io::JpegInfo&) const {
    return prepare_device();
  }
#endif

  // Hands the decoded images to the mux in list order, skipping the files that failed.
  void push_loop() {
    for (std::size_t position = 0; position < images.size(); ++position) {
      Decoded next;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stopping || ready.count(position) > 0; });
        if (stopping) break;
        next = std::move(ready.at(position));
        ready.erase(position);
        next_push = position + 1;
        source_state = SourceState::kRunning;
      }
      changed.notify_all();
      budget->changed.notify_all();  // the next image may now pass the budget
      if (next.frame && !mux.push(0, std::move(*next.frame), std::nullopt)) break;
    }
    {
      const std::lock_guard lock(mutex);
      source_state = SourceState::kEnded;
    }
    mux.end(0);
  }
};

ImageSources::ImageSources(io::ImageList list, std::string name, std::string uri, ImageSourceOptions options,
                           StreamMux<SourceFrame>& mux)
    : state_(std::make_unique<State>(std::move(list.images), std::move(name), std::move(uri), options, mux)) {
  state_->window = static_cast<std::size_t>(2 * state_->thread_count() + 4);
  for (const io::SkippedEntry& entry : list.skipped) {
    state_->skip({.path = entry.path}, make_error(StatusCode::kIoError, entry.reason));
    ++state_->unlisted;
  }
}

ImageSources::~ImageSources() {
  request_stop();
  join();
#if defined(FOVEA_HAVE_CUDA)
  for (CudaStream& stream : state_->streams) static_cast<void>(stream.synchronize());
  if (state_->memory_pool != nullptr) cudaMemPoolDestroy(state_->memory_pool);
#endif
}

void ImageSources::start() {
  State& state = *state_;
  if (state.options.gpu) {
    if (Status prepared = state.prepare_device(); !prepared.is_ok()) {
      state.mux.fail(0, prepared.with_context(state.uri));
      const std::lock_guard lock(state.mutex);
      state.source_state = SourceState::kFailed;
      return;
    }
  }
  const int workers = state.thread_count();
  for (int w = 0; w < workers; ++w) {
    state.threads.emplace_back([&state, w] { state.decode_loop(static_cast<std::size_t>(w)); });
  }
  state.threads.emplace_back([&state] { state.push_loop(); });
}

void ImageSources::request_stop() {
  state_->stop();
}

void ImageSources::join() {
  for (std::thread& thread : state_->threads) {
    if (thread.joinable()) thread.join();
  }
  state_->threads.clear();
  // Decoded images nobody pushed give their budget back before the budget's users go.
  const std::lock_guard lock(state_->mutex);
  state_->ready.clear();
}

std::vector<std::optional<SourceReport>> ImageSources::reports() const {
  const State& state = *state_;
  const std::lock_guard lock(state.mutex);
  SourceReport report;
  report.name = state.name;
  report.uri = state.uri;
  report.state = state.source_state;
  report.backend = io::DecoderBackend::kCpu;
  report.decoder =
      state.nvjpeg_count > 0 ? fmt::format("nvjpeg {}, cpu {}", state.nvjpeg_count, state.cpu_count) : "cpu";
  report.frames_decoded = state.decoded_count;
  report.expected_frames = static_cast<std::int64_t>(state.images.size()) - state.failed + state.unlisted;
  report.items_failed = state.failed;
  report.failed_items = state.failures;
  return {report};
}

}  // namespace fovea::pipeline
