#include "skyhook/storage/methods/secondary_design_method.h"

#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_nested.h>
#include <arrow/array/builder_primitive.h>

#include "skyhook/protocol/describe_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/statistics_reply.h"
#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/omap_value.h"
#include "skyhook/storage/secondary/secondary_design.h"
#include "skyhook/storage/secondary/zone_statistics.h"

namespace skyhook {
namespace {

arrow::Result<std::shared_ptr<arrow::Array>> Names(const std::vector<std::string>& names) {
  arrow::ListBuilder list(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  auto* values = static_cast<arrow::StringBuilder*>(list.value_builder());
  ARROW_RETURN_NOT_OK(list.Append());
  for (const auto& name : names) ARROW_RETURN_NOT_OK(values->Append(name));
  return list.Finish();
}

class SecondaryDesignExecution {
 public:
  static constexpr bool kPushesBackOverLimits = false;

  SecondaryDesignExecution(DescribeRequest, CallResources* resources) : resources_(resources) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall&, Reply* reply) {
    ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(object, resources_->pool()));
    ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
    ARROW_ASSIGN_OR_RAISE(auto indexed, IndexedColumns(object));
    std::vector<std::string> fresh, stale;
    for (const auto& column : indexed) {
      ARROW_ASSIGN_OR_RAISE(auto header, object->GetOmap(IndexHeaderKey(column)));
      bool current = false;
      if (header) {
        ARROW_ASSIGN_OR_RAISE(auto batch, DecodeOmapValue(*header, IndexHeaderKey(column)));
        current = DescribesData(*batch, identity);
      }
      (current ? fresh : stale).push_back(column);
    }
    ARROW_ASSIGN_OR_RAISE(auto stored, object->GetOmap(kStatisticsKey));
    ARROW_ASSIGN_OR_RAISE(auto statistics, LoadZoneStatistics(object, *reader->schema(), identity));
    arrow::BinaryBuilder value;
    ARROW_RETURN_NOT_OK(statistics ? value.Append(*stored) : value.AppendNull());
    arrow::BooleanBuilder stale_statistics;
    ARROW_RETURN_NOT_OK(stale_statistics.Append(stored && !statistics));
    ARROW_ASSIGN_OR_RAISE(auto fresh_names, Names(fresh));
    ARROW_ASSIGN_OR_RAISE(auto stale_names, Names(stale));
    ARROW_ASSIGN_OR_RAISE(auto value_array, value.Finish());
    ARROW_ASSIGN_OR_RAISE(auto stale_array, stale_statistics.Finish());
    auto row = arrow::RecordBatch::Make(
        arrow::schema({arrow::field("indexes", fresh_names->type()),
                       arrow::field("stale_indexes", stale_names->type()),
                       arrow::field("statistics", arrow::binary()),
                       arrow::field("statistics_stale", arrow::boolean())}),
        1, {fresh_names, stale_names, value_array, stale_array});
    ARROW_ASSIGN_OR_RAISE(reply->body, StatisticsReplyBody(row, resources_->limits()));
    return arrow::Status::OK();
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  CallResources* resources_;
};

}  // namespace

Reply DescribeSecondaryDesign(ObjectContext* object,
                              const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<DescribeRequest, SecondaryDesignExecution>(object, request);
}

}  // namespace skyhook
