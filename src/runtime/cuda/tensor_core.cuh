// The pieces of Ampere/Hopper tensor-core code that fovea's own kernels share: shared memory
// addresses for PTX, asynchronous copies into shared memory, ldmatrix (8x8 tiles of 16-bit elements from
// shared memory into the fragment layout mma.sync takes, transposed or not), the float16 mma.sync, and
// Hopper's warpgroup instructions (wgmma, sm_90a only). The fragment layouts are PTX ISA's "Matrix Fragments
// for mma.m16n8k16" (and k32 for int8, which int8_conv.cu issues itself); a wgmma accumulator of m64nN
// repeats mma's m16n8 accumulator layout over N / 8 columns, warp w of the warpgroup holding rows 16w to 16w
// + 15.
#pragma once

#include <cstdint>

namespace fovea::runtime::cuda {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 tiles: lanes 8m..8m+7 give the 16-byte rows of tile m, and tile m lands in r[m] of
// every lane (lane i holds row i / 4, elements 2 (i % 4) and 2 (i % 4) + 1).
__device__ __forceinline__ void load_matrices(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// The same, each tile transposed (lane i holds rows 2 (i % 4) and 2 (i % 4) + 1 of column i / 4):
// a row-major [k][n] tile read as mma's "col" B operand.
__device__ __forceinline__ void load_matrices_transposed(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Ampere's asynchronous copies (cp.async): 16 bytes from global to shared memory, or 16 zeros where `valid`
// is false (the source is then not read; it only has to be a valid address).
__device__ __forceinline__ void copy_chunk(std::uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// C (16x8, float) += A (16x16, float16, row-major fragment) x B (16x8, float16, column fragment).
__device__ __forceinline__ void mma_f16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                        std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Hopper's warpgroup products read both operands from shared memory through a descriptor. They
// assemble only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); in the other device passes of a build (an
// architecture list, or nvcc's own generic pass) these helpers trap instead, and the kernels that
// use them are never launched there (int8_conv.cu's warpgroup_int8_conv_runs).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
#define FOVEA_SM90A_ASM(...) asm volatile(__VA_ARGS__)
#else
#define FOVEA_SM90A_ASM(...) __trap()
#endif

// The descriptor of a K-major operand tile whose rows are 64 bytes, stored with the 64-byte
// swizzle (16-byte chunk c of row r at chunk c ^ ((r / 2) % 4); the tile 512-byte aligned): 8-row
// groups 512 bytes apart (the stride offset); the leading offset is unused when an instruction's
// K (32 bytes of int8) lies within one swizzled row. Starting 32 bytes into the rows selects their
// second half: the swizzle applies to the address bits, so the hardware finds the chunks where
// the loads put them.
__device__ __forceinline__ std::uint64_t swizzled64_descriptor(const void* tile) {
  constexpr std::uint64_t kLeadingOffset = 1, kStrideOffset = 512 >> 4, kSwizzle64Bytes = 2;
  return ((shared_address(tile) & 0x3FFFF) >> 4) | (kLeadingOffset << 16) | (kStrideOffset << 32) |
         (kSwizzle64Bytes << 62);
}

// Orders the accumulators' earlier register accesses before the next wgmma reads them.
__device__ __forceinline__ void warpgroup_fence() {
  FOVEA_SM90A_ASM("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void warpgroup_commit() {
  FOVEA_SM90A_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most kPending committed groups of this warpgroup's products are in flight.
template <int kPending>
__device__ __forceinline__ void warpgroup_wait() {
  FOVEA_SM90A_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Makes this thread's completed shared memory writes (cp.async's included) visible to the async
// proxy through which wgmma reads its operands.
__device__ __forceinline__ void fence_shared_for_async_proxy() {
  FOVEA_SM90A_ASM("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Keeps the compiler from moving the accumulators' other definitions (their zeroing, say) into a
// run of wgmma on them, which ptxas would serialize (its warning C7515).
template <int kCount>
__device__ __forceinline__ void warpgroup_fence_accumulators(int* d) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+r"(d[i])::"memory");  // emits nothing
}

#define FOVEA_ACC8(d, i)                                                                      \
  "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), \
      "+r"(d[i + 6]), "+r"(d[i + 7])

// D (64 x 64, int32) = A (64 x 32, int8, K-major) x B (32 x 64, int8, K-major), plus D where
// `accumulate`; the warpgroup's accumulator fragment in d (32 per thread). The first product of a
// tile starts D itself rather than adding to zeros: zeroing the accumulators in a loop whose
// products stay in flight across iterations makes ptxas serialize every wgmma (C7515).
__device__ __forceinline__ void warpgroup_mma_s8_n64(int* d, std::uint64_t a, std::uint64_t b,
                                                     bool accumulate) {
  FOVEA_SM90A_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p;\n}\n"
      : FOVEA_ACC8(d, 0), FOVEA_ACC8(d, 8), FOVEA_ACC8(d, 16), FOVEA_ACC8(d, 24)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// The same for 128 columns (64 accumulators per thread).
__device__ __forceinline__ void warpgroup_mma_s8_n128(int* d, std::uint64_t a, std::uint64_t b,
                                                      bool accumulate) {
  FOVEA_SM90A_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p;\n}\n"
      : FOVEA_ACC8(d, 0), FOVEA_ACC8(d, 8), FOVEA_ACC8(d, 16), FOVEA_ACC8(d, 24), FOVEA_ACC8(d, 32),
        FOVEA_ACC8(d, 40), FOVEA_ACC8(d, 48), FOVEA_ACC8(d, 56)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

#undef FOVEA_ACC8
#undef FOVEA_SM90A_ASM

}  // namespace fovea::runtime::cuda
