// The versioned envelope of every request and reply:
//
//   magic (4 bytes) | version (u16 LE) | reserved (u16) | header length (u32 LE)
//   | reserved (u32) | header: an Arrow IPC stream holding exactly one row,
//   zero-padded to a multiple of 8 bytes | body (rest)
//
// The padding keeps the body 8-byte aligned, as Arrow's compute kernels want.
// The header is a one-row Arrow record batch, so fields are typed, named and
// optional, and both sides decode it with Arrow's validating IPC reader rather
// than a hand-written parser. See README.md beside this file for the fields.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook {

constexpr uint16_t kProtocolVersion = 1;
constexpr std::string_view kRequestMagic = "SKRQ";
constexpr std::string_view kReplyMagic = "SKRP";
constexpr int64_t kFramePrefixSize = 16;

struct Frame {
  uint16_t version = kProtocolVersion;
  std::shared_ptr<arrow::RecordBatch> header;  // exactly one row
  std::shared_ptr<arrow::Buffer> body;         // may be empty
};

arrow::Result<Frame> DecodeFrame(const std::shared_ptr<arrow::Buffer>& message,
                                 std::string_view magic);

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeFrame(std::string_view magic,
                                                          const arrow::RecordBatch& header,
                                                          const arrow::Buffer& body);

/// Writes header over an encoded frame's header in place; it must encode to
/// the same length (a header of the same fields with other fixed-width values).
arrow::Status ReplaceFrameHeader(arrow::Buffer* message, const arrow::RecordBatch& header);

/// Typed access to the header's fields, with errors that name the field.
class HeaderReader {
 public:
  explicit HeaderReader(std::shared_ptr<arrow::RecordBatch> header) : header_(std::move(header)) {}

  /// nullopt when the field is absent or null.
  arrow::Result<std::optional<std::string>> String(const std::string& name) const;
  arrow::Result<std::optional<std::shared_ptr<arrow::Buffer>>> Binary(
      const std::string& name) const;
  arrow::Result<std::optional<int64_t>> Int64(const std::string& name) const;

 private:
  arrow::Result<std::shared_ptr<arrow::Scalar>> Field(const std::string& name,
                                                      const arrow::DataType& type) const;
  std::shared_ptr<arrow::RecordBatch> header_;
};

}  // namespace skyhook
