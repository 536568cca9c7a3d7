#include "pipeline/buffer_plan.h"

#include <cstring>

#include <fmt/format.h>

#include "core/check.h"

#if defined(FOVEA_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace fovea::pipeline {

namespace {

std::string describe(const ImageBufferSpec& spec) {
  return fmt::format("{} {}x{} x{}", pixel_format_name(spec.format), spec.width, spec.height,
                     spec.count == 0 ? std::string("batch") : std::to_string(spec.count));
}

template <typename Spec>
Status declare(std::map<std::string, Spec>& specs, const std::string& name, const Spec& spec,
               const std::string& what) {
  const auto [it, inserted] = specs.emplace(name, spec);
  if (!inserted && !(it->second == spec)) {
    return make_error(StatusCode::kInternal, "buffer '", name, "' declared twice with different specs (",
                      what, ")");
  }
  return Status::ok();
}

MemoryKind memory_of(BufferPlace place, bool gpu) {
  if (!gpu) return MemoryKind::kHost;
  return place == BufferPlace::kDevice ? MemoryKind::kDevice : MemoryKind::kPinnedHost;
}

Status zero(void* data, std::size_t bytes, MemoryKind memory) {
  if (memory != MemoryKind::kDevice) {
    std::memset(data, 0, bytes);
    return Status::ok();
  }
#if defined(FOVEA_HAVE_CUDA)
  FOVEA_CUDA_TRY(cudaMemset(data, 0, bytes));
#endif
  return Status::ok();
}

#if defined(FOVEA_HAVE_CUDA)
Result<std::shared_ptr<void>> make_event(unsigned flags) {
  cudaEvent_t event = nullptr;
  FOVEA_CUDA_TRY(cudaEventCreateWithFlags(&event, flags));
  return std::shared_ptr<void>(event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
}

Status create_events(SlotEvents& events, int gpu_stages) {
  FOVEA_ASSIGN_OR_RETURN(events.ready, make_event(cudaEventDisableTiming));
  for (int s = 0; s < gpu_stages; ++s) {
    FOVEA_ASSIGN_OR_RETURN(std::shared_ptr<void> start, make_event(cudaEventDefault));
    FOVEA_ASSIGN_OR_RETURN(std::shared_ptr<void> end, make_event(cudaEventDefault));
    events.stage_start.push_back(std::move(start));
    events.stage_end.push_back(std::move(end));
  }
  events.stage_used.assign(static_cast<std::size_t>(gpu_stages), false);
  return Status::ok();
}
#endif

}  // namespace

Status BufferPlan::images(const std::string& name, const ImageBufferSpec& spec) {
  if (spec.width < 1 || spec.height < 1 || spec.count < 0) {
    return make_error(StatusCode::kInternal, "buffer '", name, "': ", describe(spec), " is not a size");
  }
  return declare(images_, name, spec,
                 describe(spec) + " and " + describe(images_.count(name) ? images_.at(name) : spec));
}

Status BufferPlan::bytes(const std::string& name, const ByteBufferSpec& spec) {
  return declare(bytes_, name, spec, fmt::format("{} bytes", spec.bytes));
}

const std::vector<ImageView>& SlotBuffers::images(const std::string& name) const {
  const auto it = images_.find(name);
  FOVEA_CHECK_MSG(it != images_.end(), "an op reads an image buffer it did not declare");
  return it->second;
}

void* SlotBuffers::bytes(const std::string& name) const {
  const auto it = bytes_.find(name);
  FOVEA_CHECK_MSG(it != bytes_.end(), "an op reads a byte buffer it did not declare");
  return it->second;
}

Result<std::vector<std::unique_ptr<SlotBuffers>>> allocate_slots(const BufferPlan& plan, int batch_size,
                                                                 int slots, bool gpu, int gpu_stages,
                                                                 std::vector<BufferPool>& pools) {
  std::vector<std::unique_ptr<SlotBuffers>> buffers;
  for (int s = 0; s < slots; ++s) buffers.push_back(std::make_unique<SlotBuffers>());
  const auto count = static_cast<std::size_t>(slots);
  // One pool per buffer, one block per slot: the pools stay as the slots' owners of record.
  pools.reserve(pools.size() + plan.image_buffers().size() + plan.byte_buffers().size());
  for (const auto& [name, spec] : plan.byte_buffers()) {
    const MemoryKind memory = memory_of(spec.place, gpu);
    FOVEA_ASSIGN_OR_RETURN(BufferPool pool,
                           BufferPool::create(name, memory, std::max<std::size_t>(spec.bytes, 1), count));
    pools.push_back(std::move(pool));
    for (auto& slot : buffers) {
      FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, pools.back().acquire());
      if (spec.zeroed) FOVEA_TRY(zero(block.data(), block.size(), memory));
      slot->add_bytes(name, block.data());
      slot->keep(std::move(block));
    }
  }
  for (const auto& [name, spec] : plan.image_buffers()) {
    const MemoryKind memory = memory_of(spec.place, gpu);
    const int images = spec.count == 0 ? batch_size : spec.count;
    FOVEA_ASSIGN_OR_RETURN(ImageAllocation allocation,
                           plan_image_allocation(spec.format, spec.width, spec.height));
    FOVEA_ASSIGN_OR_RETURN(
        BufferPool pool,
        BufferPool::create(name, memory, allocation.total_bytes * static_cast<std::size_t>(images), count));
    pools.push_back(std::move(pool));
    for (auto& slot : buffers) {
      FOVEA_ASSIGN_OR_RETURN(PooledBuffer block, pools.back().acquire());
      std::vector<ImageView> views;
      for (int i = 0; i < images; ++i) {
        void* base =
            static_cast<std::byte*>(block.data()) + allocation.total_bytes * static_cast<std::size_t>(i);
        views.push_back(image_view_in(base, allocation, spec.format, spec.width, spec.height, memory));
      }
      slot->add_images(name, std::move(views));
      slot->keep(std::move(block));
    }
  }
#if defined(FOVEA_HAVE_CUDA)
  if (gpu) {
    for (auto& slot : buffers) FOVEA_TRY(create_events(slot->events, gpu_stages));
    // The zeroing cudaMemsets run on the legacy stream, which the stages' non-blocking streams
    // are not ordered after.
    FOVEA_CUDA_TRY(cudaDeviceSynchronize());
  }
#else
  static_cast<void>(gpu_stages);
#endif
  return buffers;
}

}  // namespace fovea::pipeline
