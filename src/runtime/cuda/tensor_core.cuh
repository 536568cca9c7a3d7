// The pieces of Ampere/Hopper warp-level tensor-core code that fovea's own kernels share: shared
// memory addresses for PTX, ldmatrix (8x8 tiles of 16-bit elements from shared memory into the
// fragment layout mma.sync takes, transposed or not) and the float16 mma.sync. The fragment
// layouts are PTX ISA's "Matrix Fragments for mma.m16n8k16" (and k32 for int8, which int8_conv.cu
// issues itself).
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

// C (16x8, float) += A (16x16, float16, row-major fragment) x B (16x8, float16, column fragment).
__device__ __forceinline__ void mma_f16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                        std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace fovea::runtime::cuda
