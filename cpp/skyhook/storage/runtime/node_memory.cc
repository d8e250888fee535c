#include "skyhook/storage/runtime/node_memory.h"

#include "skyhook/protocol/error.h"

namespace skyhook {

NodeMemory* NodeMemory::Process() {
  static auto* node = new NodeMemory();
  return node;
}

arrow::Status NodeMemory::Reserve(int64_t size, int64_t limit) {
  int64_t now = held_.fetch_add(size) + size;
  if (size > 0 && now > limit) {
    held_.fetch_sub(size);
    return Error(ErrorCode::kLimitExceeded,
                 "the node's calls together need more than its limit of ", limit >> 20,
                 " MiB of memory");
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
