// The client's plain reads: the parts of an object the client read (byte
// ranges and attributes) served as an object context, the zones and byte
// ranges a read needs (from the footer's statistics), and the object decoded
// by the core's one reader of any design, the filter applied where it can be
// here. The embedded extension (cpp/adapters/embedded/module.cc) lends these
// to Python for both backends' plain reads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include "skyhook/storage/object/object_context.h"

namespace skyhook {

// A read is served from the parts that cover it without a gap (a view of one,
// else a copy), and is short where they end, as a read past an object would
// be; bytes no part holds are an IOError.
class ReadParts : public ObjectContext {
 public:
  ReadParts(uint64_t size, std::optional<std::string> design, std::optional<std::string> format)
      : size_(size), design_(std::move(design)), format_(std::move(format)) {}

  // Parts may overlap and come in any order.
  void Add(uint64_t offset, std::shared_ptr<arrow::Buffer> bytes);

  arrow::Result<uint64_t> Size() override { return size_; }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(uint64_t offset, uint64_t length) override;
  arrow::Result<std::optional<std::string>> GetXattr(const std::string& name) override;
  // A plain read decodes the object's bytes only; zones and indexes are storage's.
  arrow::Result<std::optional<std::string>> GetOmap(const std::string&) override {
    return std::nullopt;
  }

 private:
  using Part = std::pair<uint64_t, std::shared_ptr<arrow::Buffer>>;

  uint64_t size_;
  std::optional<std::string> design_, format_;
  std::vector<Part> parts_;  // by offset
};

// A filter the client serialized (arrow::compute::Serialize: pyarrow pickles
// expressions so) bound to the dataset's schema (an Arrow IPC schema).
struct DatasetFilter {
  arrow::compute::Expression expression;
  std::shared_ptr<arrow::Schema> schema;
};

// nullopt when either is absent or they cannot be read or bound: then no zone
// is excluded and the client filters.
std::optional<DatasetFilter> BoundFilter(const std::shared_ptr<arrow::Buffer>& filter,
                                         const std::shared_ptr<arrow::Buffer>& schema);

struct Decoded {
  std::shared_ptr<arrow::Buffer> object_schema;  // as opened (Arrow IPC)
  std::shared_ptr<arrow::RecordBatchReader> batches;
  int64_t rows = 0;       // decoded, before the filter
  int64_t bytes = 0;      // the same, in Arrow's buffers
  bool filtered = false;  // the batches hold only the rows the filter keeps
};

// The object's columns (all when none given), decoded; the batches may be
// views of the bytes read. With row_groups (ascending), only those zones are
// decoded; with a filter, only the rows it keeps where it can be evaluated
// here (every column it reads decoded once with the dataset's type).
arrow::Result<Decoded> DecodeObject(ObjectContext* object,
                                    const std::optional<std::vector<std::string>>& columns,
                                    const std::optional<std::vector<int>>& row_groups,
                                    const std::optional<DatasetFilter>& filter);

using ByteRanges = std::vector<std::pair<uint64_t, uint64_t>>;  // (offset, length)
// The zones to decode, their byte ranges, and whether statistics prove the
// filter holds for every row of them.
using ZonesToRead = std::tuple<std::vector<int>, ByteRanges, bool>;

// The zones a plain read of columns decodes (from the object's footer: only
// those its statistics leave the filter able to match) and the byte ranges it
// reads for them; nullopt when the reader cannot tell the ranges (formats
// other than Parquet, column groups).
arrow::Result<std::optional<ZonesToRead>> PlanZones(
    ObjectContext* object, const std::optional<std::vector<std::string>>& columns,
    const std::optional<DatasetFilter>& filter);

}  // namespace skyhook
