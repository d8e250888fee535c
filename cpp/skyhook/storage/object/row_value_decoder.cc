#include "skyhook/storage/object/row_value_decoder.h"

#include <cstdint>
#include <limits>
#include <type_traits>

#include <arrow/builder.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

const char* FlexTypeName(flexbuffers::Type type) {
  switch (type) {
    case flexbuffers::FBT_NULL:
      return "null";
    case flexbuffers::FBT_INT:
      return "int";
    case flexbuffers::FBT_UINT:
      return "uint";
    case flexbuffers::FBT_FLOAT:
      return "float";
    case flexbuffers::FBT_BOOL:
      return "bool";
    case flexbuffers::FBT_STRING:
      return "string";
    case flexbuffers::FBT_BLOB:
      return "blob";
    case flexbuffers::FBT_VECTOR:
      return "vector";
    default:
      return "another type";
  }
}

arrow::Status Expect(const flexbuffers::Reference& value, flexbuffers::Type expected,
                     const arrow::DataType& type) {
  if (value.GetType() == expected) return arrow::Status::OK();
  return Error(ErrorCode::kCorruptObject, "a FlexBuffers ", FlexTypeName(value.GetType()),
               " where ", type.ToString(), " is stored as ", FlexTypeName(expected));
}

arrow::Status OutOfRange(const arrow::DataType& type) {
  return Error(ErrorCode::kCorruptObject, "an integer out of the range of ", type.ToString());
}

// Integers and temporal types from Int, unsigned integers and float16 from UInt.
template <typename BuilderType>
arrow::Status AppendInteger(const flexbuffers::Reference& value, const arrow::DataType& type,
                            arrow::ArrayBuilder* builder) {
  using CType = typename BuilderType::value_type;
  constexpr bool kSigned = std::is_signed_v<CType>;
  ARROW_RETURN_NOT_OK(Expect(value, kSigned ? flexbuffers::FBT_INT : flexbuffers::FBT_UINT, type));
  if constexpr (kSigned) {
    const int64_t number = value.AsInt64();
    if (number < std::numeric_limits<CType>::min() || number > std::numeric_limits<CType>::max()) {
      return OutOfRange(type);
    }
    return static_cast<BuilderType*>(builder)->Append(static_cast<CType>(number));
  } else {
    const uint64_t number = value.AsUInt64();
    if (number > std::numeric_limits<CType>::max()) return OutOfRange(type);
    return static_cast<BuilderType*>(builder)->Append(static_cast<CType>(number));
  }
}

template <typename BuilderType>
arrow::Status AppendText(const flexbuffers::Reference& value, const arrow::DataType& type,
                         arrow::ArrayBuilder* builder) {
  ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_STRING, type));
  const auto text = value.AsString();
  return static_cast<BuilderType*>(builder)->Append(text.c_str(), text.length());
}

template <typename BuilderType>
arrow::Status AppendBlob(const flexbuffers::Reference& value, const arrow::DataType& type,
                         arrow::ArrayBuilder* builder) {
  ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_BLOB, type));
  const auto blob = value.AsBlob();
  return static_cast<BuilderType*>(builder)->Append(blob.data(), blob.size());
}

// Fixed-size binaries and decimals: a blob of exactly their width.
arrow::Status AppendFixedWidth(const flexbuffers::Reference& value, const arrow::DataType& type,
                               arrow::ArrayBuilder* builder) {
  ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_BLOB, type));
  const auto blob = value.AsBlob();
  if (static_cast<int64_t>(blob.size()) != type.byte_width()) {
    return Error(ErrorCode::kCorruptObject, "a blob of ", blob.size(), " bytes where ",
                 type.ToString(), " takes ", type.byte_width());
  }
  return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(blob.data());
}

arrow::Result<flexbuffers::Vector> Elements(const flexbuffers::Reference& value,
                                            const arrow::DataType& type) {
  ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_VECTOR, type));
  return value.AsVector();
}

arrow::Status CheckArity(const flexbuffers::Vector& elements, int64_t expected,
                         const arrow::DataType& type) {
  if (static_cast<int64_t>(elements.size()) == expected) return arrow::Status::OK();
  return Error(ErrorCode::kCorruptObject, "a vector of ", elements.size(), " values where ",
               type.ToString(), " has ", expected);
}

template <typename BuilderType>
arrow::Status AppendList(const flexbuffers::Reference& value, const arrow::DataType& type,
                         arrow::ArrayBuilder* builder) {
  ARROW_ASSIGN_OR_RAISE(auto elements, Elements(value, type));
  const auto& list_type = static_cast<const arrow::BaseListType&>(type);
  if (type.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& fixed = static_cast<const arrow::FixedSizeListType&>(type);
    ARROW_RETURN_NOT_OK(CheckArity(elements, fixed.list_size(), type));
  }
  auto* list = static_cast<BuilderType*>(builder);
  ARROW_RETURN_NOT_OK(list->Append());
  for (size_t i = 0; i < elements.size(); ++i) {
    ARROW_RETURN_NOT_OK(DecodeValue(elements[i], *list_type.value_field(), list->value_builder()));
  }
  return arrow::Status::OK();
}

arrow::Status AppendStruct(const flexbuffers::Reference& value, const arrow::DataType& type,
                           arrow::ArrayBuilder* builder) {
  ARROW_ASSIGN_OR_RAISE(auto elements, Elements(value, type));
  ARROW_RETURN_NOT_OK(CheckArity(elements, type.num_fields(), type));
  auto* fields = static_cast<arrow::StructBuilder*>(builder);
  ARROW_RETURN_NOT_OK(fields->Append());
  for (int i = 0; i < type.num_fields(); ++i) {
    ARROW_RETURN_NOT_OK(DecodeValue(elements[i], *type.field(i), fields->field_builder(i)));
  }
  return arrow::Status::OK();
}

arrow::Status AppendNonNull(const flexbuffers::Reference& value, const arrow::DataType& type,
                            arrow::ArrayBuilder* builder) {
  switch (type.id()) {
    case arrow::Type::BOOL:
      ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_BOOL, type));
      return static_cast<arrow::BooleanBuilder*>(builder)->Append(value.AsBool());
    case arrow::Type::INT8:
      return AppendInteger<arrow::Int8Builder>(value, type, builder);
    case arrow::Type::INT16:
      return AppendInteger<arrow::Int16Builder>(value, type, builder);
    case arrow::Type::INT32:
      return AppendInteger<arrow::Int32Builder>(value, type, builder);
    case arrow::Type::INT64:
      return AppendInteger<arrow::Int64Builder>(value, type, builder);
    case arrow::Type::UINT8:
      return AppendInteger<arrow::UInt8Builder>(value, type, builder);
    case arrow::Type::UINT16:
      return AppendInteger<arrow::UInt16Builder>(value, type, builder);
    case arrow::Type::UINT32:
      return AppendInteger<arrow::UInt32Builder>(value, type, builder);
    case arrow::Type::UINT64:
      return AppendInteger<arrow::UInt64Builder>(value, type, builder);
    case arrow::Type::HALF_FLOAT:
      return AppendInteger<arrow::HalfFloatBuilder>(value, type, builder);
    case arrow::Type::DATE32:
      return AppendInteger<arrow::Date32Builder>(value, type, builder);
    case arrow::Type::DATE64:
      return AppendInteger<arrow::Date64Builder>(value, type, builder);
    case arrow::Type::TIME32:
      return AppendInteger<arrow::Time32Builder>(value, type, builder);
    case arrow::Type::TIME64:
      return AppendInteger<arrow::Time64Builder>(value, type, builder);
    case arrow::Type::TIMESTAMP:
      return AppendInteger<arrow::TimestampBuilder>(value, type, builder);
    case arrow::Type::DURATION:
      return AppendInteger<arrow::DurationBuilder>(value, type, builder);
    case arrow::Type::FLOAT:
      ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_FLOAT, type));
      return static_cast<arrow::FloatBuilder*>(builder)->Append(value.AsFloat());
    case arrow::Type::DOUBLE:
      ARROW_RETURN_NOT_OK(Expect(value, flexbuffers::FBT_FLOAT, type));
      return static_cast<arrow::DoubleBuilder*>(builder)->Append(value.AsDouble());
    case arrow::Type::STRING:
      return AppendText<arrow::StringBuilder>(value, type, builder);
    case arrow::Type::LARGE_STRING:
      return AppendText<arrow::LargeStringBuilder>(value, type, builder);
    case arrow::Type::STRING_VIEW:
      return AppendText<arrow::StringViewBuilder>(value, type, builder);
    case arrow::Type::BINARY:
      return AppendBlob<arrow::BinaryBuilder>(value, type, builder);
    case arrow::Type::LARGE_BINARY:
      return AppendBlob<arrow::LargeBinaryBuilder>(value, type, builder);
    case arrow::Type::BINARY_VIEW:
      return AppendBlob<arrow::BinaryViewBuilder>(value, type, builder);
    case arrow::Type::FIXED_SIZE_BINARY:
    case arrow::Type::DECIMAL32:
    case arrow::Type::DECIMAL64:
    case arrow::Type::DECIMAL128:
    case arrow::Type::DECIMAL256:
      return AppendFixedWidth(value, type, builder);
    case arrow::Type::LIST:
      return AppendList<arrow::ListBuilder>(value, type, builder);
    case arrow::Type::LARGE_LIST:
      return AppendList<arrow::LargeListBuilder>(value, type, builder);
    case arrow::Type::FIXED_SIZE_LIST:
      return AppendList<arrow::FixedSizeListBuilder>(value, type, builder);
    case arrow::Type::STRUCT:
      return AppendStruct(value, type, builder);
    default:  // the reader refuses other types when it opens the object
      return Error(ErrorCode::kCorruptObject, "the row format cannot store ", type.ToString());
  }
}

}  // namespace

arrow::Status DecodeValue(const flexbuffers::Reference& value, const arrow::Field& field,
                          arrow::ArrayBuilder* builder) {
  if (!value.IsNull()) return AppendNonNull(value, *field.type(), builder);
  if (!field.nullable()) {
    return Error(ErrorCode::kCorruptObject, "a null in non-nullable field '", field.name(), "'");
  }
  return builder->AppendNull();
}

}  // namespace skyhook
