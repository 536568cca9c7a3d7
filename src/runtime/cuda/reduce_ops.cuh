// The accumulators of the reduction kernels (reduce.cu, pool.cu through it, softmax.cu). Each op is a
// functor with
//   Acc                          the running state (a plain aggregate: it lives in shared memory),
//   init()                       the state of an empty reduction,
//   map(x, j)                    the state of one element x (in its compute type) at reduced index j,
//   operator()(a, b)             the combination of two states: associative and commutative, so any
//                                thread and tree order gives the CPU's answer (ties broken by index),
//   finish(acc, count)           the output value.
// Floating types accumulate in their compute type (float for float16 and float32, double for
// float64), integers in int64 like the CPU reference, whose result is then narrowed the same way.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda/std/limits>

#include "runtime/cuda/kernel_util.cuh"
#include "runtime/ops/reduce_util.h"

namespace fovea::runtime::cuda {

template <typename T>
using AccumulatorOf = std::conditional_t<std::is_integral_v<T>, std::int64_t, ComputeType<T>>;

template <typename C>
__device__ __forceinline__ C exp_of(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return expf(x);
  } else {
    return exp(x);
  }
}

template <typename C>
__device__ __forceinline__ C log_of(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return logf(x);
  } else {
    return log(x);
  }
}

template <typename C>
__device__ __forceinline__ C sqrt_of(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return sqrtf(x);
  } else {
    return sqrt(x);
  }
}

// Sum, Mean, L1, L2, LogSum and SumSquare: a sum of mapped elements, finished per reduction.
template <typename A>
struct AdditiveOp {
  using Acc = A;
  ops::Reduction reduction;

  __device__ A init() const { return A(0); }
  __device__ A map(A x, std::int64_t) const {
    switch (reduction) {
      case ops::Reduction::kL1: return x < A(0) ? -x : x;
      case ops::Reduction::kL2:
      case ops::Reduction::kSumSquare: return x * x;
      default: return x;
    }
  }
  __device__ A operator()(A a, A b) const { return a + b; }
  __device__ A finish(A a, std::int64_t count) const {
    if constexpr (std::is_floating_point_v<A>) {
      switch (reduction) {
        case ops::Reduction::kMean: return a / static_cast<A>(count);
        case ops::Reduction::kL2: return sqrt_of(a);
        case ops::Reduction::kLogSum: return log_of(a);
        default: return a;
      }
    } else {
      return reduction == ops::Reduction::kMean ? (count == 0 ? A(0) : a / count) : a;
    }
  }
};

// Max and Min. NaN handling follows std::max(acc, x) / std::min(acc, x) as the CPU applies them.
template <typename A>
struct ExtremeOp {
  using Acc = A;
  bool is_max;

  __device__ A init() const {
    if constexpr (std::is_floating_point_v<A>) {
      return is_max ? -::cuda::std::numeric_limits<A>::infinity()
                    : ::cuda::std::numeric_limits<A>::infinity();
    } else {
      return is_max ? ::cuda::std::numeric_limits<A>::lowest() : ::cuda::std::numeric_limits<A>::max();
    }
  }
  __device__ A map(A x, std::int64_t) const { return x; }
  __device__ A operator()(A a, A b) const {
    if (is_max) return a < b ? b : a;
    return b < a ? b : a;
  }
  __device__ A finish(A a, std::int64_t) const { return a; }
};

template <typename A>
struct ProductOp {
  using Acc = A;
  __device__ A init() const { return A(1); }
  __device__ A map(A x, std::int64_t) const { return x; }
  __device__ A operator()(A a, A b) const { return a * b; }
  __device__ A finish(A a, std::int64_t) const { return a; }
};

// A running maximum and the sum of exp(x - max) over the elements seen: log-sum-exp and softmax in
// one pass without overflow (the CPU sums exp(x) in double, whose range float lacks).
template <typename C>
struct MaxSum {
  C max;
  C sum;
};

template <typename C>
struct LogSumExpOp {
  using Acc = MaxSum<C>;

  __device__ Acc init() const { return {-::cuda::std::numeric_limits<C>::infinity(), C(0)}; }
  __device__ Acc map(C x, std::int64_t) const { return {x, C(1)}; }
  __device__ Acc operator()(Acc a, Acc b) const {
    const C max = a.max < b.max ? b.max : a.max;
    return {max, rescaled(a, max) + rescaled(b, max)};
  }
  __device__ C finish(Acc a, std::int64_t) const { return a.max + log_of(a.sum); }

 private:
  // The part's sum relative to `max`; equal maxima (infinities included) need no exp.
  __device__ static C rescaled(Acc part, C max) {
    return part.max == max ? part.sum : part.sum * exp_of(part.max - max);
  }
};

template <typename C>
struct ValueIndex {
  C value;
  std::int64_t index;
};

// ArgMax and ArgMin: the extreme value, ties to the first index (the last with select_last_index).
template <typename C>
struct ArgOp {
  using Acc = ValueIndex<C>;
  bool is_max;
  bool last;

  __device__ Acc init() const {
    const C worst = ExtremeOp<C>{is_max}.init();
    return {worst, last ? std::int64_t{-1} : ::cuda::std::numeric_limits<std::int64_t>::max()};
  }
  __device__ Acc map(C x, std::int64_t j) const { return {x, j}; }
  __device__ Acc operator()(Acc a, Acc b) const { return better(b, a) ? b : a; }
  // No element beat the initial state only when all are NaN: the CPU then keeps index 0.
  __device__ std::int64_t finish(Acc a, std::int64_t count) const {
    return a.index >= 0 && a.index < count ? a.index : 0;
  }

 private:
  __device__ bool better(Acc p, Acc q) const {
    if (p.value == q.value) return last ? p.index > q.index : p.index < q.index;
    return is_max ? p.value > q.value : p.value < q.value;
  }
};

}  // namespace fovea::runtime::cuda
