#include "skyhook/storage/describe.h"

#include <vector>

#include <arrow/array/builder_base.h>
#include <arrow/array/util.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/array/array_nested.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/exec.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/scalar.h>
#include <arrow/util/byte_size.h>

#include "skyhook/protocol/frame.h"
#include "skyhook/storage/cpu_timer.h"
#include "skyhook/storage/object_reader.h"

namespace skyhook {
namespace {

// Min, max and null count of one column, accumulated slice by slice.
class ColumnStatistics {
 public:
  explicit ColumnStatistics(std::shared_ptr<arrow::DataType> type) : type_(std::move(type)) {}

  arrow::Status Update(const std::shared_ptr<arrow::Array>& values) {
    null_count_ += values->null_count();
    bytes_ += arrow::util::TotalBufferSize(*values);
    if (!orderable_ || values->null_count() == values->length()) return arrow::Status::OK();
    if (arrow::is_floating(type_->id())) {
      ARROW_ASSIGN_OR_RAISE(auto nan, arrow::compute::CallFunction("is_nan", {values}));
      ARROW_ASSIGN_OR_RAISE(auto any_nan, arrow::compute::Any(nan));
      // NaN is outside every [min, max] range, so a range would prune wrongly.
      if (any_nan.scalar_as<arrow::BooleanScalar>().value) orderable_ = false;
    }
    auto extremes = arrow::compute::MinMax(values);
    if (!extremes.ok()) {
      orderable_ = false;  // types without an order (lists, structs, ...) get no range
      return arrow::Status::OK();
    }
    const auto& pair = extremes->scalar_as<arrow::StructScalar>();
    minima_.push_back(pair.value[0]);
    maxima_.push_back(pair.value[1]);
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Array>> Finish() const {
    std::shared_ptr<arrow::Array> min, max;
    if (orderable_ && !minima_.empty()) {
      ARROW_ASSIGN_OR_RAISE(min, Extreme(minima_, 0));
      ARROW_ASSIGN_OR_RAISE(max, Extreme(maxima_, 1));
    } else {
      ARROW_ASSIGN_OR_RAISE(min, arrow::MakeArrayOfNull(type_, 1));
      max = min;
    }
    ARROW_ASSIGN_OR_RAISE(auto nulls, arrow::MakeArrayFromScalar(arrow::Int64Scalar(null_count_), 1));
    ARROW_ASSIGN_OR_RAISE(auto bytes, arrow::MakeArrayFromScalar(arrow::Int64Scalar(bytes_), 1));
    return arrow::StructArray::Make({min, max, nulls, bytes}, {"min", "max", "null_count", "bytes"});
  }

 private:
  // The min (which = 0) or max (which = 1) of the per-slice extremes.
  arrow::Result<std::shared_ptr<arrow::Array>> Extreme(
      const std::vector<std::shared_ptr<arrow::Scalar>>& candidates, int which) const {
    ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(type_));
    ARROW_RETURN_NOT_OK(builder->AppendScalars(candidates));
    ARROW_ASSIGN_OR_RAISE(auto array, builder->Finish());
    ARROW_ASSIGN_OR_RAISE(auto extremes, arrow::compute::MinMax(array));
    return arrow::MakeArrayFromScalar(
        *extremes.scalar_as<arrow::StructScalar>().value[which], 1);
  }

  std::shared_ptr<arrow::DataType> type_;
  int64_t null_count_ = 0;
  int64_t bytes_ = 0;  // decoded (Arrow) size: what a reply of this column costs
  bool orderable_ = true;
  std::vector<std::shared_ptr<arrow::Scalar>> minima_, maxima_;
};

arrow::Result<std::shared_ptr<arrow::Buffer>> DescribeObject(ObjectReader* reader,
                                                             int64_t* rows) {
  auto schema = reader->schema();
  std::vector<ColumnStatistics> columns;
  std::vector<int> all_fields;
  for (int i = 0; i < schema->num_fields(); ++i) {
    columns.emplace_back(schema->field(i)->type());
    all_fields.push_back(i);
  }
  ARROW_ASSIGN_OR_RAISE(auto batches, reader->ReadFields(all_fields, 64 * 1024));
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, batches->Next());
    if (batch == nullptr) break;
    *rows += batch->num_rows();
    for (int i = 0; i < batch->num_columns(); ++i) {
      ARROW_RETURN_NOT_OK(columns[i].Update(batch->column(i)));
    }
  }
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (int i = 0; i < schema->num_fields(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto statistics, columns[i].Finish());
    fields.push_back(arrow::field(schema->field(i)->name(), statistics->type()));
    arrays.push_back(std::move(statistics));
  }
  auto row = arrow::RecordBatch::Make(arrow::schema(fields, schema->metadata()), 1, arrays);
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, row->schema()));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*row));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

}  // namespace

Reply Describe(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  CpuTimer timer;
  auto frame = DecodeFrame(request, kRequestMagic);
  if (!frame.ok()) return Reply::FromStatus(frame.status());
  int64_t rows = 0;
  int64_t bytes_read = 0;
  Reply reply;
  auto reader = ObjectReader::Open(object);
  if (!reader.ok()) {
    reply = Reply::FromStatus(reader.status());
  } else {
    auto body = DescribeObject(reader->get(), &rows);
    if (body.ok()) {
      reply.body = *body;
    } else {
      reply = Reply::FromStatus(body.status());
    }
    bytes_read = (*reader)->bytes_read();
  }
  reply.statistics = {{"num_rows", rows},
                      {"bytes_read", bytes_read},
                      {"storage_cpu_ns", timer.ElapsedNanos()}};
  return reply;
}

}  // namespace skyhook
