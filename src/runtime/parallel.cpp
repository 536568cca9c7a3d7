#include "runtime/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace fovea::runtime {

namespace {

// A fixed set of workers that each take chunks of the current job from a shared counter. One job
// runs at a time (callers serialize on job_mutex_); nested parallel_for calls run inline.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 1; i < threads; ++i) {
      workers_.emplace_back([this] { work(); });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) {
      t.join();
    }
  }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& chunk_body) {
    if (inside_job_ || workers_.empty()) {
      for (std::int64_t c = 0; c < chunks; ++c) chunk_body(c);
      return;
    }
    std::lock_guard job_lock(job_mutex_);
    {
      std::lock_guard lock(mutex_);
      body_ = &chunk_body;
      chunks_ = chunks;
      next_ = 0;
      done_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    take_chunks();
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return done_ == chunks_; });
    body_ = nullptr;
  }

 private:
  void take_chunks() {
    inside_job_ = true;
    for (;;) {
      std::int64_t chunk;
      const std::function<void(std::int64_t)>* body;
      {
        std::lock_guard lock(mutex_);
        if (body_ == nullptr || next_ >= chunks_) break;
        chunk = next_++;
        body = body_;
      }
      (*body)(chunk);
      std::lock_guard lock(mutex_);
      if (++done_ == chunks_) finished_.notify_all();
    }
    inside_job_ = false;
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      take_chunks();
    }
  }

  static thread_local bool inside_job_;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  const std::function<void(std::int64_t)>* body_ = nullptr;
  std::int64_t chunks_ = 0;
  std::int64_t next_ = 0;
  std::int64_t done_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

thread_local bool WorkerPool::inside_job_ = false;

int configured_threads() {
  if (const char* env = std::getenv("FOVEA_CPU_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

WorkerPool& pool() {
  static WorkerPool instance(configured_threads());
  return instance;
}

}  // namespace

int cpu_thread_count() {
  return pool().size();
}

void parallel_for(std::int64_t count, std::int64_t min_chunk,
                  const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  const std::int64_t threads = cpu_thread_count();
  if (count <= min_chunk || threads == 1) {
    body(0, count);
    return;
  }
  // A few chunks per thread balance uneven work without making chunks tiny.
  const std::int64_t chunks =
      std::min<std::int64_t>(threads * 4, (count + min_chunk - 1) / std::max<std::int64_t>(min_chunk, 1));
  const std::int64_t per_chunk = (count + chunks - 1) / chunks;
  pool().run(chunks, [&](std::int64_t c) {
    const std::int64_t begin = c * per_chunk;
    const std::int64_t end = std::min(count, begin + per_chunk);
    if (begin < end) body(begin, end);
  });
}

}  // namespace fovea::runtime
