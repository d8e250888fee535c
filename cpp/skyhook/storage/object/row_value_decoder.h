// Turns one FlexBuffers value of a row object back into an Arrow value, as
// row_value_types.h says each type is stored. The row it comes from is
// verified (flexbuffers::VerifyBuffer), but its values are still hostile:
// every value's FlexBuffers type, range and size is checked before a builder
// sees it.
#pragma once

#include <arrow/array/builder_base.h>
#include <arrow/type.h>
#include <flatbuffers/flexbuffers.h>

namespace skyhook {

/// Appends value to builder, a builder of field's type (for a dictionary
/// field: of its value type). kCorruptObject when the value is not one of
/// that type: another FlexBuffers type, an integer out of the type's range, a
/// blob of another width, a list or struct of the wrong arity, a null in a
/// non-nullable field.
arrow::Status DecodeValue(const flexbuffers::Reference& value, const arrow::Field& field,
                          arrow::ArrayBuilder* builder);

}  // namespace skyhook
