#include "skyhook/storage/object/row_value_types.h"

namespace skyhook {

arrow::Status CheckRowValueType(const arrow::DataType& type, bool top_level) {
  switch (type.id()) {
    case arrow::Type::BOOL:
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
    case arrow::Type::HALF_FLOAT:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::DECIMAL32:
    case arrow::Type::DECIMAL64:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
    case arrow::Type::DATE32:
    case arrow::Type::DATE64:
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::DURATION:
      return arrow::Status::OK();
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::FIXED_SIZE_LIST:
    case arrow::Type::STRUCT:
      for (const auto& child : type.fields()) {
        ARROW_RETURN_NOT_OK(CheckRowValueType(*child->type(), false));
      }
      return arrow::Status::OK();
    case arrow::Type::DICTIONARY: {
      const auto& values = *static_cast<const arrow::DictionaryType&>(type).value_type();
      if (top_level && values.num_fields() == 0) return CheckRowValueType(values, false);
      break;
    }
    default:
      break;
  }
  return arrow::Status::Invalid("the row format cannot store ", type.ToString());
}

}  // namespace skyhook
