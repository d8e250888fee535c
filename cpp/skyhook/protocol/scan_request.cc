#include "skyhook/protocol/scan_request.h"

#include <arrow/engine/substrait/serde.h>

#include "skyhook/protocol/error.h"
#include "skyhook/protocol/frame.h"

namespace skyhook {
namespace {

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;

arrow::Result<std::optional<arrow::engine::BoundExpressions>> DecodeExpressions(
    const HeaderReader& header, const std::string& field) {
  ARROW_ASSIGN_OR_RAISE(auto serialized, header.Binary(field));
  if (!serialized) return std::nullopt;
  auto expressions = arrow::engine::DeserializeExpressions(**serialized);
  if (!expressions.ok()) {
    return Error(ErrorCode::kInvalidRequest, "cannot decode the Substrait ", field, ": ",
                 expressions.status().message());
  }
  return std::move(*expressions);
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

arrow::Result<ScanRequest> ScanRequest::Decode(
    const std::shared_ptr<arrow::Buffer>& message) {
  ARROW_ASSIGN_OR_RAISE(auto frame, DecodeFrame(message, kRequestMagic));
  HeaderReader header(frame.header);
  ScanRequest request;
  ARROW_ASSIGN_OR_RAISE(request.filter, DecodeExpressions(header, "filter"));
  ARROW_ASSIGN_OR_RAISE(request.projection, DecodeExpressions(header, "projection"));
  if (request.filter) {
    const auto& named = request.filter->named_expressions;
    if (named.size() != 1 || !named[0].expression.type()->Equals(*arrow::boolean())) {
      return Error(ErrorCode::kInvalidRequest,
                   "the filter must be exactly one boolean expression");
    }
  }
  ARROW_ASSIGN_OR_RAISE(request.compression, DecodeCompression(header));
  ARROW_ASSIGN_OR_RAISE(auto batch_size, header.Int64("batch_size"));
  if (batch_size) {
    if (*batch_size < 1 || *batch_size > kMaxBatchSize) {
      return Error(ErrorCode::kInvalidRequest, "batch_size ", *batch_size,
                   " is outside 1..", kMaxBatchSize);
    }
    request.batch_size = *batch_size;
  }
  ARROW_ASSIGN_OR_RAISE(auto max_result_bytes, header.Int64("max_result_bytes"));
  if (max_result_bytes) {
    if (*max_result_bytes < 1) {
      return Error(ErrorCode::kInvalidRequest, "max_result_bytes must be positive");
    }
    request.max_result_bytes = *max_result_bytes;
  }
  return request;
}

}  // namespace skyhook
