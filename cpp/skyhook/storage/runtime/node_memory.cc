#include "skyhook/storage/runtime/node_memory.h"

#include "skyhook/errors/error.h"

namespace skyhook {

NodeMemory* NodeMemory::Process() {
  static auto* node = new NodeMemory();
  return node;
}

arrow::Status NodeMemory::Reserve(int64_t size, int64_t limit) {
  if (size <= 0) {
    held_.fetch_add(size);
    return arrow::Status::OK();
  }
  // Compared before it is added: a refused request never shows in the count
  // that concurrent calls check, and a huge size cannot wrap it.
  int64_t held = held_.load();
  do {
    if (size > limit - held) {
      return Error(ErrorCode::kLimitExceeded,
                   "the node's calls together need more than its limit of ", limit >> 20,
                   " MiB of memory");
    }
  } while (!held_.compare_exchange_weak(held, held + size));
  return arrow::Status::OK();
}

}  // namespace skyhook
