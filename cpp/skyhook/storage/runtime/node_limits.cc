#include "skyhook/storage/runtime/node_limits.h"

#include <algorithm>
#include <cstdlib>

namespace skyhook {
namespace {

int64_t FromEnvironment(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(value, &end, 10);
  return (end && *end == '\0' && parsed >= 0) ? parsed : fallback;
}

constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

NodeLimits NodeLimits::FromEnvironment() {
  return NodeLimits{
      .max_call_ms = std::max<int64_t>(1, skyhook::FromEnvironment("SKYHOOK_MAX_CALL_MS", 5000)),
      .max_call_memory_bytes =
          std::max<int64_t>(1, skyhook::FromEnvironment("SKYHOOK_MAX_CALL_MEMORY_MB", 1024)) * kMiB,
      .max_node_memory_bytes =
          std::max<int64_t>(1, skyhook::FromEnvironment("SKYHOOK_MAX_NODE_MEMORY_MB", 4096)) * kMiB,
      .max_reply_bytes =
          std::max<int64_t>(1, skyhook::FromEnvironment("SKYHOOK_MAX_REPLY_MB", 256)) * kMiB,
      .min_batch_size =
          std::max<int64_t>(1, skyhook::FromEnvironment("SKYHOOK_MIN_BATCH_SIZE", 1024)),
      .max_in_flight = skyhook::FromEnvironment("SKYHOOK_MAX_IN_FLIGHT", 64),
      .max_slice_cpu_ns = skyhook::FromEnvironment("SKYHOOK_MAX_SLICE_CPU_MS", 0) * 1000000,
      .retained_memory_bytes = skyhook::FromEnvironment("SKYHOOK_RETAINED_MEMORY_MB", 64) * kMiB,
      .mapped_object_bytes = skyhook::FromEnvironment("SKYHOOK_MAPPED_OBJECTS_MB", 1024) * kMiB,
      .parsed_footer_bytes = skyhook::FromEnvironment("SKYHOOK_PARSED_FOOTERS_MB", 64) * kMiB,
  };
}

void NodeLimits::Report(std::vector<std::pair<std::string, int64_t>>* statistics) const {
  statistics->emplace_back("limit_call_ms", max_call_ms);
  statistics->emplace_back("limit_call_memory_bytes", max_call_memory_bytes);
  statistics->emplace_back("limit_node_memory_bytes", max_node_memory_bytes);
  statistics->emplace_back("limit_reply_bytes", max_reply_bytes);
  statistics->emplace_back("limit_min_batch_size", min_batch_size);
}

}  // namespace skyhook
