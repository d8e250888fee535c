#include "skyhook/storage/statistics/table_statistics.h"

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

TEST(TableStatistics, OneRowOfColumnStatisticsNamedAfterTheColumns) {
  auto schema =
      arrow::schema({arrow::field("id", arrow::int32()), arrow::field("name", arrow::utf8())},
                    arrow::key_value_metadata({"origin"}, {"test"}));
  TableStatistics statistics(schema);
  for (const auto& [ids, names] :
       {std::pair{"[3, 1]", R"(["b", null])"}, std::pair{"[2]", R"(["a"])"}}) {
    auto id = arrow::json::ArrayFromJSONString(arrow::int32(), ids).ValueOrDie();
    auto name = arrow::json::ArrayFromJSONString(arrow::utf8(), names).ValueOrDie();
    ASSERT_TRUE(
        statistics.Update(*arrow::RecordBatch::Make(schema, id->length(), {id, name})).ok());
  }
  EXPECT_EQ(statistics.num_rows(), 3);
  auto row = statistics.Finish().ValueOrDie();
  ASSERT_EQ(row->num_rows(), 1);
  EXPECT_EQ(row->schema()->field_names(), (std::vector<std::string>{"id", "name"}));
  EXPECT_TRUE(row->schema()->metadata()->Equals(*schema->metadata()));
  auto id = std::static_pointer_cast<arrow::StructArray>(row->column(0));
  EXPECT_EQ(id->GetFieldByName("min")->GetScalar(0).ValueOrDie()->ToString(), "1");
  EXPECT_EQ(id->GetFieldByName("max")->GetScalar(0).ValueOrDie()->ToString(), "3");
  auto name = std::static_pointer_cast<arrow::StructArray>(row->column(1));
  EXPECT_EQ(name->GetFieldByName("null_count")->GetScalar(0).ValueOrDie()->ToString(), "1");
}

TEST(TableStatistics, RefusesABatchOfOtherColumns) {
  TableStatistics statistics(arrow::schema({arrow::field("id", arrow::int32())}));
  auto other = arrow::RecordBatch::Make(arrow::schema({}), 0, arrow::ArrayVector{});
  EXPECT_FALSE(statistics.Update(*other).ok());
}

}  // namespace
}  // namespace skyhook
