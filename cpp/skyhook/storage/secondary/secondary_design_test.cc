#include <stdlib.h>

#include <filesystem>
#include <numeric>
#include <random>

#include <arrow/array/builder_primitive.h>
#include <arrow/compute/expression.h>
#include <arrow/io/memory.h>
#include <arrow/json/from_string.h>
#include <arrow/table.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>

#include "file_object_context.h"
#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"
#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/distinct_sketch.h"
#include "skyhook/storage/secondary/equi_depth_histogram.h"
#include "skyhook/storage/secondary/omap_value.h"
#include "skyhook/storage/secondary/secondary_design.h"
#include "skyhook/storage/secondary/zone_statistics.h"

namespace skyhook {
namespace {

namespace fs = std::filesystem;
namespace cp = arrow::compute;

std::shared_ptr<arrow::Array> Int64s(const std::vector<int64_t>& values) {
  arrow::Int64Builder builder;
  EXPECT_TRUE(builder.AppendValues(values).ok());
  return builder.Finish().ValueOrDie();
}

TEST(DistinctSketch, EstimatesWithinAFewPercentAndMerges) {
  for (int64_t distinct : {10, 1000, 100000}) {
    std::vector<int64_t> values(distinct * 2);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i) % distinct;
    DistinctSketch sketch;
    ASSERT_TRUE(sketch.Update(*Int64s(values)).ok());
    // Two of a few values may share a register: one off is within the error.
    EXPECT_NEAR(sketch.Estimate(), distinct, 0.06 * distinct + 1) << distinct;
  }
  DistinctSketch low, high;
  std::vector<int64_t> first(5000), second(5000);
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), 2500);  // half overlaps: 7,500 in all
  ASSERT_TRUE(low.Update(*Int64s(first)).ok());
  ASSERT_TRUE(high.Update(*Int64s(second)).ok());
  low.Merge(high);
  EXPECT_NEAR(low.Estimate(), 7500, 0.06 * 7500);
  auto copy = DistinctSketch::FromRegisters(low.registers());
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->Estimate(), low.Estimate());
  EXPECT_FALSE(DistinctSketch::FromRegisters("short").ok());
  EXPECT_FALSE(DistinctSketch::Supports(*arrow::list(arrow::int64())));
}

TEST(EquiDepthHistogram, BoundsAreQuantilesWithoutNullsOrNaN) {
  std::vector<int64_t> values(3201);
  std::iota(values.begin(), values.end(), 0);
  std::shuffle(values.begin(), values.end(), std::mt19937(3));
  auto bounds = EquiDepthBounds(Int64s(values), cp::default_exec_context()).ValueOrDie();
  ASSERT_EQ(bounds->length(), kHistogramBuckets + 1);
  auto ints = std::static_pointer_cast<arrow::Int64Array>(bounds);
  for (int i = 0; i <= kHistogramBuckets; ++i) EXPECT_EQ(ints->Value(i), i * 100);

  auto with_nan =
      arrow::json::ArrayFromJSONString(arrow::float64(), "[NaN, 3, null, 1, 2]").ValueOrDie();
  auto few = EquiDepthBounds(with_nan, cp::default_exec_context()).ValueOrDie();
  EXPECT_TRUE(
      few->Equals(*arrow::json::ArrayFromJSONString(arrow::float64(), "[1, 2, 3]").ValueOrDie()));
  auto null = arrow::json::ArrayFromJSONString(arrow::int32(), "[null]").ValueOrDie();
  auto none = EquiDepthBounds(null, cp::default_exec_context()).ValueOrDie();
  EXPECT_EQ(none->length(), 0);
}

// An embedded-store object holding a Parquet partition of `table`.
class SecondaryDesignTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "skyhook-unit-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    object_ = std::make_unique<FileObjectContext>((root_ / "object").string(),
                                                  (root_ / "omap.sqlite").string());
  }
  void TearDown() override { fs::remove_all(root_); }

  // Keys 0, 2, 4, ... in row groups of 100 rows, and every tenth one null.
  void Write(int64_t rows, bool descending = false) {
    arrow::Int64Builder keys;
    for (int64_t i = 0; i < rows; ++i) {
      ASSERT_TRUE(
          (i % 10 == 9 ? keys.AppendNull() : keys.Append(2 * (descending ? rows - 1 - i : i)))
              .ok());
    }
    auto table = arrow::Table::Make(arrow::schema({arrow::field("k", arrow::int64())}),
                                    {keys.Finish().ValueOrDie()});
    auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
    ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, 100).ok());
    ASSERT_TRUE(object_->WriteFull(*sink->Finish().ValueOrDie()).ok());
    ASSERT_TRUE(object_->SetXattr(kFormatAttribute, "parquet").ok());
  }

  std::vector<int64_t> LookUp(const cp::Expression& predicate, int64_t low, int64_t high) {
    auto identity = DataIdentity(object_.get()).ValueOrDie();
    auto matches = LookUpIndex(
        object_.get(), "k", identity, predicate, std::make_shared<arrow::Int64Scalar>(low),
        std::make_shared<arrow::Int64Scalar>(high), cp::default_exec_context());
    EXPECT_TRUE(matches.ok()) << matches.status().ToString();
    return matches.ok() && *matches ? (*matches)->rows : std::vector<int64_t>{-1};
  }

  void Index() {
    CallResources resources;
    auto reader = ObjectReader::Open(object_.get(), resources.pool()).ValueOrDie();
    auto identity = DataIdentity(object_.get()).ValueOrDie();
    auto entries = BuildColumnIndex(reader.get(), 0, identity, &resources).ValueOrDie();
    for (const auto& [key, value] : entries) ASSERT_TRUE(object_->SetOmap(key, value).ok());
    ASSERT_TRUE(object_->SetOmap(kIndexListKey, "k\n").ok());
  }

  fs::path root_;
  std::unique_ptr<FileObjectContext> object_;
};

TEST_F(SecondaryDesignTest, IndexBlocksAnswerPointsAndRangesAcrossBlocks) {
  Write(20000);
  Index();
  // 18,000 keys of 16 bytes: several 64 KiB blocks.
  EXPECT_TRUE(object_->GetOmap(IndexBlockKey("k", 3)).ValueOrDie().has_value());
  auto key = cp::field_ref("key");
  EXPECT_EQ(LookUp(cp::equal(key, cp::literal(int64_t{2 * 12345})), 24690, 24690),
            std::vector<int64_t>{12345});
  EXPECT_EQ(LookUp(cp::equal(key, cp::literal(int64_t{2 * 19})), 38, 38),
            std::vector<int64_t>{});  // row 19 is null
  auto range = LookUp(cp::and_(cp::greater_equal(key, cp::literal(int64_t{10000})),
                               cp::less(key, cp::literal(int64_t{10040}))),
                      10000, 10040);
  EXPECT_EQ(range, (std::vector<int64_t>{5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5010,
                                         5011, 5012, 5013, 5014, 5015, 5016, 5017, 5018}));
}

TEST_F(SecondaryDesignTest, CorruptOmapValuesAreCorruptObjects) {
  Write(1000);
  Index();
  auto identity = DataIdentity(object_.get()).ValueOrDie();
  ASSERT_TRUE(object_->SetOmap(IndexBlockKey("k", 0), "not an IPC stream").ok());
  auto matches = LookUpIndex(object_.get(), "k", identity,
                             cp::equal(cp::field_ref("key"), cp::literal(int64_t{4})), nullptr,
                             nullptr, cp::default_exec_context());
  EXPECT_EQ(CodeOf(matches.status()), ErrorCode::kCorruptObject);

  ASSERT_TRUE(object_->SetOmap(kStatisticsKey, std::string("\xff\xff\xff\xff\x08", 5)).ok());
  auto schema = arrow::schema({arrow::field("k", arrow::int64())});
  EXPECT_EQ(CodeOf(LoadZoneStatistics(object_.get(), *schema, identity).status()),
            ErrorCode::kCorruptObject);
  // A valid batch of the wrong shape, tagged as this data's.
  auto other = arrow::RecordBatch::Make(schema, 1, {Int64s({1})});
  ASSERT_TRUE(
      object_->SetOmap(kStatisticsKey, EncodeOmapValue(*other, identity).ValueOrDie()).ok());
  EXPECT_EQ(CodeOf(LoadZoneStatistics(object_.get(), *schema, identity).status()),
            ErrorCode::kCorruptObject);
}

TEST_F(SecondaryDesignTest, StaleValuesAreIgnoredAndRebuildRenewsThem) {
  Write(1000);
  {
    CallResources resources;
    auto reader = ObjectReader::Open(object_.get(), resources.pool()).ValueOrDie();
    auto statistics = ComputeZoneStatistics(reader.get(), &resources).ValueOrDie();
    EXPECT_EQ(statistics->num_rows(), 11);  // 10 row groups and the object
    auto identity = DataIdentity(object_.get()).ValueOrDie();
    ASSERT_TRUE(
        object_->SetOmap(kStatisticsKey, EncodeOmapValue(*statistics, identity).ValueOrDie()).ok());
  }
  Index();
  Write(1500, /*descending=*/true);  // other data: the values describe the old
  auto schema = arrow::schema({arrow::field("k", arrow::int64())});
  auto identity = DataIdentity(object_.get()).ValueOrDie();
  EXPECT_EQ(LoadZoneStatistics(object_.get(), *schema, identity).ValueOrDie(), nullptr);
  auto key = cp::field_ref("key");
  EXPECT_EQ(LookUp(cp::equal(key, cp::literal(int64_t{0})), 0, 0), std::vector<int64_t>{-1});

  CallResources resources;
  ASSERT_TRUE(RebuildSecondaryDesign(object_.get(), &resources).ok());
  auto statistics = LoadZoneStatistics(object_.get(), *schema, identity).ValueOrDie();
  ASSERT_NE(statistics, nullptr);
  EXPECT_EQ(statistics->num_rows(), 16);
  EXPECT_EQ(LookUp(cp::equal(key, cp::literal(int64_t{2})), 2, 2), std::vector<int64_t>{1498});
  EXPECT_EQ(IndexedColumns(object_.get()).ValueOrDie(), std::vector<std::string>{"k"});
}

TEST_F(SecondaryDesignTest, ListedNamesThatAreNotUtf8NameNoColumn) {
  ASSERT_TRUE(object_->SetOmap(kIndexListKey, "k\n\xff\xfe\nv\n").ok());
  EXPECT_EQ(IndexedColumns(object_.get()).ValueOrDie(), (std::vector<std::string>{"k", "v"}));
}

}  // namespace
}  // namespace skyhook
