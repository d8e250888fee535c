#include "skyhook/storage/methods/scan.h"

#include <optional>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>

#include "skyhook/protocol/scan_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/methods/row_expressions.h"
#include "skyhook/storage/object/object_columns.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"
#include "skyhook/storage/runtime/cpu_timer.h"
#include "skyhook/storage/runtime/pushback.h"
#include "skyhook/storage/runtime/rebind_expressions.h"
#include "skyhook/storage/runtime/result_writer.h"
#include "skyhook/storage/secondary/scan_zones.h"

namespace skyhook {
namespace {

using arrow::engine::BoundExpressions;

// The names of the columns a request reads, so that only the column groups
// holding them are opened; nullopt when it reads every column.
arrow::Result<std::optional<std::vector<std::string>>> ColumnsRead(const ScanRequest& request) {
  if (!request.projection) return std::nullopt;
  std::vector<std::string> names;
  for (const auto* bound : {request.filter ? &*request.filter : nullptr, &*request.projection}) {
    if (bound == nullptr) continue;
    ARROW_ASSIGN_OR_RAISE(auto fields, ReferencedFields(*bound));
    for (const auto& field : fields) names.push_back(field->name());
  }
  return names;
}

class ScanExecution {
 public:
  static constexpr bool kPushesBackOverLimits = true;  // the client can read the object

  ScanExecution(ScanRequest request, CallResources* resources)
      : request_(std::move(request)),
        resources_(resources),
        options_(resources->Bounded(request_.result, request_.expression_nodes)) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall& call, Reply* reply) {
    ARROW_RETURN_NOT_OK(DeclineIfBusy(call, request_.pushback, resources_->limits()));
    ARROW_RETURN_NOT_OK(RebindRequest());
    ARROW_ASSIGN_OR_RAISE(auto columns, ColumnsRead(request_));
    ARROW_ASSIGN_OR_RAISE(
        auto reader, ObjectReader::Open(object, resources_->pool(), columns ? &*columns : nullptr));
    auto object_schema = reader->schema();
    RequestedColumns needed(object_schema);
    if (request_.filter) {
      ARROW_RETURN_NOT_OK(AddReferencedFields(*request_.filter, &needed));
    }
    std::shared_ptr<arrow::Schema> output_schema;
    if (request_.projection) {
      ARROW_RETURN_NOT_OK(AddReferencedFields(*request_.projection, &needed));
      output_schema = ProjectedSchema(*request_.projection);
    } else {
      needed.AddAll();
      output_schema = needed.schema();  // the columns the filter names, as it names them
    }

    ARROW_ASSIGN_OR_RAISE(uint64_t object_bytes, object->Size());
    ARROW_ASSIGN_OR_RAISE(
        writer_, ResultWriter::Open(output_schema, options_, resources_->limits().max_reply_bytes,
                                    static_cast<int64_t>(object_bytes), resources_->pool()));
    auto* writer = writer_.get();
    // Statistics and indexes narrow the rows read; without them, every row is.
    ARROW_ASSIGN_OR_RAISE(
        auto rows,
        FilteredRows::Open(object, reader.get(), request_.filter ? &*request_.filter : nullptr,
                           needed.indices(), options_.batch_size, options_.start_row, resources_));
    zones_skipped_ = rows.zones_skipped();
    rows_read_by_index_ = rows.rows_read_by_index();
    index_bytes_read_ = rows.index_bytes_read();
    secondary_rejected_ = rows.secondary_rejected();
    auto requested_schema = needed.schema();
    SliceBudget budget(request_.pushback, resources_->limits());
    int64_t position = options_.start_row;  // the first row of the object not yet consumed
    while (true) {
      // Past the node's time limit, answer with what is done; the client continues.
      if (budget.slices() > 0 && resources_->OutOfTime()) {
        reply->resume_row = position;
        break;
      }
      ARROW_ASSIGN_OR_RAISE(auto slice, rows.Next());
      if (slice == nullptr) {
        rows_scanned_ = rows.rows_scanned();  // with zones the pre-filter passed on the way
        break;
      }
      ARROW_ASSIGN_OR_RAISE(auto converted,
                            AsRequested(slice, requested_schema, resources_->exec_context()));
      ARROW_ASSIGN_OR_RAISE(auto batch, AsInvalidRequest("filter", Filter(converted)));
      if (batch->num_rows() > 0) {
        ARROW_ASSIGN_OR_RAISE(batch, AsInvalidRequest("projection", Project(batch, output_schema)));
        ARROW_ASSIGN_OR_RAISE(bool fits, writer->Fits(*batch));
        if (!fits) {
          if (writer->rows_written() == 0) {
            return Error(ErrorCode::kLimitExceeded, "one slice's result is larger than the node's ",
                         resources_->limits().max_reply_bytes, "-byte reply limit");
          }
          reply->resume_row = position;  // this slice goes into the next reply
          break;
        }
        ARROW_RETURN_NOT_OK(writer->Write(batch));
      }
      position = rows.position();
      rows_scanned_ = rows.rows_scanned();
      bytes_read_ = reader->bytes_read();
      ARROW_RETURN_NOT_OK(budget.AfterSlice());
    }
    bytes_read_ = reader->bytes_read();
    rows_returned_ = writer->rows_written();
    ARROW_ASSIGN_OR_RAISE(reply->body, writer->Finish());
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"rows_scanned", rows_scanned_},
                         {"rows_returned", rows_returned_},
                         {"bytes_read", bytes_read_},
                         {"bytes_returned", reply->body ? reply->body->size() : 0},
                         {"storage_cpu_ns", timer.ElapsedNanos()},
                         {"zones_skipped", zones_skipped_},
                         {"rows_read_by_index", rows_read_by_index_},
                         {"index_bytes_read", index_bytes_read_},
                         {"secondary_rejected", secondary_rejected_}};
    if (writer_) writer_->AddStatistics(&reply->statistics);
  }

 private:
  // The expressions decoded with Arrow's registry, bound to this call's.
  arrow::Status RebindRequest() {
    for (auto* bound : {&request_.filter, &request_.projection}) {
      if (!*bound) continue;
      ARROW_ASSIGN_OR_RAISE(**bound, RebindExpressions(**bound, resources_->exec_context()));
    }
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Filter(
      const std::shared_ptr<arrow::RecordBatch>& batch) const {
    return FilterRows(request_.filter, batch, resources_->exec_context());
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Project(
      const std::shared_ptr<arrow::RecordBatch>& batch,
      const std::shared_ptr<arrow::Schema>& output_schema) const {
    return ProjectRows(request_.projection, batch, output_schema, resources_->exec_context());
  }

  ScanRequest request_;
  CallResources* resources_;
  ResultOptions options_;
  std::unique_ptr<ResultWriter> writer_;
  int64_t rows_scanned_ = 0;
  int64_t rows_returned_ = 0;
  int64_t bytes_read_ = 0;
  int64_t zones_skipped_ = 0;
  int64_t secondary_rejected_ = 0;
  int64_t rows_read_by_index_ = 0;
  int64_t index_bytes_read_ = 0;
};

}  // namespace

Reply Scan(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<ScanRequest, ScanExecution>(object, request);
}

}  // namespace skyhook
