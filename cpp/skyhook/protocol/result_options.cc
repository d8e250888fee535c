#include "skyhook/protocol/result_options.h"

#include <cstdlib>
#include <string>

#include "skyhook/protocol/error.h"

namespace skyhook {
namespace {

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;

int64_t FromEnvironment(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(value, &end, 10);
  return (end && *end == '\0' && parsed >= 0) ? parsed : fallback;
}

arrow::Result<arrow::Compression::type> DecodeCompression(const HeaderReader& header) {
  ARROW_ASSIGN_OR_RAISE(auto name, header.String("compression"));
  if (!name || *name == "none") return arrow::Compression::UNCOMPRESSED;
  if (*name == "lz4") return arrow::Compression::LZ4_FRAME;
  if (*name == "zstd") return arrow::Compression::ZSTD;
  return Error(ErrorCode::kInvalidRequest, "unknown compression '", *name,
               "' (expected none, lz4 or zstd)");
}

}  // namespace

arrow::Result<ResultOptions> ResultOptions::Decode(const HeaderReader& header) {
  ResultOptions options;
  ARROW_ASSIGN_OR_RAISE(options.compression, DecodeCompression(header));
  ARROW_ASSIGN_OR_RAISE(auto batch_size, header.Int64("batch_size"));
  if (batch_size) {
    if (*batch_size < 1 || *batch_size > kMaxBatchSize) {
      return Error(ErrorCode::kInvalidRequest, "batch_size ", *batch_size,
                   " is outside 1..", kMaxBatchSize);
    }
    options.batch_size = *batch_size;
  }
  ARROW_ASSIGN_OR_RAISE(auto max_result_bytes, header.Int64("max_result_bytes"));
  if (max_result_bytes) {
    if (*max_result_bytes < 1) {
      return Error(ErrorCode::kInvalidRequest, "max_result_bytes must be positive");
    }
    options.max_result_bytes = *max_result_bytes;
  }
  return options;
}

arrow::Result<PushbackLimits> PushbackLimits::Decode(const HeaderReader& header) {
  static const int64_t default_in_flight = FromEnvironment("SKYHOOK_MAX_IN_FLIGHT", 64);
  static const int64_t default_slice_ns =
      FromEnvironment("SKYHOOK_MAX_SLICE_CPU_MS", 0) * 1000000;
  PushbackLimits limits{default_in_flight, default_slice_ns};
  ARROW_ASSIGN_OR_RAISE(auto in_flight, header.Int64("max_in_flight"));
  ARROW_ASSIGN_OR_RAISE(auto slice_ns, header.Int64("max_slice_cpu_ns"));
  if ((in_flight && *in_flight < 0) || (slice_ns && *slice_ns < 0)) {
    return Error(ErrorCode::kInvalidRequest, "push-back limits must not be negative");
  }
  if (in_flight) limits.max_in_flight = *in_flight;
  if (slice_ns) limits.max_slice_cpu_ns = *slice_ns;
  return limits;
}

}  // namespace skyhook
