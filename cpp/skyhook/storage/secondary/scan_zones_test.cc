#include "skyhook/storage/secondary/scan_zones.h"

#include <cmath>
#include <limits>
#include <memory>
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

namespace cp = arrow::compute;

// 4 row groups of 100 rows: k ascending 0..399; f the same as doubles with a
// NaN in row group 1 and nulls in row group 2; s one text per row group.
std::shared_ptr<arrow::Table> Rows() {
  arrow::Int64Builder k;
  arrow::DoubleBuilder f;
  arrow::StringBuilder s;
  for (int64_t row = 0; row < 400; ++row) {
    EXPECT_TRUE(k.Append(row).ok());
    if (row == 150) {
      EXPECT_TRUE(f.Append(std::numeric_limits<double>::quiet_NaN()).ok());
    } else if (row >= 200 && row < 210) {
      EXPECT_TRUE(f.AppendNull().ok());
    } else {
      EXPECT_TRUE(f.Append(static_cast<double>(row)).ok());
    }
    EXPECT_TRUE(s.Append(std::string(1, static_cast<char>('a' + row / 100))).ok());
  }
  auto schema =
      arrow::schema({arrow::field("k", arrow::int64(), false), arrow::field("f", arrow::float64()),
                     arrow::field("s", arrow::utf8())});
  return arrow::Table::Make(schema, {Ok(k.Finish()), Ok(f.Finish()), Ok(s.Finish())});
}

class StatedBounds : public testing::Test {
 protected:
  void SetUp() override {
    table_ = Rows();
    ObjectDesign request;
    request.format = ObjectFormat::kParquet;
    request.row_group_size = 100;
    request.column_groups = {{{"k", "f", "s"}, 0, 0}};
    auto encoded = Ok(EncodeObject(table_, request, arrow::default_memory_pool()));
    object_ = std::make_unique<DesignedObject>(encoded.data, encoded.design);
    reader_ = Ok(ObjectReader::Open(object_.get(), arrow::default_memory_pool()));
  }

  StatedZones Zones(const cp::Expression& filter) {
    auto bound = Ok(filter.Bind(*table_->schema()));
    return Ok(ZonesStatedBoundsAllow(reader_.get(), bound, *table_->schema()));
  }

  std::shared_ptr<arrow::Table> table_;
  std::unique_ptr<DesignedObject> object_;
  std::unique_ptr<ObjectReader> reader_;
};

cp::Expression K() { return cp::field_ref("k"); }
cp::Expression F() { return cp::field_ref("f"); }

TEST_F(StatedBounds, ZonesTheBoundsExcludeAreLeftOut) {
  auto zones = Zones(cp::and_(cp::greater_equal(K(), cp::literal(int64_t{120})),
                              cp::less(K(), cp::literal(int64_t{250}))));
  EXPECT_EQ(zones.zones, (std::vector<int>{1, 2}));
  EXPECT_FALSE(zones.every_row_matches);
  EXPECT_TRUE(Zones(cp::greater(K(), cp::literal(int64_t{1000}))).zones.empty());
}

TEST_F(StatedBounds, BoundsInsideTheFilterProveEveryRowMatches) {
  auto all = Zones(cp::greater_equal(K(), cp::literal(int64_t{0})));
  EXPECT_EQ(all.zones, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(all.every_row_matches);
  // Zones 2 and 3 wholly, zone 1 excluded: still proven for the zones read.
  auto upper = Zones(cp::greater_equal(K(), cp::literal(int64_t{200})));
  EXPECT_EQ(upper.zones, (std::vector<int>{2, 3}));
  EXPECT_TRUE(upper.every_row_matches);
  // Zone 1 only partly.
  EXPECT_FALSE(Zones(cp::greater_equal(K(), cp::literal(int64_t{150}))).every_row_matches);
}

TEST_F(StatedBounds, NullsAndNanAreNeverProvenToMatch) {
  // Zone 2 holds nulls, zone 1 a NaN: a comparison is null or false there.
  auto positive = Zones(cp::greater_equal(F(), cp::literal(0.0)));
  EXPECT_EQ(positive.zones, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(positive.every_row_matches);
  // A NaN fails every comparison: its zone is excluded by its bounds all the
  // same. Parquet does not count NaN, so no zone of doubles is proven whole.
  auto last = Zones(cp::greater_equal(F(), cp::literal(300.0)));
  EXPECT_EQ(last.zones, (std::vector<int>{3}));
  EXPECT_FALSE(last.every_row_matches);
  auto first = Zones(cp::less(F(), cp::literal(200.0)));
  EXPECT_EQ(first.zones, (std::vector<int>{0, 1}));
  EXPECT_FALSE(first.every_row_matches);  // zone 1's NaN does not match
}

TEST_F(StatedBounds, TextBoundsDecideToo) {
  auto zones = Zones(cp::equal(cp::field_ref("s"), cp::literal("c")));
  EXPECT_EQ(zones.zones, (std::vector<int>{2}));
  EXPECT_FALSE(zones.every_row_matches);  // equality on text is not simplified to true
}

TEST_F(StatedBounds, AFilterTooLargeToTestReadsEveryZone) {
  std::vector<cp::Expression> equalities;
  for (int64_t value = 0; value < 100; ++value) {
    equalities.push_back(cp::equal(K(), cp::literal(value * 1000)));
  }
  auto zones = Zones(cp::or_(equalities));
  EXPECT_EQ(zones.zones, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(zones.every_row_matches);
}

}  // namespace
}  // namespace skyhook
