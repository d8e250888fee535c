#include "skyhook/storage/object/ipc_object_reader.h"

#include <algorithm>
#include <optional>

#include <arrow/ipc/reader.h>

#include "skyhook/storage/object/ipc_blocks.h"

namespace skyhook {
namespace {

// Yields the record batches of an IPC file, re-sliced to at most batch_size rows.
class IpcBatchReader : public arrow::RecordBatchReader {
 public:
  /// Reads the given record batches (all when nullopt), skipping the first rows_to_skip rows.
  IpcBatchReader(std::shared_ptr<arrow::ipc::RecordBatchFileReader> file,
                 std::shared_ptr<ObjectFile> object_file, std::shared_ptr<const IpcLayout> layout,
                 std::shared_ptr<arrow::Schema> schema, std::vector<int> positions,
                 int64_t batch_size, std::optional<std::vector<int>> batches, int64_t rows_to_skip)
      : file_(std::move(file)),
        object_file_(std::move(object_file)),
        layout_(std::move(layout)),
        schema_(std::move(schema)),
        positions_(std::move(positions)),
        batch_size_(batch_size),
        batches_(std::move(batches)),
        rows_to_skip_(rows_to_skip) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    while (current_ == nullptr || offset_ >= current_->num_rows()) {
      const int count = batches_ ? static_cast<int>(batches_->size()) : file_->num_record_batches();
      if (next_batch_ >= count) {
        *out = nullptr;
        return arrow::Status::OK();
      }
      const int index = batches_ ? (*batches_)[next_batch_++] : next_batch_++;
      if (index < static_cast<int>(layout_->record_batches.size())) {
        auto checked = CheckIpcMessage(object_file_.get(), layout_->record_batches[index],
                                       layout_->footer_start);
        if (!checked.ok()) return UnreadableFormat("Arrow IPC", checked, object_file_.get());
      }
      auto batch = file_->ReadRecordBatch(index);
      if (!batch.ok()) return UnreadableFormat("Arrow IPC", batch.status(), object_file_.get());
      auto valid = (*batch)->ValidateFull();  // corrupt offsets must not reach compute
      if (!valid.ok()) return UnreadableFormat("Arrow IPC", valid);
      ARROW_ASSIGN_OR_RAISE(current_, (*batch)->SelectColumns(positions_));
      offset_ = std::min(rows_to_skip_, current_->num_rows());
      rows_to_skip_ -= offset_;
    }
    *out = current_->Slice(offset_, batch_size_);
    offset_ += (*out)->num_rows();
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::ipc::RecordBatchFileReader> file_;
  std::shared_ptr<ObjectFile> object_file_;
  std::shared_ptr<const IpcLayout> layout_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<int> positions_;  // of the requested fields among those read
  int64_t batch_size_;
  std::optional<std::vector<int>> batches_;
  int64_t rows_to_skip_;
  int next_batch_ = 0;
  std::shared_ptr<arrow::RecordBatch> current_;
  int64_t offset_ = 0;
};

class IpcObjectReader : public ObjectReader {
 public:
  static arrow::Result<std::unique_ptr<ObjectReader>> Open(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool) {
    auto options = arrow::ipc::IpcReadOptions::Defaults();
    options.memory_pool = pool;
    options.use_threads = false;
    auto reader = arrow::ipc::RecordBatchFileReader::Open(file, options);
    if (!reader.ok()) return UnreadableFormat("Arrow IPC", reader.status(), file.get());
    auto layout = CheckIpcBlocks(file.get());
    if (!layout.ok()) return UnreadableFormat("Arrow IPC", layout.status(), file.get());
    return std::unique_ptr<ObjectReader>(new IpcObjectReader(
        std::move(file), *reader, options, std::make_shared<const IpcLayout>(std::move(*layout))));
  }

  std::shared_ptr<arrow::Schema> schema() const override { return reader_->schema(); }

  int64_t num_rows() const override {
    auto rows = reader_->CountRows();
    return rows.ok() ? *rows : -1;
  }
  std::optional<int64_t> known_num_rows() const override { return std::nullopt; }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size, int64_t start_row) override {
    return Read(field_indices, batch_size, std::nullopt, start_row);
  }

  int num_zones() const override { return reader_->num_record_batches(); }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadExistingZones(
      const std::vector<int>& field_indices, int64_t batch_size, std::vector<int> zones) override {
    return Read(field_indices, batch_size, std::move(zones), 0);
  }

 private:
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Read(
      const std::vector<int>& field_indices, int64_t batch_size,
      std::optional<std::vector<int>> batches, int64_t rows_to_skip) {
    // IPC reads included fields in file order; batches come out in the order asked for.
    std::vector<int> in_file_order(field_indices);
    std::sort(in_file_order.begin(), in_file_order.end());
    in_file_order.erase(std::unique(in_file_order.begin(), in_file_order.end()),
                        in_file_order.end());
    std::vector<int> positions;
    for (int index : field_indices) {
      positions.push_back(
          static_cast<int>(std::lower_bound(in_file_order.begin(), in_file_order.end(), index) -
                           in_file_order.begin()));
    }
    auto options = options_;
    options.included_fields = in_file_order;
    auto reader = arrow::ipc::RecordBatchFileReader::Open(file_, options);
    if (!reader.ok()) return UnreadableFormat("Arrow IPC", reader.status(), file_.get());
    ARROW_ASSIGN_OR_RAISE(auto schema, FieldsSchema(field_indices));
    return std::make_shared<IpcBatchReader>(*reader, file_, layout_, std::move(schema),
                                            std::move(positions), batch_size, std::move(batches),
                                            rows_to_skip);
  }

  IpcObjectReader(std::shared_ptr<ObjectFile> file,
                  std::shared_ptr<arrow::ipc::RecordBatchFileReader> reader,
                  arrow::ipc::IpcReadOptions options, std::shared_ptr<const IpcLayout> layout)
      : ObjectReader(std::move(file)),
        reader_(std::move(reader)),
        options_(std::move(options)),
        layout_(std::move(layout)) {}

  std::shared_ptr<arrow::ipc::RecordBatchFileReader> reader_;
  arrow::ipc::IpcReadOptions options_;
  std::shared_ptr<const IpcLayout> layout_;
};

}  // namespace

arrow::Result<std::unique_ptr<ObjectReader>> OpenIpcObject(std::shared_ptr<ObjectFile> file,
                                                           arrow::MemoryPool* pool) {
  return IpcObjectReader::Open(std::move(file), pool);
}

}  // namespace skyhook
