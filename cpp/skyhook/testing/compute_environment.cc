// Registers Arrow's compute functions before the unit tests run, as RunMethod
// does before a storage method runs: without it, kernels such as min_max are
// not found.
#include <arrow/compute/initialize.h>
#include <gtest/gtest.h>

namespace {

class ComputeEnvironment : public testing::Environment {
 public:
  void SetUp() override { ASSERT_TRUE(arrow::compute::Initialize().ok()); }
};

const testing::Environment* const kEnvironment =
    testing::AddGlobalTestEnvironment(new ComputeEnvironment);

}  // namespace
