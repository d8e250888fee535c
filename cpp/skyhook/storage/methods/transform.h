// The transform method: rewrites its own object from the design it has to the
// one the request names (format, column groups, sort order, compression),
// replacing the bytes and the skyhook.design attribute in one change, so a
// reader sees the old object or the new one, never a mix.
#pragma once

#include <memory>

#include <arrow/buffer.h>

#include "skyhook/protocol/reply.h"
#include "skyhook/storage/object/mutable_object_context.h"
#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The reply body is the new design attribute (object_design.h); statistics:
/// num_rows, bytes_read, bytes_written, bytes_before (the object's size
/// before), storage_cpu_ns. Errors change nothing: kConflict when the
/// object's generation is not the expected one (or another writer replaced it
/// meanwhile), kUnknownColumn, kInvalidRequest, kNotFound, kCorruptObject,
/// kLimitExceeded (the node's time, memory or object size).
Reply Transform(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

/// The same request checked without rewriting anything (everything but what
/// reading and encoding the data can find): Ceph returns no reply of a
/// method that writes, only its error code, so the RADOS client asks this
/// first for the reason of a refusal. Statistics: bytes_before.
Reply TransformCheck(ObjectContext* object, const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook
