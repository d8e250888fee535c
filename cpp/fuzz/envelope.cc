#include "envelope.h"

#include <cstring>

#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>

namespace skyhook::fuzz {
namespace {

constexpr size_t kPrefixSize = 16;

template <typename T>
T LoadLittleEndian(const uint8_t* data) {
  T value;
  std::memcpy(&value, data, sizeof(T));  // the machines we fuzz on are little-endian
  return value;
}

}  // namespace

arrow::Result<Envelope> ParseEnvelope(const uint8_t* data, size_t size) {
  if (size < kPrefixSize) return arrow::Status::Invalid("shorter than the envelope prefix");
  Envelope envelope;
  envelope.magic.assign(reinterpret_cast<const char*>(data), 4);
  envelope.version = LoadLittleEndian<uint16_t>(data + 4);
  const uint32_t header_length = LoadLittleEndian<uint32_t>(data + 8);
  if (header_length > size - kPrefixSize) return arrow::Status::Invalid("header beyond the end");
  auto header = std::make_shared<arrow::Buffer>(data + kPrefixSize, header_length);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchStreamReader::Open(
                                         std::make_shared<arrow::io::BufferReader>(header)));
  ARROW_ASSIGN_OR_RAISE(envelope.header, reader->Next());
  if (envelope.header == nullptr || envelope.header->num_rows() != 1) {
    return arrow::Status::Invalid("the header is not one row");
  }
  ARROW_RETURN_NOT_OK(envelope.header->ValidateFull());
  envelope.body = std::make_shared<arrow::Buffer>(data + kPrefixSize + header_length,
                                                  size - kPrefixSize - header_length);
  return envelope;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> BuildEnvelope(const Envelope& envelope) {
  ARROW_ASSIGN_OR_RAISE(auto header_sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        arrow::ipc::MakeStreamWriter(header_sink, envelope.header->schema()));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*envelope.header));
  ARROW_RETURN_NOT_OK(writer->Close());
  ARROW_ASSIGN_OR_RAISE(auto header, header_sink->Finish());
  const uint32_t padded_length = static_cast<uint32_t>((header->size() + 7) / 8 * 8);

  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  uint8_t prefix[kPrefixSize] = {0};
  std::memcpy(prefix, envelope.magic.data(), std::min<size_t>(4, envelope.magic.size()));
  std::memcpy(prefix + 4, &envelope.version, sizeof(envelope.version));
  std::memcpy(prefix + 8, &padded_length, sizeof(padded_length));
  ARROW_RETURN_NOT_OK(sink->Write(prefix, kPrefixSize));
  ARROW_RETURN_NOT_OK(sink->Write(header));
  const uint8_t zeros[8] = {0};
  ARROW_RETURN_NOT_OK(sink->Write(zeros, padded_length - header->size()));
  if (envelope.body) ARROW_RETURN_NOT_OK(sink->Write(envelope.body));
  return sink->Finish();
}

}  // namespace skyhook::fuzz
