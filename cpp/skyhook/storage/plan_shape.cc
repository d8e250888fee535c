#include "skyhook/storage/plan_shape.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "skyhook/protocol/error.h"

namespace skyhook {
namespace {

// Field numbers of the Substrait messages involved.
constexpr uint32_t kPlanRelations = 3, kPlanRelRel = 1, kPlanRelRoot = 2, kRelRootInput = 1;
constexpr uint32_t kRelRead = 1, kRelFilter = 2, kRelAggregate = 4, kRelProject = 7;
constexpr uint32_t kInputOfFilterProjectAggregate = 2;
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

struct WireField {
  uint32_t number;
  int wire_type;
  std::string_view payload;  // length-delimited fields: the bytes inside
  std::string_view whole;    // the field as encoded, tag included
};

arrow::Status Malformed(const char* what) {
  return Error(ErrorCode::kInvalidRequest, "malformed Substrait plan: ", what);
}

arrow::Result<uint64_t> ReadVarint(std::string_view data, size_t* position) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*position >= data.size()) return Malformed("truncated varint");
    uint8_t byte = static_cast<uint8_t>(data[(*position)++]);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return value;
  }
  return Malformed("varint too long");
}

arrow::Result<std::vector<WireField>> ParseMessage(std::string_view data) {
  std::vector<WireField> fields;
  size_t position = 0;
  while (position < data.size()) {
    size_t start = position;
    ARROW_ASSIGN_OR_RAISE(uint64_t tag, ReadVarint(data, &position));
    WireField field{static_cast<uint32_t>(tag >> 3), static_cast<int>(tag & 7), {}, {}};
    if (field.number == 0) return Malformed("field number 0");
    switch (field.wire_type) {
      case kVarint:
        ARROW_RETURN_NOT_OK(ReadVarint(data, &position).status());
        break;
      case kFixed64:
        if (data.size() - position < 8) return Malformed("truncated fixed64");
        position += 8;
        break;
      case kFixed32:
        if (data.size() - position < 4) return Malformed("truncated fixed32");
        position += 4;
        break;
      case kLengthDelimited: {
        ARROW_ASSIGN_OR_RAISE(uint64_t length, ReadVarint(data, &position));
        if (length > data.size() - position) return Malformed("length beyond the message");
        field.payload = data.substr(position, length);
        position += length;
        break;
      }
      default:
        return Malformed("unsupported wire type");
    }
    field.whole = data.substr(start, position - start);
    fields.push_back(field);
  }
  return fields;
}

// The payload of the only length-delimited field `number`; an error otherwise.
arrow::Result<std::string_view> Only(const std::vector<WireField>& fields, uint32_t number,
                                     const char* what) {
  std::optional<std::string_view> found;
  for (const auto& field : fields) {
    if (field.number != number) continue;
    if (found || field.wire_type != kLengthDelimited) {
      return Error(ErrorCode::kInvalidRequest, "unsupported Substrait plan: ", what);
    }
    found = field.payload;
  }
  if (!found) return Error(ErrorCode::kInvalidRequest, "unsupported Substrait plan: ", what);
  return *found;
}

// A Rel is a oneof: exactly one field, whose number says the relation type.
arrow::Result<WireField> RelKind(std::string_view rel) {
  ARROW_ASSIGN_OR_RAISE(auto fields, ParseMessage(rel));
  if (fields.size() != 1 || fields[0].wire_type != kLengthDelimited) {
    return Malformed("a relation must be exactly one relation type");
  }
  return fields[0];
}

void AppendVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

std::string LengthDelimited(uint32_t number, std::string_view payload) {
  std::string out;
  AppendVarint(&out, (uint64_t{number} << 3) | kLengthDelimited);
  AppendVarint(&out, payload.size());
  out.append(payload);
  return out;
}

// project -> [filter ->] read
arrow::Status CheckProjectInput(const WireField& project) {
  ARROW_ASSIGN_OR_RAISE(auto fields, ParseMessage(project.payload));
  ARROW_ASSIGN_OR_RAISE(auto input, Only(fields, kInputOfFilterProjectAggregate, "project input"));
  ARROW_ASSIGN_OR_RAISE(auto below, RelKind(input));
  if (below.number == kRelFilter) {
    ARROW_ASSIGN_OR_RAISE(auto filter, ParseMessage(below.payload));
    ARROW_ASSIGN_OR_RAISE(input, Only(filter, kInputOfFilterProjectAggregate, "filter input"));
    ARROW_ASSIGN_OR_RAISE(below, RelKind(input));
  }
  if (below.number != kRelRead) {
    return Error(ErrorCode::kInvalidRequest,
                 "unsupported Substrait plan: expected [aggregate ->] project -> [filter ->] read");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<PlanShape> CheckPlanShape(std::string_view plan) {
  ARROW_ASSIGN_OR_RAISE(auto fields, ParseMessage(plan));
  ARROW_ASSIGN_OR_RAISE(auto relation, Only(fields, kPlanRelations, "exactly one relation"));
  ARROW_ASSIGN_OR_RAISE(auto plan_rel, ParseMessage(relation));
  ARROW_ASSIGN_OR_RAISE(auto root, Only(plan_rel, kPlanRelRoot, "a root relation"));
  ARROW_ASSIGN_OR_RAISE(auto root_fields, ParseMessage(root));
  ARROW_ASSIGN_OR_RAISE(auto top, Only(root_fields, kRelRootInput, "a root input"));
  ARROW_ASSIGN_OR_RAISE(auto kind, RelKind(top));
  PlanShape shape;
  std::string_view project_rel = top;
  if (kind.number == kRelAggregate) {
    shape.has_aggregate = true;
    ARROW_ASSIGN_OR_RAISE(auto aggregate, ParseMessage(kind.payload));
    ARROW_ASSIGN_OR_RAISE(project_rel,
                          Only(aggregate, kInputOfFilterProjectAggregate, "aggregate input"));
    ARROW_ASSIGN_OR_RAISE(kind, RelKind(project_rel));
  }
  if (kind.number != kRelProject) {
    return Error(ErrorCode::kInvalidRequest,
                 "unsupported Substrait plan: expected [aggregate ->] project -> [filter ->] read");
  }
  ARROW_RETURN_NOT_OK(CheckProjectInput(kind));
  // The plan's declarations and, as its relation, the project alone.
  for (const auto& field : fields) {
    if (field.number != kPlanRelations) shape.input_plan.append(field.whole);
  }
  shape.input_plan.append(LengthDelimited(kPlanRelations, LengthDelimited(kPlanRelRel, project_rel)));
  return shape;
}

arrow::Status CheckTypedColumns(const arrow::Schema& schema) {
  for (const auto& field : schema.fields()) {
    if (field == nullptr || field->type() == nullptr) {
      return Error(ErrorCode::kInvalidRequest,
                   "the plan aggregates a computed column whose type Arrow's Substrait "
                   "consumer cannot infer (decimal arithmetic); aggregate it at the client");
    }
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
