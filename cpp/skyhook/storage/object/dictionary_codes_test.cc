#include "skyhook/storage/object/dictionary_codes.h"

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                   const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

std::shared_ptr<arrow::Array> Column(
    const std::string& indices, const std::string& values,
    const std::shared_ptr<arrow::DataType>& index_type = arrow::int32()) {
  // Built as Parquet's reader hands them out: indices unchecked.
  auto data = Json(index_type, indices)->data()->Copy();
  data->type = arrow::dictionary(index_type, arrow::utf8());
  data->dictionary = Json(arrow::utf8(), values)->data();
  return arrow::MakeArray(data);
}

TEST(DictionaryCodes, OneCodePerValueAcrossDictionaries) {
  DictionaryCodes codes(arrow::utf8(), arrow::default_memory_pool(), 100, 1000);
  auto first = codes.Encode(*Column("[0, 1, null, 1]", R"(["R", "A"])")).ValueOrDie();
  EXPECT_TRUE(first->Equals(*Json(arrow::int32(), "[0, 1, null, 1]")));
  // Another row group's dictionary, in another order, with a new value.
  auto second =
      codes.Encode(*Column("[2, 0, 1]", R"(["A", "N", "R"])", arrow::int8())).ValueOrDie();
  EXPECT_TRUE(second->Equals(*Json(arrow::int32(), "[0, 1, 2]")));
  // A slice reads its own rows.
  auto sliced = codes.Encode(*Column("[0, 1, 0]", R"(["N", "A"])")->Slice(1)).ValueOrDie();
  EXPECT_TRUE(sliced->Equals(*Json(arrow::int32(), "[1, 2]")));
  arrow::compute::ExecContext context;
  auto text = codes.Decode(*Json(arrow::int32(), "[2, null, 0, 1]"), &context).ValueOrDie();
  EXPECT_TRUE(text->Equals(*Json(arrow::utf8(), R"(["N", null, "R", "A"])")));
}

TEST(DictionaryCodes, HostileColumnsAreErrors) {
  DictionaryCodes codes(arrow::utf8(), arrow::default_memory_pool(), 3, 1000);
  EXPECT_FALSE(codes.Encode(*Column("[0, 2]", R"(["R", "A"])")).ok());    // index past the end
  EXPECT_FALSE(codes.Encode(*Column("[0, -1]", R"(["R", "A"])")).ok());   // negative index
  EXPECT_TRUE(codes.Encode(*Column("[0, null]", R"(["R", "A"])")).ok());  // a null's index is free
  EXPECT_FALSE(codes.Encode(*Column("[0]", R"(["R", null])")).ok());  // a null in the dictionary
  EXPECT_FALSE(codes.Encode(*Json(arrow::utf8(), R"(["R"])")).ok());  // not a dictionary
  auto binary = arrow::DictionaryArray::FromArrays(
                    arrow::dictionary(arrow::int32(), arrow::binary()), Json(arrow::int32(), "[0]"),
                    Json(arrow::binary(), R"(["R"])"))
                    .ValueOrDie();
  EXPECT_FALSE(codes.Encode(*binary).ok());  // another value type
  // Past the bound on distinct values: an error, before any code of it is used.
  auto over = codes.Encode(*Column("[0]", R"(["B", "C"])"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(CodeOf(over.status()), ErrorCode::kLimitExceeded);
  // A dictionary longer than the bound, before anything is mapped.
  auto longer = codes.Encode(*Column("[0]", R"(["R", "A", "B", "C"])"));
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(CodeOf(longer.status()), ErrorCode::kLimitExceeded);
}

}  // namespace
}  // namespace skyhook
