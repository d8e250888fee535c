#include "skyhook/storage/secondary/omap_value.h"

#include <cstring>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/key_value_metadata.h>

#include "skyhook/errors/error.h"

namespace skyhook {

arrow::Result<std::string> EncodeOmapValue(const arrow::RecordBatch& batch,
                                           const std::string& identity) {
  auto metadata = batch.schema()->metadata() ? batch.schema()->metadata()->Copy()
                                             : std::make_shared<arrow::KeyValueMetadata>();
  ARROW_RETURN_NOT_OK(metadata->Set(kIdentityMetadata, identity));
  auto schema = batch.schema()->WithMetadata(metadata);
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema));
  ARROW_ASSIGN_OR_RAISE(auto tagged, batch.ReplaceSchema(schema));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*tagged));
  ARROW_RETURN_NOT_OK(writer->Close());
  ARROW_ASSIGN_OR_RAISE(auto buffer, sink->Finish());
  return buffer->ToString();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> DecodeOmapValue(const std::string& value,
                                                                   const std::string& key) {
  auto corrupt = [&](const arrow::Status& cause) {
    return Error(ErrorCode::kCorruptObject, "the object's omap value ", key,
                 " is corrupt: ", cause.message());
  };
  // The reader's buffers must outlive the value's string, and be aligned.
  ARROW_ASSIGN_OR_RAISE(auto copy, arrow::AllocateBuffer(static_cast<int64_t>(value.size())));
  std::memcpy(copy->mutable_data(), value.data(), value.size());
  auto reader = arrow::ipc::RecordBatchStreamReader::Open(
      std::make_shared<arrow::io::BufferReader>(std::move(copy)));
  if (!reader.ok()) return corrupt(reader.status());
  std::shared_ptr<arrow::RecordBatch> batch, extra;
  auto read = (*reader)->ReadNext(&batch);
  if (read.ok() && batch == nullptr) read = arrow::Status::Invalid("no record batch");
  if (read.ok()) read = (*reader)->ReadNext(&extra);
  if (read.ok() && extra != nullptr) read = arrow::Status::Invalid("more than one record batch");
  if (read.ok()) read = batch->ValidateFull();
  if (!read.ok()) return corrupt(read);
  return batch;
}

bool DescribesData(const arrow::RecordBatch& batch, const std::string& identity) {
  const auto& metadata = batch.schema()->metadata();
  if (!metadata) return false;
  auto found = metadata->Get(kIdentityMetadata);
  return found.ok() && *found == identity;
}

}  // namespace skyhook
