#include "pipeline/image_source.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/log.h"
#include "core/pool.h"
#include "io/image_codec.h"
#include "io/nvjpeg_decoder.h"
#include "trace/tracer.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "core/cuda_check.h"
#include "core/cuda_raii.h"
#endif

namespace fovea::pipeline {
namespace {

// A file the GPU's JPEG threads take: a JPEG by its name (a file misnamed is still decoded, on the
// CPU by that thread), so which thread decodes what depends on the list alone and every run gives
// the same pixels.
bool jpeg_by_name(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".jpg" || extension == ".jpeg";
}

// A JPEG thread's pinned read blocks: a group of 32 1080p photos (24 MB) spans two, and a block
// goes back to be filled again once the frames read into it are released downstream.
constexpr std::size_t kReadBlockBytes = std::size_t{16} << 20;
// How often an image waiting for the budget checks whether it has become the next one to push.
constexpr std::chrono::milliseconds kBudgetPoll{20};

// Adds the time from its construction to its end to `total_ns`: one kind of a decode thread's work.
class TimedWork {
 public:
  explicit TimedWork(std::atomic<std::int64_t>& total_ns)
      : total_ns_(total_ns), start_(std::chrono::steady_clock::now()) {}
  TimedWork(const TimedWork&) = delete;
  TimedWork& operator=(const TimedWork&) = delete;
  ~TimedWork() {
    total_ns_ +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
            .count();
  }

 private:
  std::atomic<std::int64_t>& total_ns_;
  std::chrono::steady_clock::time_point start_;
};

// What a decode thread leaves for the pusher at the image's position in the list: its frame, or
// nothing when the file was skipped.
struct Decoded {
  std::optional<SourceFrame> frame;
};

// The part of a decoded picture that becomes the frame: all of it, or one half of an AB pair. An
// odd width leaves the middle column out of both halves: B ends at the right edge, as A starts at
// the left one.
ImageView split_view(const ImageView& image, AbSplit split) {
  if (split == AbSplit::kNone) return image;
  ImageView half = image;
  half.width = image.width / 2;
  if (split == AbSplit::kB) {
    half.planes[0].data = image.row(0, 0) + static_cast<std::size_t>(image.width - half.width) * 3;
  }
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
  int downstream = 0;  // of `frames`: pushed to the mux, not yet released
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
  // The positions each kind of thread takes, in list order: [0] the GPU's JPEG threads', [1] the
  // CPU threads' (every position when nvJPEG is not used).
  std::array<std::vector<std::size_t>, 2> queues;
  std::array<std::size_t, 2> next_take{0, 0};
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

  // Where the decode threads spend their time, summed over them (the report's SourceWork): the
  // summary shows it, since a flow bound by its images is bound by one of these.
  // `order wait`: a thread waiting to take its next files until the images before them are pushed
  // (the window that bounds how far ahead of the pusher the threads may decode).
  enum Work { kRead, kProbe, kCpuDecode, kGpuDecode, kUpload, kBudgetWait, kOrderWait, kWorkKinds };
  static constexpr std::array<std::string_view, kWorkKinds> kWorkNames = {
      "read", "probe", "cpu decode", "gpu decode", "upload", "budget wait", "order wait"};
  std::array<std::atomic<std::int64_t>, kWorkKinds> work_ns{};
  std::atomic<int> worker_count{0};  // the decode threads, once started
  // The decode threads' own running time, what their work shares are shares of (the run's start-up
  // comes before it): from start() to the last thread's return.
  std::chrono::steady_clock::time_point threads_started;
  std::atomic<int> workers_running{0};
  std::atomic<std::int64_t> threads_span_ns{-1};  // set when the last decode thread returns

  // work(), its time counted as `kind`.
  template <typename Work>
  auto timed(std::size_t kind, Work&& work) {
    const TimedWork timer(work_ns[kind]);
    return work();
  }

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
  // Per nvJPEG thread, pinned blocks its files are read into: nvJPEG's upload of a file from
  // pageable memory is staged through the driver while the thread holds the engines (118 us for
  // 760 KB, a fifth of a batch's decode call beside a detector, call 78), from pinned memory it is
  // queued. Files larger than a block are read into their own (pageable) memory.
  std::vector<BlockArena> read_arenas;

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

  // Decode thread `worker`: takes the next positions while the window allows (a group of up to
  // images.jpeg_batch for a thread that decodes JPEG on the GPU, whose decoder takes a batch per
  // call), reads and decodes them and leaves the results for the pusher. (Reading a JPEG thread's
  // next group on a helper while nvJPEG decodes the current one was tried: 5% more images/s, and
  // one run in 22 on the H200 stalled; docs/perf.md, "The detector on photos, and the ceiling
  // measured again".)
  void decode_loop(std::size_t worker) {
    const std::size_t kind = worker < jpeg_decoders.size() ? 0 : 1;
    for (;;) {
      const std::vector<std::size_t> positions = take(kind);
      if (positions.empty()) break;
      std::vector<Pending> group = read_group(worker, positions);
      publish(positions, finish_group(worker, group));
    }
    if (workers_running.fetch_sub(1) == 1) threads_span_ns.store(threads_running_ns());
  }

  std::int64_t threads_running_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                threads_started)
        .count();
  }

  // The next positions of the thread kind's queue, once the window allows one: up to a group for a
  // JPEG thread, one for a CPU thread. Empty when the queue is done or the source stops.
  std::vector<std::size_t> take(std::size_t kind) {
    const std::size_t group_size = kind == 0 ? static_cast<std::size_t>(options.jpeg_batch) : 1;
    const std::vector<std::size_t>& queue = queues[kind];
    std::size_t& next = next_take[kind];
    std::vector<std::size_t> positions;
    std::unique_lock lock(mutex);
    const auto allowed = [&] { return next < queue.size() && queue[next] < next_push + window; };
    const auto can_go = [&] { return stopping || next >= queue.size() || allowed(); };
    if (!can_go()) {  // timed and traced only when it waits: a CPU thread takes one image at a time
      FOVEA_TRACE_RANGE("image order wait");
      const TimedWork timer(work_ns[kOrderWait]);
      changed.wait(lock, can_go);
    }
    if (stopping) return positions;
    while (positions.size() < group_size && allowed()) positions.push_back(queue[next++]);
    return positions;
  }

  void publish(const std::vector<std::size_t>& positions, std::vector<Decoded> results) {
    {
      const std::lock_guard lock(mutex);
      for (std::size_t k = 0; k < positions.size(); ++k) ready.emplace(positions[k], std::move(results[k]));
    }
    changed.notify_all();
  }

  // Which thread takes which file (queues), and how many threads of each kind.
  std::pair<int, int> plan_threads() {
    const int asked = thread_count();
    if (jpeg_decoders.empty()) {
      for (std::size_t p = 0; p < images.size(); ++p) queues[1].push_back(p);
      return {0, asked};
    }
    for (std::size_t p = 0; p < images.size(); ++p) queues[jpeg_by_name(images[p].path) ? 0 : 1].push_back(p);
    const int gpu = queues[0].empty() ? 0 : static_cast<int>(jpeg_decoders.size());
    const int cpu = queues[1].empty() ? 0 : std::max(1, asked - gpu);
    if (gpu == 0) jpeg_decoders.clear();  // no JPEG by name: every thread is a CPU one
    return {gpu, cpu};
  }

  // A file read whole, and what keeps its memory.
  struct FileBytes {
    std::span<const std::uint8_t> data;
    std::shared_ptr<void> owner;
  };

  // One file of a group on its way to a frame.
  struct Pending {
    std::size_t position = 0;
    FileBytes bytes;
    std::optional<io::JpegInfo> gpu_jpeg;     // decoded by nvJPEG
    std::optional<io::DecodedImage> decoded;  // decoded on this thread
    std::int64_t frame_bytes = 0;             // the frame's memory
    Status status;
    std::optional<SourceFrame> frame;
  };

  // The group's files read, and decoded at once where they are not nvJPEG's.
  std::vector<Pending> read_group(std::size_t worker, const std::vector<std::size_t>& positions) {
    FOVEA_TRACE_RANGE("image read");
    std::vector<Pending> group(positions.size());
    for (std::size_t k = 0; k < positions.size(); ++k) {
      group[k].position = positions[k];
      group[k].status = read_and_route(worker, group[k]);
    }
    return group;
  }

  // The group's frames: their budget reserved, nvJPEG's files decoded into them.
  std::vector<Decoded> finish_group(std::size_t worker, std::vector<Pending>& group) {
    const std::size_t count = group.size();
    const std::size_t first = group.front().position;
    std::int64_t bytes = 0;
    int frames = 0;
    for (const Pending& item : group) {
      if (!item.status.is_ok()) continue;
      bytes += item.frame_bytes;
      ++frames;
    }
    const Status reserved = reserve(first, bytes, frames);
    std::vector<Pending*> on_gpu;
    for (Pending& item : group) {
      if (!item.status.is_ok()) continue;
      if (!reserved.is_ok()) {
        item.status = reserved;
        continue;
      }
      // From here the item's share of the budget goes back with its owner, whatever happens.
      std::shared_ptr<Held> held = hold(item.frame_bytes);
      if (item.gpu_jpeg) {
        item.status = allocate_for_jpeg(worker, item, std::move(held));
        if (item.status.is_ok()) on_gpu.push_back(&item);
      } else {
        item.status = frame_from_host(worker, item, std::move(held));
      }
    }
    decode_jpegs(worker, on_gpu);
    std::vector<Decoded> results(count);
    const std::lock_guard lock(mutex);
    for (std::size_t k = 0; k < count; ++k) {
      Pending& item = group[k];
      if (item.status.is_ok()) {
        ++decoded_count;
        ++(item.gpu_jpeg ? nvjpeg_count : cpu_count);
        results[k].frame = std::move(item.frame);
      } else if (item.status.code() != StatusCode::kCancelled) {
        skip(images[item.position], item.status);
      }
    }
    return results;
  }

  // Reads the file and decides who decodes it: nvJPEG where this thread has a decoder and the file
  // is a JPEG it takes as stored (an EXIF rotation is applied on the CPU path only), else this
  // thread, at once (libjpeg-turbo, libpng, ...).
  Status read_and_route(std::size_t worker, Pending& item) {
    const io::ListedImage& listed = images[item.position];
    FOVEA_ASSIGN_OR_RETURN(item.bytes, timed(kRead, [&] { return read_file(worker, listed.path); }));
    const std::string file = listed.path.string();
    if (worker < jpeg_decoders.size() &&
        io::sniff_image_format(item.bytes.data) == io::ImageFileFormat::kJpeg) {
      FOVEA_ASSIGN_OR_RETURN(io::JpegInfo info, timed(kProbe, [&] {
                               return jpeg_decoders[worker]->probe(item.bytes.data, file);
                             }));
      if (info.route != io::JpegRoute::kCpu && info.orientation == 1) {
        // The whole picture is decoded into the frame's memory; a split keeps a view of one half.
        FOVEA_TRY(check_split(info.width));
        item.frame_bytes = static_cast<std::int64_t>(info.width) * info.height * 3;
        item.gpu_jpeg = std::move(info);
        return Status::ok();
      }
    }
    FOVEA_ASSIGN_OR_RETURN(item.decoded,
                           timed(kCpuDecode, [&] { return io::decode_image(item.bytes.data, file); }));
    item.bytes = {};
    FOVEA_TRY(check_split(item.decoded->image.view().width));
    const ImageView view = split_view(item.decoded->image.view(), options.split);
    item.frame_bytes = static_cast<std::int64_t>(view.width) * view.height * 3;
    return Status::ok();
  }

  // The file's bytes: in the thread's read arena where it has one and the file fits a block, else
  // in memory of their own.
  Result<FileBytes> read_file(std::size_t worker, const std::filesystem::path& path) {
    std::shared_ptr<void> owner;
    const io::ByteAllocator allocate = [&](std::size_t size) -> Result<std::span<std::uint8_t>> {
      if (worker < read_arenas.size() && size <= read_arenas[worker].block_bytes()) {
        FOVEA_ASSIGN_OR_RETURN(BlockArena::Allocation allocation, read_arenas[worker].allocate(size));
        owner = std::move(allocation.owner);
        return allocation.bytes;
      }
      auto own = std::make_shared<std::vector<std::uint8_t>>(size);
      owner = own;
      return std::span<std::uint8_t>(*own);
    };
    FOVEA_ASSIGN_OR_RETURN(const std::span<std::uint8_t> data, io::read_image_bytes(path, allocate));
    return FileBytes{data, std::move(owner)};
  }

  Status check_split(int width) const {
    if (options.split == AbSplit::kNone || width >= 2) return Status::ok();
    return make_error(StatusCode::kInvalidArgument, "an image ", std::to_string(width),
                      " pixels wide has no A and B halves");
  }

  // Waits until `frames` frames of `bytes` fit the budget. The group holding the image the pusher
  // needs next waits only while frames pushed downstream hold the budget (for options.next_image_patience at
  // most): those are released once their batch has run, and the mux sends the batch it is building
  // without waiting for this image (set_starved), so a batch of large pictures is not held whole.
  // Frames decoded ahead of it are not waited for (they wait for it to be pushed): it then passes
  // over the budget.
  Status reserve(std::size_t first, std::int64_t bytes, int frames) {
    FOVEA_TRACE_RANGE("image budget wait");
    const TimedWork timer(work_ns[kBudgetWait]);
    bool starved = false;
    std::optional<std::chrono::steady_clock::time_point> next_since;
    std::unique_lock lock(budget->mutex);
    for (;;) {
      if (budget->stopping) break;
      const bool fits = budget->frames + frames <= options.max_frames_in_flight &&
                        budget->bytes + bytes <= options.max_bytes_in_flight;
      const bool next = first == next_push_now();
      if (next && !next_since) next_since = std::chrono::steady_clock::now();
      const bool patience_over =
          next && std::chrono::steady_clock::now() - *next_since >= options.next_image_patience;
      if (fits || (next && (budget->downstream == 0 || patience_over))) break;
      if (next != starved) {
        // The mux's lock is taken without the budget's: a frame released under the mux's lock takes
        // the budget's.
        starved = next;
        lock.unlock();
        mux.set_starved(0, starved);
        lock.lock();
        continue;
      }
      // Polled as well: the image may become the next one to push without the budget changing.
      budget->changed.wait_for(lock, kBudgetPoll);
    }
    if (starved) {
      lock.unlock();
      mux.set_starved(0, false);
      lock.lock();
    }
    if (budget->stopping) return make_error(StatusCode::kCancelled, "the flow is stopping");
    budget->frames += frames;
    budget->bytes += bytes;
    return Status::ok();
  }

  std::size_t next_push_now() const {
    const std::lock_guard lock(mutex);
    return next_push;
  }

  // A frame's owner: its memory (pixels, and for nvJPEG the file's bytes until the decode reading
  // them has run) and its share of the budget, given back when the last copy of the frame goes.
  struct Held {
    Held(std::shared_ptr<FrameBudget> held_budget, std::int64_t held_bytes)
        : budget(std::move(held_budget)), bytes(held_bytes) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() {
      memory.clear();
      {
        const std::lock_guard lock(budget->mutex);
        --budget->frames;
        budget->bytes -= bytes;
        if (downstream) --budget->downstream;
      }
      budget->changed.notify_all();
    }
    std::vector<std::shared_ptr<void>> memory;
    std::shared_ptr<FrameBudget> budget;
    std::int64_t bytes;
    bool downstream = false;  // under budget->mutex: pushed to the mux
  };

  std::shared_ptr<Held> hold(std::int64_t bytes) const {
    return std::make_shared<Held>(budget, bytes);
  }

  SourceFrame named_frame(std::size_t position) const {
    SourceFrame frame;
    frame.name = std::make_shared<const std::string>(images[position].relative.generic_string());
    frame.frame.index = static_cast<std::int64_t>(position);
    return frame;
  }

  // A picture decoded on this thread: the frame on the host (CPU path) or uploaded (GPU path).
  Status frame_from_host(std::size_t worker, Pending& item, std::shared_ptr<Held> held) {
    auto host = std::make_shared<io::HostImage>(std::move(item.decoded->image));
    item.decoded.reset();
    const ImageView view = split_view(host->view(), options.split);
    SourceFrame frame = named_frame(item.position);
    if (options.gpu) {
      FOVEA_TRY(timed(kUpload, [&] { return upload(worker, view, frame, *held); }));
    } else {
      frame.frame.image = view;
      held->memory.push_back(std::move(host));
    }
    frame.frame.owner = std::move(held);
    item.frame = std::move(frame);
    return Status::ok();
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
    // Every thread that may run (plan_threads may add a CPU thread beside the JPEG ones).
    const int workers = thread_count() + options.jpeg_threads;
    // A thread's nvJPEG group is reserved at once: let every JPEG thread hold one while another is
    // downstream.
    if (options.decoder != JpegCodec::kCpu) {
      options.max_frames_in_flight =
          std::max(options.max_frames_in_flight, (options.jpeg_threads + 1) * options.jpeg_batch);
    }
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
    return prepare_jpeg_decoders();
  }

  // One nvJPEG decoder per decode thread (its decoding state is the thread's). Asked for by name,
  // one that cannot be had fails the source; `auto` says why once and decodes on the CPU.
  Status prepare_jpeg_decoders() {
    if (options.decoder == JpegCodec::kCpu) return Status::ok();
    for (int w = 0; w < std::min(options.jpeg_threads, thread_count()); ++w) {
      Result<std::unique_ptr<io::NvjpegDecoder>> decoder =
          io::NvjpegDecoder::create(io::NvjpegBackend::kAuto, options.device);
      if (!decoder.is_ok()) {
        jpeg_decoders.clear();
        if (options.decoder == JpegCodec::kNvjpeg) {
          return decoder.status().with_context("images.decoder nvjpeg");
        }
        log_info("images: JPEG decodes on the CPU ({})", decoder.status().message());
        return Status::ok();
      }
      jpeg_decoders.push_back(std::move(decoder).value());
      FOVEA_ASSIGN_OR_RETURN(BufferPool blocks, BufferPool::create("images: pinned file blocks",
                                                                   MemoryKind::kPinnedHost, kReadBlockBytes));
      read_arenas.emplace_back(std::move(blocks));
    }
    const io::NvjpegDecoder& first = *jpeg_decoders.front();
    log_info(
        "images: JPEG decodes on the GPU (nvJPEG {} backend{}; {} threads, batches of up to {}), other "
        "files on the CPU",
        io::nvjpeg_backend_name(first.backend()),
        first.hardware_engines() > 0 ? fmt::format(", {} JPEG engines", first.hardware_engines()) : "",
        jpeg_decoders.size(), options.jpeg_batch);
    return Status::ok();
  }

  // Device memory for one frame from the source's pool, on the thread's stream; freed after the
  // GPU work that read it has completed (core/pool.h's rule).
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
  Status upload(std::size_t worker, const ImageView& picture, SourceFrame& frame, Held& held) {
    const std::size_t row_bytes = static_cast<std::size_t>(picture.width) * 3;
    FOVEA_ASSIGN_OR_RETURN(std::shared_ptr<void> pixels,
                           allocate(worker, static_cast<std::int64_t>(row_bytes) * picture.height));
    FOVEA_CUDA_TRY(cudaMemcpy2DAsync(pixels.get(), row_bytes, picture.row(0, 0), picture.planes[0].pitch,
                                     row_bytes, static_cast<std::size_t>(picture.height),
                                     cudaMemcpyHostToDevice, streams[worker].get()));
    frame.frame.image = picture;
    frame.frame.image.memory = MemoryKind::kDevice;
    frame.frame.image.planes[0].data = pixels.get();
    frame.frame.image.planes[0].pitch = row_bytes;
    held.memory.push_back(std::move(pixels));
    return mark_ready(worker, frame);
  }

  // The frame's memory and view for a JPEG nvJPEG will decode; its owner keeps the file's bytes too.
  Status allocate_for_jpeg(std::size_t worker, Pending& item, std::shared_ptr<Held> held) {
    FOVEA_ASSIGN_OR_RETURN(std::shared_ptr<void> pixels, allocate(worker, item.frame_bytes));
    ImageView full;
    full.format = PixelFormat::kRGB8;
    full.width = item.gpu_jpeg->width;
    full.height = item.gpu_jpeg->height;
    full.memory = MemoryKind::kDevice;
    full.num_planes = 1;
    full.planes[0] = {pixels.get(), static_cast<std::size_t>(full.width) * 3};
    held->memory.push_back(std::move(pixels));
    held->memory.push_back(item.bytes.owner);  // read by the decode's uploads, which may still be queued
    SourceFrame frame = named_frame(item.position);
    frame.frame.image = full;
    frame.frame.owner = std::move(held);
    item.frame = std::move(frame);
    return Status::ok();
  }

  // The group's JPEGs in one nvJPEG call; when it fails (a damaged file), each on its own, so the
  // good ones are kept and the bad one is named.
  void decode_jpegs(std::size_t worker, const std::vector<Pending*>& items) {
    if (items.empty()) return;
    FOVEA_TRACE_RANGE("jpeg decode");
    const TimedWork timer(work_ns[kGpuDecode]);
    if (decode_jpeg_batch(worker, items).is_ok()) {
      for (Pending* item : items) item->status = finish_jpeg_frame(worker, *item);
      return;
    }
    for (Pending* item : items) {
      item->status = decode_jpeg_batch(worker, {item});
      if (item->status.is_ok()) item->status = finish_jpeg_frame(worker, *item);
      if (!item->status.is_ok()) item->frame.reset();
    }
  }

  Status decode_jpeg_batch(std::size_t worker, const std::vector<Pending*>& items) {
    std::vector<std::span<const std::uint8_t>> data;
    std::vector<std::string> files;
    std::vector<ImageView> outputs;
    std::vector<io::JpegInfo> infos;  // probed when the file was read: not walked again
    for (Pending* item : items) {
      infos.push_back(*item->gpu_jpeg);
      data.push_back(item->bytes.data);
      files.push_back(images[item->position].path.string());
      outputs.push_back(item->frame->frame.image);
    }
    const std::vector<std::string_view> names(files.begin(), files.end());
    return jpeg_decoders[worker]->decode_batch(streams[worker].get(), data, names, outputs, infos);
  }

  Status finish_jpeg_frame(std::size_t worker, Pending& item) {
    item.frame->frame.image = split_view(item.frame->frame.image, options.split);
    return mark_ready(worker, *item.frame);
  }
#else
  Status prepare_device() const {
    return make_error(StatusCode::kUnsupported, "the GPU path needs CUDA, and this build of fovea has none");
  }
  Status upload(std::size_t, const ImageView&, SourceFrame&, Held&) const {
    return prepare_device();
  }
  Status allocate_for_jpeg(std::size_t, Pending&, std::shared_ptr<Held>) const {
    return prepare_device();
  }
  void decode_jpegs(std::size_t, const std::vector<Pending*>&) const {}
#endif

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
      // The next image may now pass the budget. reserve() reads next_push under the budget's mutex
      // too: taking it here orders this wake-up after any check in progress, which would otherwise
      // miss both the new value and the notification. The frame about to be pushed counts as
      // downstream from here (reserve() waits for those to be released).
      {
        const std::lock_guard budget_lock(budget->mutex);
        if (next.frame) {
          // Every frame's owner is a Held: the decode threads made it so.
          std::static_pointer_cast<Held>(next.frame->frame.owner)->downstream = true;
          ++budget->downstream;
        }
      }
      budget->changed.notify_all();
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
  const auto [jpeg_threads, cpu_threads] = state.plan_threads();
  const int workers = jpeg_threads + cpu_threads;
  state.worker_count = workers;
  state.workers_running = workers;
  state.threads_started = std::chrono::steady_clock::now();
  // Each thread may run a group ahead of the pusher, and one more behind it.
  const auto jpeg_batch = static_cast<std::size_t>(state.options.jpeg_batch);
  state.window =
      2 * (static_cast<std::size_t>(jpeg_threads) * jpeg_batch + static_cast<std::size_t>(cpu_threads)) + 4;
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
  for (std::size_t k = 0; k < State::kWorkKinds; ++k) {
    const std::int64_t ns = state.work_ns[k].load();
    if (ns > 0) report.work.push_back({std::string(State::kWorkNames[k]), static_cast<double>(ns) * 1e-9});
  }
  report.threads = state.worker_count.load();
  if (report.threads > 0) {
    const std::int64_t span_ns = state.threads_span_ns.load();
    report.threads_span_s = static_cast<double>(span_ns >= 0 ? span_ns : state.threads_running_ns()) * 1e-9;
  }
  return {report};
}

}  // namespace fovea::pipeline
