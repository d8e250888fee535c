#include "skyhook/substrait/type_check.h"

#include <unordered_set>

// pyarrow's producer still writes the deprecated microsecond timestamp kinds.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace skyhook::substrait_check {
namespace {

using Kind = sp::Type::KindCase;

arrow::Status CheckNullability(sp::Type::Nullability nullability) {
  if (!sp::Type::Nullability_IsValid(nullability)) return Reject("invalid nullability");
  return arrow::Status::OK();
}

// The fields of every type message that storage understands; what else a
// type message may carry (user-defined type parameters) is refused.
template <typename T>
arrow::Status CheckCommon(const T& message) {
  ARROW_RETURN_NOT_OK(
      OnlyFields(message, {"nullability", "type_variation_reference", "precision", "scale",
                           "length", "types", "type", "key", "value", "type_reference"}));
  if (message.type_variation_reference() != 0) return Reject("type variations");
  return CheckNullability(message.nullability());
}

arrow::Status CheckLength(int64_t length, const char* what) {
  if (length < 1 || length > Limits::kMaxLiteralBytes) {
    return Reject(what, " length ", length, " outside 1..", Limits::kMaxLiteralBytes);
  }
  return arrow::Status::OK();
}

arrow::Status CheckTimestampPrecision(int32_t precision) {
  // Arrow has second, milli-, micro- and nanosecond units.
  if (precision != 0 && precision != 3 && precision != 6 && precision != 9) {
    return Reject("timestamp precision ", precision, " (expected 0, 3, 6 or 9)");
  }
  return arrow::Status::OK();
}

std::string WithoutSignature(const std::string& name) { return name.substr(0, name.find(':')); }

}  // namespace

arrow::Result<Declarations> Declarations::Check(
    const google::protobuf::RepeatedPtrField<sp::extensions::SimpleExtensionURI>& uris,
    const google::protobuf::RepeatedPtrField<sp::extensions::SimpleExtensionDeclaration>&
        declarations) {
  std::unordered_set<uint32_t> uri_anchors;
  for (const auto& uri : uris) {
    ARROW_RETURN_NOT_OK(OnlyFields(uri, {"extension_uri_anchor", "uri"}));
    if (uri.uri().size() > Limits::kMaxNameBytes) return Reject("an extension URI too long");
    if (!uri_anchors.insert(uri.extension_uri_anchor()).second) {
      return Reject("extension URI anchor ", uri.extension_uri_anchor(), " declared twice");
    }
  }
  Declarations declared;
  for (const auto& declaration : declarations) {
    ARROW_RETURN_NOT_OK(OnlyFields(declaration, {"extension_function", "extension_type"}));
    if (declaration.has_extension_function()) {
      const auto& function = declaration.extension_function();
      ARROW_RETURN_NOT_OK(
          OnlyFields(function, {"extension_uri_reference", "function_anchor", "name"}));
      if (!uri_anchors.count(function.extension_uri_reference())) {
        return Reject("function '", function.name().substr(0, 64), "' names an undeclared URI");
      }
      if (function.name().size() > Limits::kMaxNameBytes ||
          !declared.functions.emplace(function.function_anchor(), WithoutSignature(function.name()))
               .second) {
        return Reject("function anchor ", function.function_anchor(), " declared twice");
      }
    } else if (declaration.has_extension_type()) {
      const auto& type = declaration.extension_type();
      ARROW_RETURN_NOT_OK(OnlyFields(type, {"extension_uri_reference", "type_anchor", "name"}));
      if (!uri_anchors.count(type.extension_uri_reference()) ||
          type.name().size() > Limits::kMaxNameBytes ||
          !declared.types.emplace(type.type_anchor(), type.name()).second) {
        return Reject("an invalid extension type declaration");
      }
    } else {
      return Reject("an empty extension declaration");
    }
  }
  return declared;
}

arrow::Status CheckType(const sp::Type& type, const Declarations& declared, Budget* budget,
                        int depth) {
  ARROW_RETURN_NOT_OK(budget->Visit(depth));
  ARROW_RETURN_NOT_OK(NoUnknownFields(type));
  switch (type.kind_case()) {
    case Kind::kBool:
      return CheckCommon(type.bool_());
    case Kind::kI8:
      return CheckCommon(type.i8());
    case Kind::kI16:
      return CheckCommon(type.i16());
    case Kind::kI32:
      return CheckCommon(type.i32());
    case Kind::kI64:
      return CheckCommon(type.i64());
    case Kind::kFp32:
      return CheckCommon(type.fp32());
    case Kind::kFp64:
      return CheckCommon(type.fp64());
    case Kind::kString:
      return CheckCommon(type.string());
    case Kind::kBinary:
      return CheckCommon(type.binary());
    case Kind::kTimestamp:
      return CheckCommon(type.timestamp());
    case Kind::kTimestampTz:
      return CheckCommon(type.timestamp_tz());
    case Kind::kDate:
      return CheckCommon(type.date());
    case Kind::kTime:
      return CheckCommon(type.time());
    case Kind::kFixedChar:
      ARROW_RETURN_NOT_OK(CheckCommon(type.fixed_char()));
      return CheckLength(type.fixed_char().length(), "fixed char");
    case Kind::kVarchar:
      ARROW_RETURN_NOT_OK(CheckCommon(type.varchar()));
      return CheckLength(type.varchar().length(), "varchar");
    case Kind::kFixedBinary:
      ARROW_RETURN_NOT_OK(CheckCommon(type.fixed_binary()));
      return CheckLength(type.fixed_binary().length(), "fixed binary");
    case Kind::kDecimal: {
      const auto& decimal = type.decimal();
      ARROW_RETURN_NOT_OK(CheckCommon(decimal));
      if (decimal.precision() < 1 || decimal.precision() > 38 || decimal.scale() < 0 ||
          decimal.scale() > decimal.precision()) {
        return Reject("decimal(", decimal.precision(), ", ", decimal.scale(),
                      "): precision must be 1..38 and scale 0..precision");
      }
      return arrow::Status::OK();
    }
    case Kind::kPrecisionTimestamp:
      ARROW_RETURN_NOT_OK(CheckCommon(type.precision_timestamp()));
      return CheckTimestampPrecision(type.precision_timestamp().precision());
    case Kind::kPrecisionTimestampTz:
      ARROW_RETURN_NOT_OK(CheckCommon(type.precision_timestamp_tz()));
      return CheckTimestampPrecision(type.precision_timestamp_tz().precision());
    case Kind::kStruct: {
      ARROW_RETURN_NOT_OK(CheckCommon(type.struct_()));
      if (type.struct_().types_size() > Limits::kMaxFields) return Reject("a struct too wide");
      for (const auto& child : type.struct_().types()) {
        ARROW_RETURN_NOT_OK(CheckType(child, declared, budget, depth + 1));
      }
      return arrow::Status::OK();
    }
    case Kind::kList:
      ARROW_RETURN_NOT_OK(CheckCommon(type.list()));
      if (!type.list().has_type()) return Reject("a list without an element type");
      return CheckType(type.list().type(), declared, budget, depth + 1);
    case Kind::kMap:
      ARROW_RETURN_NOT_OK(CheckCommon(type.map()));
      if (!type.map().has_key() || !type.map().has_value()) return Reject("an incomplete map type");
      ARROW_RETURN_NOT_OK(CheckType(type.map().key(), declared, budget, depth + 1));
      return CheckType(type.map().value(), declared, budget, depth + 1);
    case Kind::kUserDefined: {
      // Arrow names its own types (unsigned integers, large strings, ...) so;
      // parameters could smuggle in any other type, so none are taken.
      const auto& defined = type.user_defined();
      ARROW_RETURN_NOT_OK(CheckCommon(defined));
      if (!declared.types.count(defined.type_reference())) {
        return Reject("user-defined type ", defined.type_reference(), " is not declared");
      }
      return arrow::Status::OK();
    }
    default:
      return Reject("type kind ", static_cast<int>(type.kind_case()), " is not supported");
  }
}

int64_t NamesFor(const sp::Type& type) {
  // Arrow 26 names the fields of structs, but nothing inside lists and maps.
  int64_t names = 1;
  if (type.kind_case() == Kind::kStruct) {
    for (const auto& child : type.struct_().types()) names += NamesFor(child);
  }
  return names;
}

arrow::Result<std::vector<sp::Type>> CheckNamedStruct(const sp::NamedStruct& schema,
                                                      const Declarations& declared,
                                                      Budget* budget) {
  ARROW_RETURN_NOT_OK(OnlyFields(schema, {"names", "struct"}));
  ARROW_RETURN_NOT_OK(OnlyFields(schema.struct_(), {"types", "nullability"}));
  const auto& types = schema.struct_().types();
  if (types.size() > Limits::kMaxFields) return Reject("a schema wider than ", Limits::kMaxFields);
  int64_t names_needed = 0;
  for (const auto& type : types) {
    ARROW_RETURN_NOT_OK(CheckType(type, declared, budget));
    names_needed += NamesFor(type);
  }
  if (names_needed != schema.names_size()) {
    return Reject("a schema with ", schema.names_size(), " names for ", names_needed, " fields");
  }
  // Top-level names are the columns storage decodes: each at most once.
  std::unordered_set<std::string> top_level;
  int position = 0;
  for (const auto& type : types) {
    const auto& name = schema.names(position);
    if (name.size() > Limits::kMaxNameBytes || !top_level.insert(name).second) {
      return Reject("column '", name.substr(0, 64), "' named twice in a schema");
    }
    position += static_cast<int>(NamesFor(type));
  }
  return std::vector<sp::Type>(types.begin(), types.end());
}

namespace {

// The deprecated timestamp kinds are microsecond precision timestamps.
sp::Type Normalized(const sp::Type& type) {
  sp::Type normalized;
  if (type.kind_case() == Kind::kTimestamp) {
    normalized.mutable_precision_timestamp()->set_precision(6);
  } else if (type.kind_case() == Kind::kTimestampTz) {
    normalized.mutable_precision_timestamp_tz()->set_precision(6);
  } else {
    return type;
  }
  return normalized;
}

}  // namespace

bool SameType(const sp::Type& left_type, const sp::Type& right_type) {
  auto left = Normalized(left_type);
  auto right = Normalized(right_type);
  if (left.kind_case() != right.kind_case()) return false;
  switch (left.kind_case()) {
    case Kind::kDecimal:
      return left.decimal().precision() == right.decimal().precision() &&
             left.decimal().scale() == right.decimal().scale();
    case Kind::kPrecisionTimestamp:
      return left.precision_timestamp().precision() == right.precision_timestamp().precision();
    case Kind::kPrecisionTimestampTz:
      return left.precision_timestamp_tz().precision() ==
             right.precision_timestamp_tz().precision();
    case Kind::kFixedChar:
      return left.fixed_char().length() == right.fixed_char().length();
    case Kind::kVarchar:
      return left.varchar().length() == right.varchar().length();
    case Kind::kFixedBinary:
      return left.fixed_binary().length() == right.fixed_binary().length();
    case Kind::kUserDefined:
      return left.user_defined().type_reference() == right.user_defined().type_reference();
    case Kind::kList:
      return SameType(left.list().type(), right.list().type());
    case Kind::kMap:
      return SameType(left.map().key(), right.map().key()) &&
             SameType(left.map().value(), right.map().value());
    case Kind::kStruct: {
      if (left.struct_().types_size() != right.struct_().types_size()) return false;
      for (int i = 0; i < left.struct_().types_size(); ++i) {
        if (!SameType(left.struct_().types(i), right.struct_().types(i))) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

TypeClass ClassOf(const sp::Type& type, const Declarations& declared) {
  switch (type.kind_case()) {
    case Kind::kBool:
      return TypeClass::kBoolean;
    case Kind::kI8:
    case Kind::kI16:
    case Kind::kI32:
    case Kind::kI64:
      return TypeClass::kInteger;
    case Kind::kFp32:
    case Kind::kFp64:
      return TypeClass::kFloating;
    case Kind::kDecimal:
      return TypeClass::kDecimal;
    case Kind::kString:
    case Kind::kVarchar:
    case Kind::kFixedChar:
      return TypeClass::kText;
    case Kind::kBinary:
    case Kind::kFixedBinary:
      return TypeClass::kBinary;
    case Kind::kDate:
      return TypeClass::kDate;
    case Kind::kTime:
      return TypeClass::kTime;
    case Kind::kTimestamp:
    case Kind::kPrecisionTimestamp:
      return TypeClass::kTimestamp;
    case Kind::kTimestampTz:
    case Kind::kPrecisionTimestampTz:
      return TypeClass::kZonedTimestamp;
    case Kind::kStruct:
    case Kind::kList:
    case Kind::kMap:
      return TypeClass::kNested;
    case Kind::kUserDefined: {
      // Arrow's own types, as its producer declares them.
      auto found = declared.types.find(type.user_defined().type_reference());
      if (found == declared.types.end()) return TypeClass::kOther;
      const auto& name = found->second;
      if (name == "u8" || name == "u16" || name == "u32" || name == "u64") {
        return TypeClass::kInteger;
      }
      if (name == "fp16") return TypeClass::kFloating;
      if (name == "large_string") return TypeClass::kText;
      if (name == "large_binary") return TypeClass::kBinary;
      if (name == "date_millis") return TypeClass::kDate;
      if (name == "time_seconds" || name == "time_millis" || name == "time_nanos") {
        return TypeClass::kTime;
      }
      return TypeClass::kOther;
    }
    default:
      return TypeClass::kOther;
  }
}

bool IsNumeric(TypeClass type_class) {
  return type_class == TypeClass::kInteger || type_class == TypeClass::kFloating ||
         type_class == TypeClass::kDecimal;
}

bool Comparable(TypeClass left, TypeClass right) {
  if (left == TypeClass::kNested || left == TypeClass::kOther) return false;
  return left == right || (IsNumeric(left) && IsNumeric(right));
}

sp::Type BooleanType() {
  sp::Type type;
  type.mutable_bool_()->set_nullability(sp::Type::NULLABILITY_NULLABLE);
  return type;
}

}  // namespace skyhook::substrait_check
