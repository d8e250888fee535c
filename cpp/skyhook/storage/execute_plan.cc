#include "skyhook/storage/execute_plan.h"

#include <optional>
#include <vector>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/engine/substrait/serde.h>
#include <arrow/util/future.h>

#include "skyhook/protocol/plan_request.h"
#include "skyhook/storage/cpu_timer.h"
#include "skyhook/storage/execution.h"
#include "skyhook/storage/object_columns.h"
#include "skyhook/storage/object_reader.h"
#include "skyhook/storage/pushback.h"
#include "skyhook/storage/result_writer.h"
#include "skyhook/substrait/request_check.h"

namespace skyhook {
namespace {

using arrow::acero::Declaration;
using SourceBatch = std::optional<arrow::compute::ExecBatch>;

// Column errors raised by ObjectSource keep their codes; the rest is the plan's fault.
arrow::Status AsPlanError(const arrow::Status& status) {
  if (CodeOf(status) != ErrorCode::kInternal) return status;
  return Error(ErrorCode::kInvalidRequest, "cannot use the Substrait plan: ", status.message());
}

class PlanExecution {
 public:
  explicit PlanExecution(PlanRequest request)
      : request_(std::move(request)), budget_(request_.pushback) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall& call, Reply* reply) {
    if (TooBusy(call, request_.pushback)) {
      return Error(ErrorCode::kPushedBack, call.running(), " calls in flight on this node");
    }
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object));
    arrow::engine::ConversionOptions conversion;
    conversion.named_table_provider = [this](const std::vector<std::string>&,
                                             const arrow::Schema& schema) {
      return ObjectSource(schema);
    };
    ARROW_ASSIGN_OR_RAISE(auto shape, substrait_check::CheckPlan(std::string_view(*request_.plan)));
    std::optional<arrow::engine::PlanInfo> plan;
    if (shape.has_aggregate) {
      auto input = arrow::engine::DeserializePlan(arrow::Buffer(shape.input_plan), nullptr,
                                                  nullptr, conversion);
      if (!input.ok()) return AsPlanError(input.status());
      if (!substrait_check::CheckTypedColumns(*input->root.output_schema).ok()) {
        // The aggregate cannot be converted safely: run the filter and
        // projection only, and say so; the client aggregates the rows.
        reply->executed = Executed::kFilterOnly;
        plan = std::move(*input);
      }
    }
    if (!plan) {
      auto whole = arrow::engine::DeserializePlan(*request_.plan, nullptr, nullptr, conversion);
      if (!whole.ok()) return AsPlanError(whole.status());
      plan = std::move(*whole);
    }
    ARROW_ASSIGN_OR_RAISE(auto results, arrow::acero::DeclarationToReader(
                                            plan->root.declaration, /*use_threads=*/false));
    auto schema = results->schema();
    if (schema == nullptr) {  // Acero's answer to a plan that does not type-check
      return Error(ErrorCode::kInvalidRequest, "the plan does not type-check against the object");
    }
    if (!plan->names.empty()) {
      ARROW_ASSIGN_OR_RAISE(schema, schema->WithNames(plan->names));
    }
    ARROW_ASSIGN_OR_RAISE(auto writer, ResultWriter::Open(schema, request_.result));
    while (true) {
      auto next = results->Next();
      if (!next.ok()) return pushed_back_ ? pushed_back_status_ : next.status();
      if (*next == nullptr) break;
      ARROW_ASSIGN_OR_RAISE(auto renamed, (*next)->ReplaceSchema(schema));
      ARROW_RETURN_NOT_OK(writer->Write(*renamed));
    }
    rows_returned_ = writer->rows_written();
    ARROW_ASSIGN_OR_RAISE(reply->body, writer->Finish());
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"rows_scanned", rows_scanned_},
                         {"rows_returned", rows_returned_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"bytes_returned", reply->body ? reply->body->size() : 0},
                         {"slices", budget_.slices()},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  // The plan's read relation: the object's columns named in the base schema,
  // decoded slice by slice on this thread, with the push-back budget checked
  // between slices.
  arrow::Result<Declaration> ObjectSource(const arrow::Schema& schema) {
    std::vector<int> fields;
    for (const auto& field : schema.fields()) {
      ARROW_ASSIGN_OR_RAISE(int index, FindObjectField(*reader_->schema(), *field));
      fields.push_back(index);
    }
    ARROW_ASSIGN_OR_RAISE(auto batches, reader_->ReadFields(fields, request_.result.batch_size));
    auto generator = [this, batches]() -> arrow::Future<SourceBatch> {
      if (started_) {  // the previous slice has gone through the plan: account for it
        auto within_budget = budget_.AfterSlice();
        if (!within_budget.ok()) {
          pushed_back_ = true;
          pushed_back_status_ = within_budget;
          return arrow::Future<SourceBatch>::MakeFinished(within_budget);
        }
      }
      auto batch = batches->Next();
      if (!batch.ok()) return arrow::Future<SourceBatch>::MakeFinished(batch.status());
      if (*batch == nullptr) return arrow::Future<SourceBatch>::MakeFinished(SourceBatch{});
      started_ = true;
      rows_scanned_ += (*batch)->num_rows();
      return arrow::Future<SourceBatch>::MakeFinished(SourceBatch(arrow::compute::ExecBatch(**batch)));
    };
    arrow::acero::SourceNodeOptions options(batches->schema(), std::move(generator),
                                            arrow::Ordering::Implicit());
    return Declaration("source", std::move(options));
  }

  PlanRequest request_;
  SliceBudget budget_;
  std::unique_ptr<ObjectReader> reader_;
  bool started_ = false;
  bool pushed_back_ = false;
  arrow::Status pushed_back_status_;
  int64_t rows_scanned_ = 0;
  int64_t rows_returned_ = 0;
};

}  // namespace

Reply ExecutePlan(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<PlanRequest, PlanExecution>(object, request);
}

}  // namespace skyhook
