#include "skyhook/protocol/frame.h"

#include <cstring>
#include <optional>

#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/scalar.h>
#include <arrow/util/endian.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

template <typename T>
T LoadLittleEndian(const uint8_t* data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return arrow::bit_util::FromLittleEndian(value);
}

template <typename T>
void StoreLittleEndian(uint8_t* data, T value) {
  value = arrow::bit_util::ToLittleEndian(value);
  std::memcpy(data, &value, sizeof(T));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadOneRowBatch(
    const std::shared_ptr<arrow::Buffer>& ipc) {
  auto input = std::make_shared<arrow::io::BufferReader>(ipc);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchStreamReader::Open(input));
  ARROW_ASSIGN_OR_RAISE(auto batch, reader->Next());
  if (batch == nullptr || batch->num_rows() != 1) {
    return arrow::Status::Invalid("header must hold exactly one row");
  }
  ARROW_RETURN_NOT_OK(batch->ValidateFull());
  return batch;
}

}  // namespace

arrow::Result<Frame> DecodeFrame(const std::shared_ptr<arrow::Buffer>& message,
                                 std::string_view magic) {
  if (message->size() < kFramePrefixSize) {
    return Error(ErrorCode::kInvalidRequest, "message of ", message->size(),
                 " bytes is shorter than the ", kFramePrefixSize, "-byte envelope");
  }
  const uint8_t* data = message->data();
  if (std::string_view(reinterpret_cast<const char*>(data), 4) != magic) {
    return Error(ErrorCode::kInvalidRequest, "message does not start with ", magic);
  }
  Frame frame;
  frame.version = LoadLittleEndian<uint16_t>(data + 4);
  if (frame.version > kProtocolVersion || frame.version == 0) {
    return Error(ErrorCode::kUnsupportedVersion, "protocol version ", frame.version,
                 " is not supported (this side speaks up to ", kProtocolVersion, ")");
  }
  uint32_t header_length = LoadLittleEndian<uint32_t>(data + 8);
  if (header_length > message->size() - kFramePrefixSize) {
    return Error(ErrorCode::kInvalidRequest, "header length ", header_length, " exceeds the ",
                 message->size() - kFramePrefixSize,
                 " bytes that follow the envelope (truncated message?)");
  }
  auto header_ipc = arrow::SliceBuffer(message, kFramePrefixSize, header_length);
  auto header = ReadOneRowBatch(header_ipc);
  if (!header.ok()) {
    return Error(ErrorCode::kInvalidRequest, "malformed header: ", header.status().message());
  }
  frame.header = *header;
  frame.body = arrow::SliceBuffer(message, kFramePrefixSize + header_length);
  return frame;
}

namespace {

// The header as an IPC stream, zero-padded to a multiple of 8 bytes (the
// stream ends at its end-of-stream marker; the zeros after it are never read).
arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeHeader(const arrow::RecordBatch& header) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, header.schema()));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(header));
  ARROW_RETURN_NOT_OK(writer->Close());
  ARROW_ASSIGN_OR_RAISE(int64_t length, sink->Tell());
  const uint8_t zeros[8] = {0};
  ARROW_RETURN_NOT_OK(sink->Write(zeros, (8 - length % 8) % 8));
  return sink->Finish();
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeFrame(std::string_view magic,
                                                          const arrow::RecordBatch& header,
                                                          const arrow::Buffer& body) {
  ARROW_ASSIGN_OR_RAISE(auto encoded_header, EncodeHeader(header));
  // One allocation of the final size: the body is copied once.
  ARROW_ASSIGN_OR_RAISE(
      auto message, arrow::AllocateBuffer(kFramePrefixSize + encoded_header->size() + body.size()));
  uint8_t* data = message->mutable_data();
  std::memset(data, 0, kFramePrefixSize);
  std::memcpy(data, magic.data(), 4);
  StoreLittleEndian<uint16_t>(data + 4, kProtocolVersion);
  StoreLittleEndian<uint32_t>(data + 8, static_cast<uint32_t>(encoded_header->size()));
  std::memcpy(data + kFramePrefixSize, encoded_header->data(), encoded_header->size());
  if (body.size() > 0) {
    std::memcpy(data + kFramePrefixSize + encoded_header->size(), body.data(), body.size());
  }
  return std::shared_ptr<arrow::Buffer>(std::move(message));
}

arrow::Status ReplaceFrameHeader(arrow::Buffer* message, const arrow::RecordBatch& header) {
  ARROW_ASSIGN_OR_RAISE(auto encoded_header, EncodeHeader(header));
  if (!message->is_mutable() || message->size() < kFramePrefixSize ||
      LoadLittleEndian<uint32_t>(message->data() + 8) != encoded_header->size()) {
    return arrow::Status::Invalid("the new header does not fit the frame");
  }
  std::memcpy(message->mutable_data() + kFramePrefixSize, encoded_header->data(),
              encoded_header->size());
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Scalar>> HeaderReader::Field(
    const std::string& name, const arrow::DataType& type) const {
  auto column = header_->GetColumnByName(name);
  if (column == nullptr) return nullptr;
  if (!column->type()->Equals(type)) {
    return Error(ErrorCode::kInvalidRequest, "header field '", name, "' must be ", type.ToString(),
                 ", not ", column->type()->ToString());
  }
  ARROW_ASSIGN_OR_RAISE(auto scalar, column->GetScalar(0));
  if (!scalar->is_valid) return nullptr;
  return scalar;
}

arrow::Result<std::optional<std::string>> HeaderReader::String(const std::string& name) const {
  ARROW_ASSIGN_OR_RAISE(auto scalar, Field(name, *arrow::utf8()));
  if (scalar == nullptr) return std::nullopt;
  return static_cast<const arrow::StringScalar&>(*scalar).ToString();
}

arrow::Result<std::optional<std::shared_ptr<arrow::Buffer>>> HeaderReader::Binary(
    const std::string& name) const {
  ARROW_ASSIGN_OR_RAISE(auto scalar, Field(name, *arrow::binary()));
  if (scalar == nullptr) return std::nullopt;
  return static_cast<const arrow::BinaryScalar&>(*scalar).value;
}

arrow::Result<std::optional<int64_t>> HeaderReader::Int64(const std::string& name) const {
  ARROW_ASSIGN_OR_RAISE(auto scalar, Field(name, *arrow::int64()));
  if (scalar == nullptr) return std::nullopt;
  return static_cast<const arrow::Int64Scalar&>(*scalar).value;
}

}  // namespace skyhook
