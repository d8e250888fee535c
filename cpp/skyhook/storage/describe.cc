#include "skyhook/storage/describe.h"

#include <vector>

#include <arrow/array/array_nested.h>
#include <arrow/array/builder_base.h>
#include <arrow/array/util.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/exec.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/scalar.h>
#include <arrow/util/byte_size.h>

#include "skyhook/protocol/describe_request.h"
#include "skyhook/storage/execution.h"
#include "skyhook/storage/object_reader.h"
#include "skyhook/storage/result_writer.h"

namespace skyhook {
namespace {

// Min, max and null count of one column, accumulated slice by slice.
class ColumnStatistics {
 public:
  ColumnStatistics(std::shared_ptr<arrow::DataType> type, arrow::compute::ExecContext* context)
      : type_(std::move(type)), context_(context) {}

  arrow::Status Update(const std::shared_ptr<arrow::Array>& values) {
    null_count_ += values->null_count();
    bytes_ += arrow::util::TotalBufferSize(*values);
    if (!orderable_ || values->null_count() == values->length()) return arrow::Status::OK();
    if (arrow::is_floating(type_->id())) {
      ARROW_ASSIGN_OR_RAISE(auto nan, arrow::compute::CallFunction("is_nan", {values}, context_));
      ARROW_ASSIGN_OR_RAISE(
          auto any_nan,
          arrow::compute::Any(nan, arrow::compute::ScalarAggregateOptions::Defaults(), context_));
      // NaN is outside every [min, max] range, so a range would prune wrongly.
      if (any_nan.scalar_as<arrow::BooleanScalar>().value) orderable_ = false;
    }
    auto extremes = arrow::compute::MinMax(
        values, arrow::compute::ScalarAggregateOptions::Defaults(), context_);
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
    ARROW_ASSIGN_OR_RAISE(auto nulls,
                          arrow::MakeArrayFromScalar(arrow::Int64Scalar(null_count_), 1));
    ARROW_ASSIGN_OR_RAISE(auto bytes, arrow::MakeArrayFromScalar(arrow::Int64Scalar(bytes_), 1));
    return arrow::StructArray::Make({min, max, nulls, bytes},
                                    {"min", "max", "null_count", "bytes"});
  }

 private:
  // The min (which = 0) or max (which = 1) of the per-slice extremes.
  arrow::Result<std::shared_ptr<arrow::Array>> Extreme(
      const std::vector<std::shared_ptr<arrow::Scalar>>& candidates, int which) const {
    ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(type_));
    ARROW_RETURN_NOT_OK(builder->AppendScalars(candidates));
    ARROW_ASSIGN_OR_RAISE(auto array, builder->Finish());
    ARROW_ASSIGN_OR_RAISE(auto extremes, arrow::compute::MinMax(array));
    return arrow::MakeArrayFromScalar(*extremes.scalar_as<arrow::StructScalar>().value[which], 1);
  }

  std::shared_ptr<arrow::DataType> type_;
  arrow::compute::ExecContext* context_;
  int64_t null_count_ = 0;
  int64_t bytes_ = 0;  // decoded (Arrow) size: what a reply of this column costs
  bool orderable_ = true;
  std::vector<std::shared_ptr<arrow::Scalar>> minima_, maxima_;
};

class DescribeExecution {
 public:
  // Statistics only storage computes for a writer: over a limit it fails.
  static constexpr bool kPushesBackOverLimits = false;

  DescribeExecution(DescribeRequest, CallResources* resources) : resources_(resources) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall&, Reply* reply) {
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, resources_->pool()));
    auto schema = reader_->schema();
    std::vector<ColumnStatistics> columns;
    std::vector<int> all_fields;
    for (int i = 0; i < schema->num_fields(); ++i) {
      columns.emplace_back(schema->field(i)->type(), resources_->exec_context());
      all_fields.push_back(i);
    }
    ARROW_ASSIGN_OR_RAISE(auto batches, reader_->ReadFields(all_fields, 64 * 1024));
    while (true) {
      if (resources_->OutOfTime()) {
        return Error(ErrorCode::kLimitExceeded,
                     "describing the object takes longer than the "
                     "node's limit of ",
                     resources_->limits().max_call_ms, " ms per call");
      }
      ARROW_ASSIGN_OR_RAISE(auto batch, batches->Next());
      if (batch == nullptr) break;
      rows_ += batch->num_rows();
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
    ARROW_ASSIGN_OR_RAISE(auto writer, ResultWriter::Open(row->schema(), ResultOptions{},
                                                          resources_->limits().max_reply_bytes));
    ARROW_RETURN_NOT_OK(writer->Write(*row));
    ARROW_ASSIGN_OR_RAISE(reply->body, writer->Finish());
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"num_rows", rows_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  CallResources* resources_;
  std::unique_ptr<ObjectReader> reader_;
  int64_t rows_ = 0;
};

}  // namespace

Reply Describe(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<DescribeRequest, DescribeExecution>(object, request);
}

}  // namespace skyhook
