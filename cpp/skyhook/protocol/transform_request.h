// The request of the transform method: the design to rewrite the object to
// and the generation of the design the client saw (README.md beside this file).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <arrow/buffer.h>
#include <arrow/result.h>

#include "skyhook/protocol/scan_request.h"

namespace skyhook {

struct TransformRequest {
  /// A skyhook.design attribute value in request form: groups by their
  /// columns, no extents (storage/object/object_design.h parses it).
  std::shared_ptr<arrow::Buffer> design;
  /// The object is rewritten only while its design has this generation.
  int64_t expected_generation = 0;
  /// The rows the new object holds: those a scan request's filter keeps, as its
  /// projection computes them, which must give the object's own columns and
  /// types (a delete or an update made in storage); nullopt: every row as it is.
  std::optional<ScanRequest> rows;

  /// kInvalidRequest for a missing or malformed field.
  static arrow::Result<TransformRequest> Decode(const std::shared_ptr<arrow::Buffer>& message);
};

}  // namespace skyhook
