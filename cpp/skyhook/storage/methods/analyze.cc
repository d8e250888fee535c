#include "skyhook/storage/methods/analyze.h"

#include "skyhook/protocol/describe_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/omap_value.h"
#include "skyhook/storage/secondary/secondary_design.h"
#include "skyhook/storage/secondary/zone_statistics.h"

namespace skyhook {
namespace {

class AnalyzeExecution {
 public:
  static constexpr bool kPushesBackOverLimits = false;  // only storage can write its omap

  // A frame without fields, like describe's.
  AnalyzeExecution(DescribeRequest, CallResources* resources) : resources_(resources) {}

  arrow::Status Run(MutableObjectContext* object, const InFlightCall&, Reply*) {
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, resources_->pool()));
    ARROW_ASSIGN_OR_RAISE(auto statistics, ComputeZoneStatistics(reader_.get(), resources_));
    ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
    ARROW_ASSIGN_OR_RAISE(auto value, EncodeOmapValue(*statistics, identity));
    rows_ = reader_->num_rows();
    zones_ = statistics->num_rows() - 1;
    return object->SetOmap(kStatisticsKey, value);
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"num_rows", rows_},
                         {"zones", zones_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  CallResources* resources_;
  std::unique_ptr<ObjectReader> reader_;
  int64_t rows_ = 0;
  int64_t zones_ = 0;
};

}  // namespace

Reply Analyze(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<DescribeRequest, AnalyzeExecution>(object, request);
}

}  // namespace skyhook
