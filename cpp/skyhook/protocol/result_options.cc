#include "skyhook/protocol/result_options.h"

#include <string>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;

arrow::Result<bool> DecodeFlag(const HeaderReader& header, const char* name) {
  ARROW_ASSIGN_OR_RAISE(auto value, header.Int64(name));
  if (!value) return false;
  if (*value != 0 && *value != 1) {
    return Error(ErrorCode::kInvalidRequest, name, " must be 0 or 1");
  }
  return *value == 1;
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
      return Error(ErrorCode::kInvalidRequest, "batch_size ", *batch_size, " is outside 1..",
                   kMaxBatchSize);
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
  ARROW_ASSIGN_OR_RAISE(auto start_row, header.Int64("start_row"));
  if (start_row) {
    if (*start_row < 0) return Error(ErrorCode::kInvalidRequest, "start_row must not be negative");
    options.start_row = *start_row;
  }
  ARROW_ASSIGN_OR_RAISE(options.within_object, DecodeFlag(header, "reply_within_object"));
  ARROW_ASSIGN_OR_RAISE(auto bytes_before, header.Int64("reply_bytes_before"));
  if (bytes_before) {
    if (*bytes_before < 0) {
      return Error(ErrorCode::kInvalidRequest, "reply_bytes_before must not be negative");
    }
    options.bytes_before = *bytes_before;
  }
  ARROW_ASSIGN_OR_RAISE(options.delta_sorted_integers, DecodeFlag(header, "delta_sorted_integers"));
  return options;
}

}  // namespace skyhook
