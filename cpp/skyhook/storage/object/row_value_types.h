// The Arrow types a row object ("rows", row_format.fbs) stores, and how each
// is held in FlexBuffers: integers, dates, times, timestamps and durations as
// Int (unsigned integers and float16's bits as UInt), floats as Float, text as
// String, binaries, decimals and fixed-size binaries as Blob, lists and structs
// as untyped Vectors, a dictionary as its values; null as Null.
#pragma once

#include <arrow/status.h>
#include <arrow/type.h>

namespace skyhook {

/// OK when the row format can store a column of this type, otherwise an
/// Invalid status naming the type it cannot store. Dictionaries only at the top
/// level: the reader rebuilds them per batch from their values.
arrow::Status CheckRowValueType(const arrow::DataType& type, bool top_level = true);

}  // namespace skyhook
