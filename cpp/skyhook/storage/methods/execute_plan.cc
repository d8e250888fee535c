#include "skyhook/storage/methods/execute_plan.h"

#include <optional>
#include <variant>
#include <vector>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/engine/substrait/serde.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/future.h>

#include "skyhook/protocol/decoded_requests.h"
#include "skyhook/protocol/plan_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/methods/partial_measures.h"
#include "skyhook/storage/methods/plan_aggregate.h"
#include "skyhook/storage/object/dictionary_codes.h"
#include "skyhook/storage/object/object_columns.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"
#include "skyhook/storage/runtime/cpu_timer.h"
#include "skyhook/storage/runtime/pushback.h"
#include "skyhook/storage/runtime/result_writer.h"
#include "skyhook/storage/secondary/scan_zones.h"
#include "skyhook/substrait/in_lists.h"
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

// The condition of the plan's filter when it reads the object directly (the
// shape `filter -> read`), for skipping zones; nullptr for other shapes.
arrow::compute::Expression* SourceFilter(Declaration* declaration) {
  for (auto& input : declaration->inputs) {
    auto* child = std::get_if<Declaration>(&input);
    if (child == nullptr) continue;
    if (declaration->factory_name == "filter" && child->factory_name == "source") {
      return &static_cast<arrow::acero::FilterNodeOptions&>(*declaration->options)
                  .filter_expression;
    }
    if (auto* found = SourceFilter(child)) return found;
  }
  return nullptr;
}

// Acero pulls a source ahead of the work it does on it, so the plan runs in
// chunks of slices: between chunks the node's time, the push-back budget and
// the reply size are checked with the chunk's work done. A chunk's output is
// the plan's over its slices (partial aggregates merge like another object's).
constexpr int64_t kChunkBytes = int64_t{32} << 20;  // decoded input per chunk
constexpr int64_t kChunkSlices = 8;

// Bounds on one grouped-only column's distinct values in an object (DictionaryCodes).
constexpr int32_t kMaxCodes = 1 << 20;
constexpr int64_t kMaxCodeBytes = int64_t{64} << 20;

// The read relation of a plan's input (projects and filters over it), or nullptr.
Declaration* ReadOf(Declaration* declaration) {
  while (declaration->factory_name != "source") {
    if (declaration->inputs.size() != 1) return nullptr;
    declaration = std::get_if<Declaration>(&declaration->inputs[0]);
    if (declaration == nullptr) return nullptr;
  }
  return declaration;
}

class PlanExecution {
 public:
  static constexpr bool kPushesBackOverLimits = true;  // the client can run the sub-plan

  PlanExecution(PlanRequest request, CallResources* resources)
      : request_(std::move(request)),
        resources_(resources),
        budget_(request_.pushback, resources->limits()) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall& call, Reply* reply) {
    ARROW_RETURN_NOT_OK(DeclineIfBusy(call, request_.pushback, resources_->limits()));
    // The reader opens when the plan names the columns it reads (ObjectSource).
    ARROW_ASSIGN_OR_RAISE(uint64_t object_bytes, ObjectReader::ObjectSize(object));
    object_ = object;
    // A query's later calls find its plan checked (a pure function of its bytes).
    const std::string_view plan(*request_.plan);
    ARROW_ASSIGN_OR_RAISE(auto checked,
                          DecodedRequests<substrait_check::CheckedPlan>::Process()->GetOrDecode(
                              plan, [&]() { return substrait_check::CheckPlan(plan); }));
    options_ = resources_->Bounded(request_.result, checked->expression_nodes);
    ARROW_ASSIGN_OR_RAISE(auto runnable, RunnablePlan(*checked));
    int64_t position = options_.start_row;  // the first row of the object not yet consumed
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto chunk, RunChunk(*runnable));
      if (!writer_) {
        ARROW_ASSIGN_OR_RAISE(
            writer_,
            ResultWriter::Open(chunk.schema, options_, resources_->limits().max_reply_bytes,
                               static_cast<int64_t>(object_bytes), resources_->pool()));
      }
      auto* writer = writer_.get();
      // A chunk of no rows past the object's start only holds an aggregate's
      // empty row (count 0, null sums), which would join the partials.
      if (chunk_rows_ == 0 && position > 0) break;
      ARROW_ASSIGN_OR_RAISE(bool fits, writer->Fits(chunk.bytes));
      if (!fits) {
        if (position == options_.start_row) {
          return Error(ErrorCode::kLimitExceeded, "the plan's result is larger than the node's ",
                       resources_->limits().max_reply_bytes, "-byte reply limit");
        }
        reply->resume_row = position;  // the chunk runs again in the next call
        break;
      }
      for (const auto& batch : chunk.batches) ARROW_RETURN_NOT_OK(writer->Write(batch));
      position = rows_ ? rows_->position() : position;
      rows_scanned_ = rows_ ? rows_->rows_scanned() : rows_scanned_;
      if (exhausted_) break;
      if (resources_->OutOfTime()) {
        reply->resume_row = position;
        break;
      }
    }
    rows_returned_ = writer_->rows_written();
    ARROW_ASSIGN_OR_RAISE(reply->body, writer_->Finish());
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"rows_scanned", rows_scanned_},
                         {"rows_returned", rows_returned_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"bytes_returned", reply->body ? reply->body->size() : 0},
                         {"slices", budget_.slices()},
                         {"zones_skipped", rows_ ? rows_->zones_skipped() : 0},
                         {"secondary_rejected", rows_ ? rows_->secondary_rejected() : 0},
                         {"keys_on_codes", static_cast<int64_t>(coded_.size())},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
    if (writer_) writer_->AddStatistics(&reply->statistics);
  }

 private:
  struct Chunk {
    std::shared_ptr<arrow::Schema> schema;
    std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
    int64_t bytes = 0;
  };

  // The plan for Arrow's consumer: the whole plan, or only its input when it
  // aggregates (storage adds the aggregate itself, see plan_aggregate.h).
  arrow::Result<std::shared_ptr<arrow::Buffer>> RunnablePlan(
      const substrait_check::CheckedPlan& checked) {
    if (!checked.has_aggregate) return request_.plan;
    ARROW_ASSIGN_OR_RAISE(auto registry, PartialMeasureRegistry());
    auto aggregate = PlanAggregate::Make(std::string_view(*request_.plan), registry);
    if (!aggregate.ok()) return AsPlanError(aggregate.status());
    aggregate_ = std::move(*aggregate);
    return std::make_shared<arrow::Buffer>(checked.input_plan);
  }

  arrow::Result<arrow::engine::PlanInfo> Convert(const arrow::Buffer& plan) {
    arrow::engine::ConversionOptions conversion;
    conversion.named_table_provider = [this](const std::vector<std::string>&,
                                             const arrow::Schema& schema) {
      return ObjectSource(schema);
    };
    ARROW_ASSIGN_OR_RAISE(auto registry, PartialMeasureRegistry());
    auto converted = arrow::engine::DeserializePlan(plan, registry, nullptr, conversion);
    if (!converted.ok()) return AsPlanError(converted.status());
    return std::move(*converted);
  }

  // One run of the plan over the next slices, up to a chunk's worth.
  arrow::Result<Chunk> RunChunk(const arrow::Buffer& plan) {
    chunk_rows_ = 0;
    chunk_slices_ = 0;
    chunk_bytes_ = 0;
    ARROW_ASSIGN_OR_RAISE(auto converted, Convert(plan));
    arrow::acero::QueryOptions query;
    query.use_threads = false;
    query.memory_pool = resources_->pool();
    query.function_registry = resources_->exec_context()->func_registry();
    if (auto* condition = SourceFilter(&converted.root.declaration)) {
      if (!filter_) {
        // Unbindable conditions skip no zones; the filter node reports them.
        auto bound = condition->Bind(*requested_, resources_->exec_context());
        if (bound.ok()) {
          auto as_sets = InListsAsSets(*bound, *requested_);
          filter_ = arrow::engine::BoundExpressions{{{as_sets.ok() ? *as_sets : *bound, "filter"}},
                                                    requested_};
        }
      }
      if (filter_) *condition = filter_->named_expressions[0].expression;  // IN lists as sets
    }
    if (aggregate_) ARROW_RETURN_NOT_OK(GroupOnCodes(&converted.root.declaration));
    auto declaration = aggregate_ ? aggregate_->Over(std::move(converted.root.declaration))
                                  : std::move(converted.root.declaration);
    const auto& names = aggregate_ ? aggregate_->names() : converted.names;
    ARROW_ASSIGN_OR_RAISE(auto results, arrow::acero::DeclarationToReader(declaration, query));
    Chunk chunk;
    chunk.schema = results->schema();
    if (chunk.schema == nullptr) {  // Acero's answer to a plan that does not type-check
      return Error(ErrorCode::kInvalidRequest, "the plan does not type-check against the object");
    }
    if (!names.empty()) {
      ARROW_ASSIGN_OR_RAISE(chunk.schema, chunk.schema->WithNames(names));
    }
    const auto named = chunk.schema;  // the keys grouped on codes still as codes
    for (const auto& coded : coded_) {
      for (int output : coded.outputs) {
        ARROW_ASSIGN_OR_RAISE(
            chunk.schema, chunk.schema->SetField(
                              output, chunk.schema->field(output)->WithType(coded.codes->type())));
      }
    }
    while (true) {
      auto next = results->Next();
      if (!next.ok()) return pushed_back_ ? pushed_back_status_ : next.status();
      if (*next == nullptr) break;
      ARROW_ASSIGN_OR_RAISE(auto renamed, (*next)->ReplaceSchema(named));
      if (!coded_.empty()) {
        ARROW_ASSIGN_OR_RAISE(renamed, Decoded(*renamed, chunk.schema));
      }
      ARROW_ASSIGN_OR_RAISE(int64_t bytes, arrow::util::ReferencedBufferSize(*renamed));
      chunk.bytes += bytes;
      chunk.batches.push_back(std::move(renamed));
    }
    return chunk;
  }

  // The plan's read relation: the object's columns named in the base schema,
  // decoded slice by slice on this thread by one reader that every chunk
  // continues (opened at the first slice, once the plan's filter is known:
  // zones it excludes are not decoded), with the push-back budget and the
  // chunk's end checked between slices.
  arrow::Result<Declaration> ObjectSource(const arrow::Schema& schema) {
    if (!reader_) {
      // Only the column groups holding the plan's columns are opened.
      const auto names = schema.field_names();
      ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object_, resources_->pool(), &names));
      std::vector<int> fields;
      arrow::FieldVector requested;
      for (const auto& field : schema.fields()) {
        ARROW_ASSIGN_OR_RAISE(int index, FindObjectField(*reader_->schema(), *field));
        fields.push_back(index);
        requested.push_back(reader_->schema()->field(index)->WithType(field->type()));
      }
      fields_ = std::move(fields);
      requested_ = arrow::schema(std::move(requested));
      read_schema_ = requested_;
    }
    auto generator = [this]() -> arrow::Future<SourceBatch> {
      if (chunk_rows_ > 0) {
        auto within_budget = budget_.AfterSlice();
        if (!within_budget.ok()) {
          pushed_back_ = true;
          pushed_back_status_ = within_budget;
          return arrow::Future<SourceBatch>::MakeFinished(within_budget);
        }
        if (chunk_bytes_ >= kChunkBytes || chunk_slices_ >= kChunkSlices ||
            resources_->OutOfTime()) {
          return arrow::Future<SourceBatch>::MakeFinished(SourceBatch{});  // the chunk ends
        }
      }
      if (!rows_) {
        auto opened =
            FilteredRows::Open(object_, reader_.get(), filter_ ? &*filter_ : nullptr, fields_,
                               options_.batch_size, options_.start_row, resources_);
        if (!opened.ok()) return arrow::Future<SourceBatch>::MakeFinished(opened.status());
        rows_.emplace(std::move(*opened));
      }
      auto batch = rows_->Next();
      if (!batch.ok()) return arrow::Future<SourceBatch>::MakeFinished(batch.status());
      if (*batch == nullptr) {
        exhausted_ = true;
        return arrow::Future<SourceBatch>::MakeFinished(SourceBatch{});
      }
      chunk_rows_ += (*batch)->num_rows();
      ++chunk_slices_;
      auto bytes = arrow::util::ReferencedBufferSize(**batch);
      chunk_bytes_ += bytes.ok() ? *bytes : kChunkBytes;
      auto coded = Encoded(*batch);
      if (!coded.ok()) return arrow::Future<SourceBatch>::MakeFinished(coded.status());
      auto converted = AsRequested(*coded, read_schema_, resources_->exec_context());
      if (!converted.ok()) return arrow::Future<SourceBatch>::MakeFinished(converted.status());
      return arrow::Future<SourceBatch>::MakeFinished(
          SourceBatch(arrow::compute::ExecBatch(**converted)));
    };
    arrow::acero::SourceNodeOptions options(read_schema_, std::move(generator),
                                            arrow::Ordering::Implicit());
    return Declaration("source", std::move(options));
  }

  // Columns the aggregate only groups on, decoded as dictionaries, are read as
  // object-wide codes and grouped on those (DictionaryCodes); the keys turn
  // back into text in the output. Decided at the first chunk.
  arrow::Status GroupOnCodes(Declaration* input) {
    Declaration* read = ReadOf(input);
    if (read == nullptr) return arrow::Status::OK();
    if (!codes_decided_) {
      codes_decided_ = true;
      std::vector<PlanAggregate::GroupedOnly> candidates;
      std::vector<int> fields;
      for (auto& column : aggregate_->GroupedOnlyColumns(*input)) {
        // Only text read as stored: the codes decode to the stored type. The
        // plan is not bound yet: a column it names past the read is its error.
        if (column.read_column >= static_cast<int>(fields_.size())) continue;
        const int field = fields_[static_cast<size_t>(column.read_column)];
        const auto& type = reader_->schema()->field(field)->type();
        if (!type->Equals(*requested_->field(column.read_column)->type())) continue;
        fields.push_back(field);
        candidates.push_back(std::move(column));
      }
      const auto kept = reader_->KeepDictionaries(fields);
      for (auto& column : candidates) {
        const int field = fields_[static_cast<size_t>(column.read_column)];
        if (std::find(kept.begin(), kept.end(), field) == kept.end()) continue;
        ARROW_ASSIGN_OR_RAISE(
            read_schema_, read_schema_->SetField(
                              column.read_column,
                              read_schema_->field(column.read_column)->WithType(arrow::int32())));
        coded_.push_back(
            {column.read_column, std::move(column.outputs),
             std::make_unique<DictionaryCodes>(requested_->field(column.read_column)->type(),
                                               resources_->pool(), kMaxCodes, kMaxCodeBytes)});
      }
    }
    static_cast<arrow::acero::SourceNodeOptions&>(*read->options).output_schema = read_schema_;
    return arrow::Status::OK();
  }

  // A batch of the object's rows with the coded columns as codes.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Encoded(
      const std::shared_ptr<arrow::RecordBatch>& batch) {
    if (coded_.empty()) return batch;
    if (batch->num_columns() != read_schema_->num_fields()) {
      return arrow::Status::Invalid("a batch of ", batch->num_columns(), " columns for ",
                                    read_schema_->num_fields(), " read");
    }
    arrow::ArrayVector columns = batch->columns();
    for (const auto& coded : coded_) {
      auto& column = columns[static_cast<size_t>(coded.read_column)];  // fields_ holds it
      auto codes = coded.codes->Encode(*column);
      if (!codes.ok()) {
        if (CodeOf(codes.status()) != ErrorCode::kInternal) return codes.status();
        return Error(ErrorCode::kCorruptObject,
                     "object is not a readable partition: ", codes.status().message());
      }
      column = std::move(*codes);
    }
    return arrow::RecordBatch::Make(read_schema_, batch->num_rows(), std::move(columns));
  }

  // An output batch in the plan's schema: the coded keys as text again.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Decoded(
      const arrow::RecordBatch& batch, const std::shared_ptr<arrow::Schema>& schema) const {
    arrow::ArrayVector columns = batch.columns();
    for (const auto& coded : coded_) {
      for (int output : coded.outputs) {  // the schema's fields, SetField checked
        ARROW_ASSIGN_OR_RAISE(columns[static_cast<size_t>(output)],
                              coded.codes->Decode(*columns[output], resources_->exec_context()));
      }
    }
    return arrow::RecordBatch::Make(schema, batch.num_rows(), std::move(columns));
  }

  PlanRequest request_;
  CallResources* resources_;
  ResultOptions options_;
  SliceBudget budget_;
  ObjectContext* object_ = nullptr;
  std::unique_ptr<ObjectReader> reader_;
  std::unique_ptr<ResultWriter> writer_;
  std::optional<PlanAggregate> aggregate_;
  std::vector<int> fields_;                     // the object's fields the plan reads
  std::shared_ptr<arrow::Schema> requested_;    // the plan's read schema, as the object's fields
  std::shared_ptr<arrow::Schema> read_schema_;  // requested_ with coded columns as int32
  struct Coded {
    int read_column;
    std::vector<int> outputs;  // of the plan, which the column's key becomes
    std::unique_ptr<DictionaryCodes> codes;
  };
  bool codes_decided_ = false;
  std::vector<Coded> coded_;
  std::optional<arrow::engine::BoundExpressions> filter_;
  std::optional<FilteredRows> rows_;
  int64_t chunk_rows_ = 0;
  int64_t chunk_slices_ = 0;
  int64_t chunk_bytes_ = 0;
  bool exhausted_ = false;
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
