#include "skyhook/storage/object/replacement_view.h"

#include <algorithm>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

arrow::Status Refused() {
  return Error(ErrorCode::kInternal, "a replacement's bytes are written by its rewrite only");
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> ReplacementView::Read(uint64_t offset,
                                                                    uint64_t length) {
  const auto size = static_cast<uint64_t>(data_->size());
  if (offset > size) return arrow::Status::IOError("read at ", offset, " past ", size, " bytes");
  return arrow::SliceBuffer(data_, static_cast<int64_t>(offset),
                            static_cast<int64_t>(std::min(length, size - offset)));
}

arrow::Result<std::optional<std::string>> ReplacementView::GetXattr(const std::string& name) {
  auto replaced = attributes_.find(name);
  if (replaced != attributes_.end()) return replaced->second;
  return object_->GetXattr(name);
}

arrow::Status ReplacementView::ReplaceObject(const arrow::Buffer&,
                                             const std::map<std::string, std::string>&,
                                             const AttributeGuard&) {
  return Refused();
}
arrow::Status ReplacementView::WriteFull(const arrow::Buffer&) { return Refused(); }
arrow::Status ReplacementView::Append(const arrow::Buffer&) { return Refused(); }
arrow::Status ReplacementView::Truncate(uint64_t) { return Refused(); }
arrow::Status ReplacementView::SetXattr(const std::string&, const std::string&) {
  return Refused();
}

}  // namespace skyhook
