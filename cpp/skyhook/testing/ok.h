// The value of a Result a test expects to succeed; its status is the failure message if not.
#pragma once

#include <utility>

#include <arrow/result.h>
#include <gtest/gtest.h>

namespace skyhook {

template <typename T>
T Ok(arrow::Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return std::move(result).ValueOrDie();
}

}  // namespace skyhook
