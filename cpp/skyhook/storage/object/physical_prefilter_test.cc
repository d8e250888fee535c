#include "skyhook/storage/object/physical_prefilter.h"

#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/designed_object.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

// 2 row groups of 1,000 rows: id ascending; price a decimal(15, 2) of 1.00 ..
// 10.00 by row % 10 (dictionary-encoded in the file: 10 values); day a date32
// of row % 100; note text (not integer-stored).
std::shared_ptr<arrow::Table> Rows() {
  arrow::Int64Builder id;
  arrow::Decimal128Builder price(arrow::decimal128(15, 2));
  arrow::Date32Builder day;
  arrow::StringBuilder note;
  for (int64_t row = 0; row < 2000; ++row) {
    EXPECT_TRUE(id.Append(row).ok());
    EXPECT_TRUE(price.Append(arrow::Decimal128(100 * (1 + row % 10))).ok());
    EXPECT_TRUE(day.Append(static_cast<int32_t>(row % 100)).ok());
    EXPECT_TRUE(note.Append("row " + std::to_string(row)).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("id", arrow::int64(), false), arrow::field("price", arrow::decimal128(15, 2)),
       arrow::field("day", arrow::date32()), arrow::field("note", arrow::utf8())});
  return arrow::Table::Make(
      schema, {Ok(id.Finish()), Ok(price.Finish()), Ok(day.Finish()), Ok(note.Finish())});
}

class Prefilter : public testing::Test {
 protected:
  void SetUp() override {
    table_ = Rows();
    ObjectDesign request;
    request.format = ObjectFormat::kParquet;
    request.row_group_size = 1000;
    request.column_groups = {{{"id", "price", "day", "note"}, 0, 0}};
    auto encoded = Ok(EncodeObject(table_, request, arrow::default_memory_pool()));
    object_ = std::make_unique<DesignedObject>(encoded.data, encoded.design);
    reader_ = Ok(ObjectReader::Open(object_.get(), arrow::default_memory_pool()));
  }

  std::optional<ZoneSelection> Select(const std::vector<PhysicalRange>& ranges, int zone,
                                      SelectionLimits limits = {}) {
    return Ok(reader_->SelectZone(ranges, {0, 1, 3}, zone, limits, &context_));
  }

  // The rows of a zone whose id, price and day pass the ranges, computed here.
  std::vector<int64_t> Expected(int zone, int64_t price_low, int64_t price_high, int64_t day_low) {
    std::vector<int64_t> rows;
    for (int64_t row = 0; row < 1000; ++row) {
      const int64_t object_row = zone * 1000 + row;
      const int64_t price = 100 * (1 + object_row % 10);
      if (price >= price_low && price <= price_high && object_row % 100 >= day_low) {
        rows.push_back(row);
      }
    }
    return rows;
  }

  std::shared_ptr<arrow::Table> table_;
  std::unique_ptr<DesignedObject> object_;
  std::unique_ptr<ObjectReader> reader_;
  arrow::compute::ExecContext context_;
};

TEST_F(Prefilter, KeepsTheRowsOfEveryRangeAndGathersOnlyThem) {
  ASSERT_TRUE(reader_->SelectsZones());
  const std::vector<PhysicalRange> ranges{{1, 300, 400, {}}, {2, 95, INT64_MAX, {}}};
  auto selected = Select(ranges, 1);
  ASSERT_TRUE(selected.has_value());
  EXPECT_EQ(selected->rows, Expected(1, 300, 400, 95));
  ASSERT_EQ(selected->batch->num_rows(), static_cast<int64_t>(selected->rows.size()));
  // Every gathered field, text included, holds the values of just those rows.
  for (size_t i = 0; i < selected->rows.size(); ++i) {
    const int64_t object_row = 1000 + selected->rows[i];
    EXPECT_EQ(Ok(selected->batch->column(0)->GetScalar(i))->ToString(), std::to_string(object_row));
    EXPECT_EQ(Ok(selected->batch->column(2)->GetScalar(i))->ToString(),
              "row " + std::to_string(object_row));
  }
}

TEST_F(Prefilter, ExcludedValuesAreLeftOut) {
  auto selected = Select({{1, INT64_MIN, INT64_MAX, {100, 200, 300}}}, 0);
  ASSERT_TRUE(selected.has_value());
  EXPECT_EQ(selected->rows.size(), 700u);
  for (int64_t row : selected->rows) EXPECT_GE(row % 10, 3);
}

TEST_F(Prefilter, ASelectionKeepingTooManyRowsIsDeclined) {
  // Prices of 1.00..9.00 keep 90 % of the rows: reading the zone whole costs less.
  EXPECT_FALSE(Select({{1, 0, 900, {}}}, 0, {0.5, 0}).has_value());
  EXPECT_TRUE(Select({{1, 0, 100, {}}}, 0, {0.5, 0}).has_value());
}

TEST_F(Prefilter, NoRowPassingLeavesAnEmptySelection) {
  auto selected = Select({{0, 5000, 6000, {}}}, 1);
  ASSERT_TRUE(selected.has_value());
  EXPECT_TRUE(selected->rows.empty());
  EXPECT_EQ(selected->batch->num_rows(), 0);
}

}  // namespace
}  // namespace skyhook
