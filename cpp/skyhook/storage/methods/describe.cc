#include "skyhook/storage/methods/describe.h"

#include <numeric>
#include <vector>

#include "skyhook/protocol/describe_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/statistics_reply.h"
#include "skyhook/storage/statistics/table_statistics.h"

namespace skyhook {
namespace {

class DescribeExecution {
 public:
  // Statistics only storage computes for a writer: over a limit it fails.
  static constexpr bool kPushesBackOverLimits = false;

  DescribeExecution(DescribeRequest, CallResources* resources) : resources_(resources) {}

  arrow::Status Run(ObjectContext* object, const InFlightCall&, Reply* reply) {
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, resources_->pool()));
    std::vector<int> all_fields(reader_->schema()->num_fields());
    std::iota(all_fields.begin(), all_fields.end(), 0);
    ARROW_ASSIGN_OR_RAISE(auto batches, reader_->ReadFields(all_fields, 64 * 1024));
    TableStatistics statistics(reader_->schema(), resources_->exec_context());
    while (true) {
      if (resources_->OutOfTime()) {
        return Error(ErrorCode::kLimitExceeded,
                     "describing the object takes longer than the "
                     "node's limit of ",
                     resources_->limits().max_call_ms, " ms per call");
      }
      ARROW_ASSIGN_OR_RAISE(auto batch, batches->Next());
      if (batch == nullptr) break;
      auto updated = statistics.Update(*batch);
      rows_ = statistics.num_rows();
      ARROW_RETURN_NOT_OK(updated);
    }
    ARROW_ASSIGN_OR_RAISE(auto row, statistics.Finish());
    ARROW_ASSIGN_OR_RAISE(reply->body, StatisticsReplyBody(row, resources_->limits()));
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
