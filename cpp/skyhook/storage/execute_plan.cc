#include "skyhook/storage/execute_plan.h"

#include <optional>
#include <vector>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/engine/substrait/serde.h>
#include <arrow/util/future.h>

#include "skyhook/protocol/plan_request.h"
#include "skyhook/storage/call_resources.h"
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
  static constexpr bool kPushesBackOverLimits = true;  // the client can run the sub-plan

  PlanExecution(PlanRequest request, CallResources* resources)
      : request_(std::move(request)),
        resources_(resources),
        options_(resources->Bounded(request_.result)),
        budget_(resources->max_slice_cpu_ns(request_.pushback)) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall& call, Reply* reply) {
    ARROW_RETURN_NOT_OK(DeclineIfBusy(call, resources_->max_in_flight(request_.pushback)));
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, resources_->pool()));
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
    arrow::acero::QueryOptions query;
    query.use_threads = false;
    query.memory_pool = resources_->pool();
    ARROW_ASSIGN_OR_RAISE(auto results,
                          arrow::acero::DeclarationToReader(plan->root.declaration, query));
    auto schema = results->schema();
    if (schema == nullptr) {  // Acero's answer to a plan that does not type-check
      return Error(ErrorCode::kInvalidRequest, "the plan does not type-check against the object");
    }
    if (!plan->names.empty()) {
      ARROW_ASSIGN_OR_RAISE(schema, schema->WithNames(plan->names));
    }
    ARROW_ASSIGN_OR_RAISE(auto writer, ResultWriter::Open(schema, options_,
                                                          resources_->limits().max_reply_bytes));
    while (true) {
      auto next = results->Next();
      if (!next.ok()) return pushed_back_ ? pushed_back_status_ : next.status();
      if (*next == nullptr) break;
      ARROW_ASSIGN_OR_RAISE(auto renamed, (*next)->ReplaceSchema(schema));
      // Rows already went through the plan, so the reply cannot end early here:
      // over the node's limit, the client runs the sub-plan itself.
      ARROW_ASSIGN_OR_RAISE(bool fits, writer->Fits(*renamed));
      if (!fits) {
        return Error(ErrorCode::kLimitExceeded, "the plan's result is larger than the node's ",
                     resources_->limits().max_reply_bytes, "-byte reply limit");
      }
      ARROW_RETURN_NOT_OK(writer->Write(*renamed));
    }
    reply->resume_row = resume_row_;
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
    ARROW_ASSIGN_OR_RAISE(auto batches,
                          reader_->ReadFields(fields, options_.batch_size, options_.start_row));
    auto generator = [this, batches]() -> arrow::Future<SourceBatch> {
      if (started_) {  // the previous slice has gone through the plan: account for it
        auto within_budget = budget_.AfterSlice();
        if (!within_budget.ok()) {
          pushed_back_ = true;
          pushed_back_status_ = within_budget;
          return arrow::Future<SourceBatch>::MakeFinished(within_budget);
        }
        // Past the node's time limit the plan ends here, over the slices read:
        // its partial result is mergeable, and the client continues.
        if (resources_->OutOfTime()) {
          resume_row_ = options_.start_row + rows_scanned_;
          return arrow::Future<SourceBatch>::MakeFinished(SourceBatch{});
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
  CallResources* resources_;
  ResultOptions options_;
  SliceBudget budget_;
  std::unique_ptr<ObjectReader> reader_;
  bool started_ = false;
  bool pushed_back_ = false;
  arrow::Status pushed_back_status_;
  int64_t rows_scanned_ = 0;
  int64_t rows_returned_ = 0;
  std::optional<int64_t> resume_row_;
};

}  // namespace

Reply ExecutePlan(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<PlanRequest, PlanExecution>(object, request);
}

}  // namespace skyhook
