// What one storage node allows a single call, whatever the request asks: a
// storage method runs on an OSD op thread, where a call that runs too long
// gets the OSD marked down and one that allocates without bound takes memory
// from every other tenant. Read from the node's environment at each call (an
// OSD inherits it from its service; Pacific's object-class API has no access
// to ceph.conf), and reported in every reply.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace skyhook {

struct NodeLimits {
  /// Wall time of one call: SKYHOOK_MAX_CALL_MS (default 5000, well below the
  /// OSD's 15 s op-thread warning). A scan or plan stops at a slice boundary
  /// and answers with what it has and where to resume.
  int64_t max_call_ms;
  /// Memory one call may allocate through Arrow: SKYHOOK_MAX_CALL_MEMORY_MB (1024).
  int64_t max_call_memory_bytes;
  /// Memory the node's calls may hold together: SKYHOOK_MAX_NODE_MEMORY_MB
  /// (4096). A call that would pass it is pushed back, as one over its own limit.
  int64_t max_node_memory_bytes;
  /// Size of one reply: SKYHOOK_MAX_REPLY_MB (256). A scan answers with a
  /// continuation before it would grow past it.
  int64_t max_reply_bytes;
  /// Smallest batch a call decodes: SKYHOOK_MIN_BATCH_SIZE (1024 rows);
  /// smaller requested batches are raised to it.
  int64_t min_batch_size;
  /// Push-back defaults: SKYHOOK_MAX_IN_FLIGHT (64) and SKYHOOK_MAX_SLICE_CPU_MS (0: off).
  int64_t max_in_flight;
  int64_t max_slice_cpu_ns;
  // Freed large blocks kept for the next calls, in the whole process
  // (retaining_memory_pool.h; read once, at the first call).
  int64_t retained_memory_bytes;
  // Object files the embedded store's process keeps mapped across calls, in
  // bytes (cpp/adapters/embedded/mapped_objects.h; read once, at the first call).
  int64_t mapped_object_bytes;
  // Parsed Parquet footers kept across calls, in charged bytes
  // (storage/object/parsed_footers.h; read once, at the first call).
  int64_t parsed_footer_bytes;

  static NodeLimits FromEnvironment();

  /// The limits as reply statistics (limit_*), so a client can see them.
  void Report(std::vector<std::pair<std::string, int64_t>>* statistics) const;
};

}  // namespace skyhook
