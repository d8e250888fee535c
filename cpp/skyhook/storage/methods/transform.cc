#include "skyhook/storage/methods/transform.h"

#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <arrow/table.h>

#include "skyhook/errors/error.h"
#include "skyhook/protocol/transform_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/methods/row_expressions.h"
#include "skyhook/storage/object/object_columns.h"
#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/storage/object/replacement_view.h"
#include "skyhook/storage/runtime/kept_rows.h"
#include "skyhook/storage/runtime/rebind_expressions.h"
#include "skyhook/storage/secondary/secondary_design.h"

namespace skyhook {
namespace {

// Ceph refuses writes over osd_max_write_size (90 MiB); the client's own cap.
constexpr int64_t kMaxObjectBytes = int64_t{64} << 20;
constexpr int64_t kReadBatchRows = 64 * 1024;

arrow::Result<ObjectDesign> RequestedDesign(const arrow::Buffer& encoded) {
  // The request form has no extents: parsed as the design of an empty object.
  auto design = ParseDesign(
      std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()), 0);
  if (!design.ok()) {
    return Error(ErrorCode::kInvalidRequest,
                 "the requested design is malformed: ", design.status().message());
  }
  ARROW_RETURN_NOT_OK(CheckDesignRequest(*design));
  return design;
}

// Before any data is read: every column the design names is the object's.
arrow::Status CheckColumns(const ObjectDesign& design, const arrow::Schema& schema) {
  std::vector<std::string> named;
  for (const auto& group : design.column_groups) {
    named.insert(named.end(), group.columns.begin(), group.columns.end());
  }
  for (const auto& key : design.sort_by) named.push_back(key.column);
  for (const auto& column : named) {
    if (schema.GetFieldIndex(column) < 0) {
      return Error(ErrorCode::kUnknownColumn, "the design names column '", column,
                   "', which the object does not have");
    }
  }
  return arrow::Status::OK();
}

// Arrow's own refusals of a design (sorting by a list column, say) are the request's fault.
arrow::Status RequestFault(const arrow::Status& status) {
  if (CodeOf(status) != ErrorCode::kInternal) return status;
  if (!status.IsNotImplemented() && !status.IsTypeError() && !status.IsInvalid()) return status;
  return Error(ErrorCode::kInvalidRequest, "the design cannot be built: ", status.message());
}

class TransformExecution {
 public:
  // A rewrite only storage can make: over a limit it fails, changing nothing.
  static constexpr bool kPushesBackOverLimits = false;

  TransformExecution(TransformRequest request, CallResources* resources)
      : request_(std::move(request)), resources_(resources) {}

  /// On an ObjectContext (transform_check) only what can be checked before
  /// the rewrite; on a MutableObjectContext the rewrite too.
  template <typename Object>
  arrow::Status Run(Object* object, const InFlightCall&, Reply* reply) {
    ARROW_ASSIGN_OR_RAISE(target_, RequestedDesign(*request_.design));
    ARROW_RETURN_NOT_OK(ObjectReader::ObjectSize(object));
    // The attribute, read once, is the design the data is read by and the
    // guard: the rewrite happens only while it is unchanged.
    ARROW_ASSIGN_OR_RAISE(guard_value_, object->GetXattr(kDesignAttribute));
    ARROW_ASSIGN_OR_RAISE(auto current, DesignOf(object, guard_value_));
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, current, resources_->pool()));
    if (current.generation != request_.expected_generation) {
      return Error(ErrorCode::kConflict, "the object's design is at generation ",
                   current.generation, ", not ", request_.expected_generation,
                   ": another transform changed it");
    }
    target_.generation = current.generation + 1;
    ARROW_ASSIGN_OR_RAISE(bytes_before_, object->Size());
    ARROW_RETURN_NOT_OK(CheckColumns(target_, *reader_->schema()));
    if constexpr (std::is_same_v<Object, MutableObjectContext>) return Rewrite(object, reply);
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"num_rows", rows_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"bytes_written", bytes_written_},
                         {"bytes_before", static_cast<int64_t>(bytes_before_)},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  arrow::Status Rewrite(MutableObjectContext* object, Reply* reply) {
    ARROW_ASSIGN_OR_RAISE(auto table, ReadAll());
    auto encoded = EncodeObject(table, target_, resources_->pool());
    if (!encoded.ok()) return RequestFault(encoded.status());
    ARROW_RETURN_NOT_OK(WithinLimits("encoding"));
    if (encoded->data->size() > kMaxObjectBytes) {
      return Error(ErrorCode::kLimitExceeded, "the new object would be ", encoded->data->size(),
                   " bytes, over the ", kMaxObjectBytes, "-byte object limit");
    }
    ARROW_ASSIGN_OR_RAISE(auto attribute, SerializeDesign(encoded->design));
    const std::map<std::string, std::string> attributes = {
        {kDesignAttribute, attribute->ToString()}};
    // Statistics and indexes the object keeps follow it (replacement_view.h says why first).
    ReplacementView replacement(object, encoded->data, attributes);
    ARROW_RETURN_NOT_OK(RebuildSecondaryDesign(&replacement, resources_));
    ARROW_RETURN_NOT_OK(object->ReplaceObject(*encoded->data, attributes,
                                              AttributeGuard{kDesignAttribute, guard_value_}));
    rows_ = table->num_rows();
    bytes_written_ = encoded->data->size();
    reply->body = attribute;
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Table>> ReadAll() {
    std::vector<int> fields(reader_->schema()->num_fields());
    std::iota(fields.begin(), fields.end(), 0);
    ARROW_ASSIGN_OR_RAISE(auto batches, reader_->ReadFields(fields, kReadBatchRows));
    ARROW_ASSIGN_OR_RAISE(auto rows, RowsKept());
    std::vector<std::shared_ptr<arrow::RecordBatch>> read;
    while (true) {
      ARROW_RETURN_NOT_OK(WithinLimits("reading"));
      ARROW_ASSIGN_OR_RAISE(auto batch, batches->Next());
      if (batch == nullptr) break;
      if (rows) {
        ARROW_ASSIGN_OR_RAISE(batch, rows->Of(batch, resources_->exec_context()));
      }
      read.push_back(std::move(batch));
    }
    return arrow::Table::FromRecordBatches(reader_->schema(), std::move(read));
  }

  // The request's rows: its expressions bound to this call, reading the
  // object's columns, giving the object's columns back.
  struct Rows {
    ScanRequest request;
    std::shared_ptr<arrow::Schema> requested;
    std::shared_ptr<arrow::Schema> output;

    arrow::Result<std::shared_ptr<arrow::RecordBatch>> Of(
        const std::shared_ptr<arrow::RecordBatch>& batch,
        arrow::compute::ExecContext* context) const {
      ARROW_ASSIGN_OR_RAISE(auto converted, AsRequested(batch, requested, context));
      if (!request.projection) {  // the rows kept, as the object stores them
        if (!request.filter) return batch;
        ARROW_ASSIGN_OR_RAISE(
            auto mask, AsInvalidRequest("filter", FilterMask(*request.filter, converted, context)));
        return KeptRows(batch, mask, context);
      }
      ARROW_ASSIGN_OR_RAISE(
          auto kept, AsInvalidRequest("filter", FilterRows(request.filter, converted, context)));
      ARROW_ASSIGN_OR_RAISE(
          auto projected,
          AsInvalidRequest("projection", ProjectRows(request.projection, kept, output, context)));
      return projected->ReplaceSchemaMetadata(batch->schema()->metadata());
    }
  };

  arrow::Result<std::optional<Rows>> RowsKept() {
    if (!request_.rows) return std::nullopt;
    Rows rows{*request_.rows, nullptr, nullptr};
    for (auto* bound : {&rows.request.filter, &rows.request.projection}) {
      if (!*bound) continue;
      ARROW_ASSIGN_OR_RAISE(**bound, RebindExpressions(**bound, resources_->exec_context()));
    }
    auto schema = reader_->schema();
    RequestedColumns needed(schema);
    if (rows.request.filter)
      ARROW_RETURN_NOT_OK(AddReferencedFields(*rows.request.filter, &needed));
    if (rows.request.projection) {
      ARROW_RETURN_NOT_OK(AddReferencedFields(*rows.request.projection, &needed));
    }
    needed.AddAll();
    rows.requested = needed.schema();
    if (!rows.request.projection) return rows;
    rows.output = ProjectedSchema(*rows.request.projection);
    if (!rows.output->Equals(*schema, /*check_metadata=*/false)) {
      return Error(ErrorCode::kInvalidRequest, "the rows of a rewrite must keep the object's ",
                   "columns and types (", schema->ToString(), "), not ", rows.output->ToString());
    }
    return rows;
  }

  arrow::Status WithinLimits(const char* step) const {
    if (!resources_->OutOfTime()) return arrow::Status::OK();
    return Error(ErrorCode::kLimitExceeded, "transforming the object takes longer than the node's ",
                 resources_->limits().max_call_ms, " ms per call (", step,
                 "); nothing was changed");
  }

  TransformRequest request_;
  CallResources* resources_;
  ObjectDesign target_;
  std::optional<std::string> guard_value_;
  std::unique_ptr<ObjectReader> reader_;
  uint64_t bytes_before_ = 0;
  int64_t rows_ = 0;
  int64_t bytes_written_ = 0;
};

}  // namespace

Reply Transform(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<TransformRequest, TransformExecution>(object, request);
}

Reply TransformCheck(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<TransformRequest, TransformExecution>(object, request);
}

}  // namespace skyhook
