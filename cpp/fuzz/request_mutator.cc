#include "request_mutator.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/array/util.h>
#include <arrow/scalar.h>

#include "envelope.h"
#include "protobuf_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace skyhook::fuzz {
namespace {

// Header fields any method reads (protocol README), and values they take.
constexpr const char* kFieldNames[] = {
    "method",        "filter",           "projection",           "plan",
    "compression",   "batch_size",       "max_result_bytes",     "start_row",
    "max_in_flight", "max_slice_cpu_ns", "delta_sorted_integers"};
constexpr const char* kStrings[] = {"scan", "describe", "execute_plan", "none", "lz4", "zstd", ""};
constexpr int64_t kIntegers[] = {
    0,         1,         -1,     2, 7, 1024, 65536, int64_t{1} << 24, (int64_t{1} << 24) + 1,
    INT64_MAX, INT64_MIN, 1000000};

std::string MutatedBytes(std::string bytes, size_t max_size) {
  const size_t size = bytes.size();
  bytes.resize(std::max(max_size, size));
  bytes.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes.data()), size, bytes.size()));
  return bytes;
}

arrow::Result<std::shared_ptr<arrow::Array>> OneValue(const std::shared_ptr<arrow::Scalar>& value) {
  return arrow::MakeArrayFromScalar(*value, 1);
}

// A new value for one header column, of the column's type.
arrow::Result<std::shared_ptr<arrow::Array>> MutatedColumn(const arrow::Array& column,
                                                           size_t max_size,
                                                           std::minstd_rand& random) {
  if (random() % 16 == 0) return arrow::MakeArrayOfNull(column.type(), 1);
  ARROW_ASSIGN_OR_RAISE(auto scalar, column.GetScalar(0));
  switch (column.type_id()) {
    case arrow::Type::BINARY: {
      std::string value;
      if (scalar->is_valid) {
        value = static_cast<const arrow::BinaryScalar&>(*scalar).value->ToString();
      }
      value = random() % 4 != 0 ? MutateProtobuf(value, max_size, random)
                                : MutatedBytes(std::move(value), max_size);
      return OneValue(std::make_shared<arrow::BinaryScalar>(std::move(value)));
    }
    case arrow::Type::STRING: {
      std::string value = kStrings[random() % std::size(kStrings)];
      if (random() % 2 == 0 && scalar->is_valid) {
        value =
            MutatedBytes(static_cast<const arrow::StringScalar&>(*scalar).value->ToString(), 64);
      }
      return OneValue(std::make_shared<arrow::StringScalar>(std::move(value)));
    }
    case arrow::Type::INT64: {
      int64_t value = kIntegers[random() % std::size(kIntegers)];
      if (random() % 4 == 0) value = static_cast<int64_t>(random());
      return OneValue(std::make_shared<arrow::Int64Scalar>(value));
    }
    default:
      return column.Slice(0, 1);
  }
}

// A header field the request did not have, or had with another type.
arrow::Result<std::pair<std::shared_ptr<arrow::Field>, std::shared_ptr<arrow::Array>>> NewColumn(
    const arrow::RecordBatch& header, std::minstd_rand& random) {
  const std::string name = kFieldNames[random() % std::size(kFieldNames)];
  std::shared_ptr<arrow::Scalar> value;
  switch (random() % 3) {
    case 0: {  // a copy of another binary field: a plan as a filter, a filter as a projection
      std::string bytes;
      for (int i = 0; i < header.num_columns(); ++i) {
        if (header.column(i)->type_id() != arrow::Type::BINARY) continue;
        ARROW_ASSIGN_OR_RAISE(auto other, header.column(i)->GetScalar(0));
        if (other->is_valid)
          bytes = static_cast<const arrow::BinaryScalar&>(*other).value->ToString();
      }
      value = std::make_shared<arrow::BinaryScalar>(std::move(bytes));
      break;
    }
    case 1:
      value = std::make_shared<arrow::StringScalar>(kStrings[random() % std::size(kStrings)]);
      break;
    default:
      value = std::make_shared<arrow::Int64Scalar>(kIntegers[random() % std::size(kIntegers)]);
  }
  ARROW_ASSIGN_OR_RAISE(auto array, OneValue(value));
  return std::make_pair(arrow::field(name, value->type), std::move(array));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> MutateHeader(const uint8_t* request, size_t size,
                                                           size_t max_size,
                                                           std::minstd_rand& random) {
  ARROW_ASSIGN_OR_RAISE(auto envelope, ParseEnvelope(request, size));
  arrow::FieldVector fields = envelope.header->schema()->fields();
  arrow::ArrayVector columns = envelope.header->columns();
  const int choice = static_cast<int>(random() % 10);
  if (choice == 0 && !columns.empty()) {
    const size_t dropped = random() % columns.size();
    fields.erase(fields.begin() + dropped);
    columns.erase(columns.begin() + dropped);
  } else if (choice == 1 || columns.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto added, NewColumn(*envelope.header, random));
    fields.push_back(std::move(added.first));
    columns.push_back(std::move(added.second));
  } else {
    const size_t chosen = random() % columns.size();
    ARROW_ASSIGN_OR_RAISE(columns[chosen], MutatedColumn(*columns[chosen], max_size, random));
  }
  envelope.header =
      arrow::RecordBatch::Make(arrow::schema(std::move(fields)), 1, std::move(columns));
  return BuildEnvelope(envelope);
}

}  // namespace

size_t MutateRequest(uint8_t* request, size_t size, size_t max_size, unsigned seed) {
  std::minstd_rand random(seed);
  if (random() % 8 != 0) {
    auto mutated = MutateHeader(request, size, max_size, random);
    if (mutated.ok() && static_cast<size_t>((*mutated)->size()) <= max_size) {
      std::memcpy(request, (*mutated)->data(), (*mutated)->size());
      return (*mutated)->size();
    }
  }
  return LLVMFuzzerMutate(request, size, max_size);
}

}  // namespace skyhook::fuzz
