// The gradient buckets (dist/buckets.hpp): plan_buckets cuts a flat gradient into buckets from the last layers to
// the first, only where a layer starts. No communication: linked into test_dist_ring_allreduce, whose strategies
// all-reduce these buckets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/dist/buckets.hpp"

namespace {
using namespace sinew;

// Bucket layout: reverse layer order, cut on layer starts only.
TEST(bucket_layout, buckets_run_from_the_last_layers_to_the_first_and_cut_only_on_layer_starts) {
  const std::size_t starts[] = {0, 48, 1664, 1712};  // four layers; total 1728 floats
  const auto buckets = dist::plan_buckets(starts, 1728, 64);
  // From the end: [1712, 1728) has 16 < 64 floats, so it takes the layer before too: [1664, 1728); then the
  // 1616-float layer alone; then the first two layers, the remainder, smaller than 64 floats.
  const std::vector<dist::Bucket> expected = {{1664, 1728}, {48, 1664}, {0, 48}};
  EXPECT_EQ(buckets, expected);
}

TEST(bucket_layout, a_zero_bucket_size_or_a_large_one_gives_a_single_bucket) {
  const std::size_t starts[] = {0, 48, 1664};
  EXPECT_EQ(dist::plan_buckets(starts, 1700, 0), (std::vector<dist::Bucket>{{0, 1700}}));
  EXPECT_EQ(dist::plan_buckets(starts, 1700, 1u << 20), (std::vector<dist::Bucket>{{0, 1700}}));
  EXPECT_EQ(dist::plan_buckets({}, 1700, 64), (std::vector<dist::Bucket>{{0, 1700}})) << "no layers: one layer";
}

TEST(bucket_layout, zero_gradients_give_no_bucket_and_every_layer_can_be_its_own) {
  EXPECT_TRUE(dist::plan_buckets({}, 0, 64).empty());
  const std::size_t starts[] = {0, 16, 32};
  EXPECT_EQ(dist::plan_buckets(starts, 48, 1), (std::vector<dist::Bucket>{{32, 48}, {16, 32}, {0, 16}}));
}

TEST(bucket_layout, layer_starts_out_of_order_are_an_error_naming_the_fix) {
  const std::size_t starts[] = {0, 64, 32};
  try {
    dist::plan_buckets(starts, 100, 16);
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("layer start 2 (32) is not ascending"), std::string::npos) << e.what();
  }
}

}  // namespace
