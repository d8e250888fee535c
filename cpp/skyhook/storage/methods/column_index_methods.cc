#include "skyhook/storage/methods/column_index_methods.h"

#include <algorithm>

#include "skyhook/protocol/column_request.h"
#include "skyhook/storage/methods/execution.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/secondary_design.h"

namespace skyhook {
namespace {

class IndexExecution {
 public:
  static constexpr bool kPushesBackOverLimits = false;  // only storage can write its omap

  IndexExecution(ColumnRequest request, CallResources* resources, bool create)
      : request_(std::move(request)), resources_(resources), create_(create) {}

  arrow::Status Run(MutableObjectContext* object, const InFlightCall&, Reply*) {
    // Opening checks the object exists and is a partition before anything is written.
    ARROW_ASSIGN_OR_RAISE(reader_, ObjectReader::Open(object, resources_->pool()));
    const auto& column = request_.column;
    int field = reader_->schema()->GetFieldIndex(column);
    ARROW_ASSIGN_OR_RAISE(auto indexed, IndexedColumns(object));
    indexed.erase(std::remove(indexed.begin(), indexed.end(), column), indexed.end());
    ARROW_ASSIGN_OR_RAISE(auto old_keys, ColumnIndexKeys(object, column));
    if (!create_)
      return object->UpdateOmap(old_keys, {{kIndexListKey, JoinIndexedColumns(indexed)}});
    if (field < 0) {
      return Error(ErrorCode::kUnknownColumn, "the object has no column '", column, "' to index");
    }
    const auto& type = *reader_->schema()->field(field)->type();
    if (auto why = NotIndexable(type)) {
      return Error(ErrorCode::kTypeMismatch, "column '", column, "' of type ", type.ToString(),
                   " cannot be indexed: ", *why);
    }
    ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
    ARROW_ASSIGN_OR_RAISE(auto entries,
                          BuildColumnIndex(reader_.get(), field, identity, resources_));
    for (const auto& [key, value] : entries) entry_bytes_ += static_cast<int64_t>(value.size());
    blocks_ = static_cast<int64_t>(entries.size()) - 1;
    indexed.push_back(column);
    entries[kIndexListKey] = JoinIndexedColumns(indexed);
    return object->UpdateOmap(old_keys, entries);
  }

  void AddStatistics(Reply* reply, const CpuTimer& timer) const {
    reply->statistics = {{"index_blocks", blocks_},
                         {"index_bytes", entry_bytes_},
                         {"bytes_read", reader_ ? reader_->bytes_read() : 0},
                         {"storage_cpu_ns", timer.ElapsedNanos()}};
  }

 private:
  ColumnRequest request_;
  CallResources* resources_;
  bool create_;
  std::unique_ptr<ObjectReader> reader_;
  int64_t blocks_ = 0;
  int64_t entry_bytes_ = 0;
};

struct CreateIndexExecution : IndexExecution {
  CreateIndexExecution(ColumnRequest request, CallResources* resources)
      : IndexExecution(std::move(request), resources, true) {}
};

struct DropIndexExecution : IndexExecution {
  DropIndexExecution(ColumnRequest request, CallResources* resources)
      : IndexExecution(std::move(request), resources, false) {}
};

}  // namespace

Reply CreateIndex(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<ColumnRequest, CreateIndexExecution>(object, request);
}

Reply DropIndex(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  return RunExecution<ColumnRequest, DropIndexExecution>(object, request);
}

}  // namespace skyhook
