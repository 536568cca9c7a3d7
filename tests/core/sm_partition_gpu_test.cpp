// The compute partition (core/sm_partition.h) on a real GPU: work on compute streams, launched
// directly or through a graph captured on one, stays on the partition's SMs; ordinary streams use
// them all.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/cuda_raii.h"
#include "core/sm_ids.h"
#include "core/sm_partition.h"

namespace fovea {
namespace {

constexpr int kReserved = 16;
constexpr int kMaxSmIds = 1024;  // %smid is below the SM count; room to spare

class SmPartitionGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&used_), kMaxSmIds * sizeof(int)), cudaSuccess);
  }
  void TearDown() override {
    if (used_ != nullptr) cudaFree(used_);
  }

  // The SMs `enqueue` put work on.
  template <typename Enqueue>
  int sms_used(cudaStream_t stream, Enqueue enqueue) {
    EXPECT_EQ(cudaMemsetAsync(used_, 0, kMaxSmIds * sizeof(int), stream), cudaSuccess);
    enqueue(stream);
    std::vector<int> host(kMaxSmIds);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), used_, kMaxSmIds * sizeof(int), cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return static_cast<int>(std::count(host.begin(), host.end(), 1));
  }

  int* used_ = nullptr;
};

TEST_F(SmPartitionGpu, ComputeStreamsAndTheirGraphsKeepTheReservedSmsFree) {
  const Result<SmPartition> partition = reserve_sms(0, kReserved);
  ASSERT_TRUE(partition.is_ok()) << partition.status().to_string();
  ASSERT_GT(partition->compute_sms, 0);
  ASSERT_LE(partition->compute_sms, partition->device_sms - kReserved);
  const int blocks = partition->device_sms * 8;
  auto mark = [&](cudaStream_t s) { ASSERT_TRUE(testing::launch_mark_sms(s, used_, blocks).is_ok()); };

  Result<CudaStream> any = CudaStream::create();
  ASSERT_TRUE(any.is_ok());
  EXPECT_GT(sms_used(any->get(), mark), partition->compute_sms) << "ordinary streams use every SM";

  Result<CudaStream> compute =
      CudaStream::create(CudaStream::Priority::kNormal, CudaStream::Placement::kComputeSms);
  ASSERT_TRUE(compute.is_ok()) << compute.status().to_string();
  EXPECT_LE(sms_used(compute->get(), mark), partition->compute_sms);

  // A graph captured on a compute stream, as the CUDA executor captures a model.
  Result<CudaGraph> graph = CudaGraph::capture(
      compute->get(), [&] { return testing::launch_mark_sms(compute->get(), used_, blocks); });
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_LE(sms_used(compute->get(), [&](cudaStream_t s) { ASSERT_TRUE(graph->launch(s).is_ok()); }),
            partition->compute_sms);
  EXPECT_EQ(current_sm_partition(0).compute_sms, partition->compute_sms);
}

TEST_F(SmPartitionGpu, TheReserveIsCheckedAndSetOnce) {
  const int sms = current_sm_partition(0).device_sms;
  const Result<SmPartition> all = reserve_sms(0, sms);
  ASSERT_FALSE(all.is_ok());
  EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(all.status().message().find("SMs"), std::string::npos) << all.status().message();

  ASSERT_TRUE(reserve_sms(0, kReserved).is_ok());
  EXPECT_TRUE(reserve_sms(0, kReserved).is_ok()) << "asking again for the same is fine";
  const Result<SmPartition> other = reserve_sms(0, kReserved + 8);
  ASSERT_FALSE(other.is_ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fovea
