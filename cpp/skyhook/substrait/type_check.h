// Checks of Substrait types and of the extension declarations that name
// functions and user-defined types, and the type predicates expression checks
// use. Every type a request carries passes here: a decimal precision outside
// 1..38 anywhere makes Arrow abort.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "proto/extensions/extensions.pb.h"
#include "proto/type.pb.h"
#include "skyhook/substrait/checks.h"

namespace skyhook::substrait_check {

namespace sp = ::proto;  // the generated Substrait classes

/// The extension functions and types a request declares, by anchor.
struct Declarations {
  std::unordered_map<uint32_t, std::string> functions;  // name without its signature
  std::unordered_map<uint32_t, std::string> types;

  static arrow::Result<Declarations> Check(
      const google::protobuf::RepeatedPtrField<sp::extensions::SimpleExtensionURI>& uris,
      const google::protobuf::RepeatedPtrField<sp::extensions::SimpleExtensionDeclaration>&
          declarations);
};

arrow::Status CheckType(const sp::Type& type, const Declarations& declared, Budget* budget,
                        int depth = 0);

/// The column types of a schema, checked, with names that Arrow can pair with
/// them one to one and top-level names that are unique.
arrow::Result<std::vector<sp::Type>> CheckNamedStruct(const sp::NamedStruct& schema,
                                                      const Declarations& declared, Budget* budget);

/// How many names a NamedStruct spends on a column of this type (itself and,
/// depth first, the fields of structs directly inside it).
int64_t NamesFor(const sp::Type& type);

/// Equal types, ignoring nullability.
bool SameType(const sp::Type& left, const sp::Type& right);

/// Types that Arrow's kernels treat alike: comparisons and arithmetic take
/// two arguments of one class (numbers of any class together), casting them
/// to a common type as Arrow's implicit casts do.
enum class TypeClass {
  kBoolean,
  kInteger,
  kFloating,
  kDecimal,
  kText,
  kBinary,
  kDate,
  kTime,
  kTimestamp,
  kZonedTimestamp,
  kNested,
  kOther,
};

TypeClass ClassOf(const sp::Type& type, const Declarations& declared);
bool IsNumeric(TypeClass type_class);
/// Values of the two classes compare with <, =, >.
bool Comparable(TypeClass left, TypeClass right);

sp::Type BooleanType();

}  // namespace skyhook::substrait_check
