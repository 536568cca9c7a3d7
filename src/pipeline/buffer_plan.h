// Buffers by declaration: while a flow is built, each op declares the named buffers it needs into
// one BufferPlan; the flow then allocates the union once per slot (allocate_slots) and the ops find
// their buffers in the slot a batch holds, by name. No op allocates while the flow runs, and the
// number of slots bounds the batches in flight.
//
// Memory kinds are the GPU path's: kDevice (the ops' work), kPinnedHost (what the host reads back:
// results, encoder input). On the CPU path every buffer is plain host memory.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/image.h"
#include "core/pool.h"
#include "core/status.h"

namespace fovea::pipeline {

enum class BufferPlace { kDevice, kPinnedHost };

struct ImageBufferSpec {
  PixelFormat format = PixelFormat::kRGB8;
  int width = 0;
  int height = 0;
  BufferPlace place = BufferPlace::kDevice;
  int count = 0;  // images per slot; 0: one per frame of the batch
  bool operator==(const ImageBufferSpec&) const = default;
};

struct ByteBufferSpec {
  std::size_t bytes = 0;
  BufferPlace place = BufferPlace::kDevice;
  bool zeroed = false;  // zero-filled once at allocation (e.g. a tensor whose tail a partial batch leaves)
  bool operator==(const ByteBufferSpec&) const = default;
};

class BufferPlan {
 public:
  // Declaring the same name twice is fine when the specs agree (two ops sharing a buffer); a
  // different spec under the same name is an error naming both ops' view of it.
  Status images(const std::string& name, const ImageBufferSpec& spec);
  Status bytes(const std::string& name, const ByteBufferSpec& spec);

  const std::map<std::string, ImageBufferSpec>& image_buffers() const { return images_; }
  const std::map<std::string, ByteBufferSpec>& byte_buffers() const { return bytes_; }

 private:
  std::map<std::string, ImageBufferSpec> images_;
  std::map<std::string, ByteBufferSpec> bytes_;
};

// GPU events of one slot: the batch's ready event (the end of the last GPU work queued on it) and,
// per GPU stage, a start/end pair from which the stage's latency is read once the batch is done.
struct SlotEvents {
  std::shared_ptr<void> ready;                     // cudaEvent_t, owned; null on the CPU path
  std::vector<std::shared_ptr<void>> stage_start;  // cudaEvent_t with timing, one per GPU stage
  std::vector<std::shared_ptr<void>> stage_end;
  std::vector<bool> stage_used;  // whether the pair was recorded for the batch in the slot now
};

// One slot's buffers, fixed addresses for the run.
class SlotBuffers {
 public:
  // The images declared under `name`: batch size of them (or the declared count). FOVEA_CHECKs that
  // the name was declared: an op reading a buffer it did not declare is a programming error.
  const std::vector<ImageView>& images(const std::string& name) const;
  void* bytes(const std::string& name) const;
  bool has_images(const std::string& name) const { return images_.count(name) > 0; }

  SlotEvents events;

  // Filled by allocate_slots.
  void add_images(const std::string& name, std::vector<ImageView> views) { images_[name] = std::move(views); }
  void add_bytes(const std::string& name, void* data) { bytes_[name] = data; }
  void keep(PooledBuffer block) { blocks_.push_back(std::move(block)); }

 private:
  std::vector<PooledBuffer> blocks_;
  std::map<std::string, std::vector<ImageView>> images_;
  std::map<std::string, void*> bytes_;
};

// Allocates `slots` slots of `plan` for batches of `batch_size` frames, from pools appended to
// `pools` (which must outlive the slots), with `gpu_stages` timing event pairs each on the GPU path.
// Errors name the buffer that could not be allocated.
Result<std::vector<std::unique_ptr<SlotBuffers>>> allocate_slots(const BufferPlan& plan, int batch_size,
                                                                 int slots, bool gpu, int gpu_stages,
                                                                 std::vector<BufferPool>& pools);

}  // namespace fovea::pipeline
