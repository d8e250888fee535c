#include "client/plain_reads.h"

#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/ipc/writer.h>
#include <gtest/gtest.h>

#include "skyhook/storage/object/object_design.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Buffer> Text(const std::string& text) {
  return arrow::Buffer::FromString(text);
}

std::string Bytes(const std::shared_ptr<arrow::Buffer>& buffer) { return buffer->ToString(); }

TEST(ReadParts, AReadInsideOnePartIsAViewOfIt) {
  ReadParts object(10, std::nullopt, std::nullopt);
  auto part = Text("abcdefghij");
  object.Add(0, part);
  auto read = Ok(object.Read(2, 3));
  EXPECT_EQ(Bytes(read), "cde");
  EXPECT_EQ(read->data(), part->data() + 2);
}

TEST(ReadParts, AReadAcrossPartsJoinsThemInAnyOrderAndOverlap) {
  ReadParts object(10, std::nullopt, std::nullopt);
  object.Add(6, Text("ghij"));
  object.Add(0, Text("abcd"));
  object.Add(3, Text("defgh"));  // overlaps both
  EXPECT_EQ(Bytes(Ok(object.Read(1, 8))), "bcdefghi");
  EXPECT_EQ(Bytes(Ok(object.Read(0, 10))), "abcdefghij");
}

TEST(ReadParts, AReadIsShortWhereThePartsEnd) {
  ReadParts object(100, std::nullopt, std::nullopt);
  object.Add(90, Text("0123456789"));
  EXPECT_EQ(Bytes(Ok(object.Read(95, 50))), "56789");
  EXPECT_EQ(Ok(object.Read(100, 0))->size(), 0);  // at a part's end: empty, not an error
}

TEST(ReadParts, BytesNoPartHoldsAreAnError) {
  ReadParts object(20, std::nullopt, std::nullopt);
  object.Add(0, Text("abcd"));
  object.Add(10, Text("klmn"));
  EXPECT_TRUE(object.Read(5, 2).status().IsIOError());
  EXPECT_EQ(Bytes(Ok(object.Read(2, 6))), "cd");  // short at the gap
  EXPECT_TRUE(object.Read(15, 1).status().IsIOError());
}

TEST(ReadParts, ItsAttributesAreTheDesignAndFormatOnly) {
  ReadParts object(0, std::string("design"), std::nullopt);
  EXPECT_EQ(Ok(object.GetXattr(kDesignAttribute)), std::optional<std::string>("design"));
  EXPECT_EQ(Ok(object.GetXattr(kFormatAttribute)), std::nullopt);
  EXPECT_EQ(Ok(object.GetXattr("other")), std::nullopt);
  EXPECT_EQ(Ok(object.GetOmap("any")), std::nullopt);
}

// 100,000 rows (n ascending, kind one of 4 texts) in Parquet row groups of 10,000,
// its parts the whole object.
class PlainRead : public testing::Test {
 protected:
  static constexpr int64_t kRows = 100'000;

  void SetUp() override {
    arrow::Int64Builder n;
    arrow::StringBuilder kind;
    for (int64_t row = 0; row < kRows; ++row) {
      ASSERT_TRUE(n.Append(row).ok());
      ASSERT_TRUE(kind.Append(std::string(1 + row % 4, 'k')).ok());
    }
    schema_ =
        arrow::schema({arrow::field("n", arrow::int64()), arrow::field("kind", arrow::utf8())});
    auto table = arrow::Table::Make(schema_, {Ok(n.Finish()), Ok(kind.Finish())});
    ObjectDesign request;
    request.format = ObjectFormat::kParquet;
    request.row_group_size = kRows / 10;
    request.column_groups = {{{"n", "kind"}, 0, 0}};
    encoded_ = Ok(EncodeObject(table, request, arrow::default_memory_pool()));
    design_ = Ok(SerializeDesign(encoded_.design))->ToString();
  }

  std::unique_ptr<ReadParts> Whole() {
    auto object = std::make_unique<ReadParts>(encoded_.data->size(), design_, std::nullopt);
    object->Add(0, encoded_.data);
    return object;
  }

  // The filter as the client sends it: serialized, with the dataset's IPC schema.
  std::optional<DatasetFilter> Filter(const cp::Expression& expression) {
    return BoundFilter(Ok(cp::Serialize(expression)), Ok(arrow::ipc::SerializeSchema(*schema_)));
  }

  static std::shared_ptr<arrow::Table> Rows(const Decoded& decoded) {
    return Ok(decoded.batches->ToTable());
  }

  std::shared_ptr<arrow::Schema> schema_;
  EncodedObject encoded_;
  std::string design_;
};

TEST_F(PlainRead, DecodesTheColumnsAsked) {
  auto object = Whole();
  auto decoded =
      Ok(DecodeObject(object.get(), std::vector<std::string>{"kind"}, std::nullopt, std::nullopt));
  auto rows = Rows(decoded);
  EXPECT_EQ(rows->num_rows(), kRows);
  EXPECT_EQ(rows->schema()->field_names(), std::vector<std::string>{"kind"});
  EXPECT_EQ(decoded.rows, kRows);
  EXPECT_GT(decoded.bytes, kRows);
  EXPECT_FALSE(decoded.filtered);
}

TEST_F(PlainRead, AppliesAFilterItCanEvaluateAndCountsRowsBeforeIt) {
  auto object = Whole();
  auto filter = Filter(cp::less(cp::field_ref("n"), cp::literal(int64_t{250})));
  ASSERT_TRUE(filter.has_value());
  auto decoded = Ok(DecodeObject(object.get(), std::nullopt, std::nullopt, filter));
  EXPECT_TRUE(decoded.filtered);
  EXPECT_EQ(Rows(decoded)->num_rows(), 250);
  EXPECT_EQ(decoded.rows, kRows);
}

TEST_F(PlainRead, LeavesAFilterOnAColumnNotDecodedToTheClient) {
  auto object = Whole();
  auto filter = Filter(cp::less(cp::field_ref("n"), cp::literal(int64_t{250})));
  auto decoded =
      Ok(DecodeObject(object.get(), std::vector<std::string>{"kind"}, std::nullopt, filter));
  EXPECT_FALSE(decoded.filtered);
  EXPECT_EQ(Rows(decoded)->num_rows(), kRows);
}

TEST_F(PlainRead, DecodesOnlyTheRowGroupsAskedWhichMustAscend) {
  auto object = Whole();
  auto decoded = Ok(DecodeObject(object.get(), std::nullopt, std::vector<int>{1, 3}, std::nullopt));
  auto rows = Ok(Rows(decoded)->CombineChunks());
  auto n = std::static_pointer_cast<arrow::Int64Array>(rows->column(0)->chunk(0));
  EXPECT_EQ(rows->num_rows(), 2 * kRows / 10);
  EXPECT_EQ(n->Value(0), kRows / 10);
  EXPECT_EQ(n->Value(rows->num_rows() - 1), 4 * kRows / 10 - 1);
  auto descending = DecodeObject(object.get(), std::nullopt, std::vector<int>{3, 1}, std::nullopt);
  EXPECT_TRUE(descending.status().IsInvalid()) << descending.status().ToString();
}

TEST_F(PlainRead, PlansOnlyTheZonesTheFooterStatisticsAllow) {
  auto object = Whole();
  auto filter = Filter(cp::greater_equal(cp::field_ref("n"), cp::literal(int64_t{85000})));
  auto plan = Ok(PlanZones(object.get(), std::vector<std::string>{"n"}, filter));
  ASSERT_TRUE(plan.has_value());
  const auto& [zones, ranges, every_row] = *plan;
  EXPECT_EQ(zones, (std::vector<int>{8, 9}));
  EXPECT_FALSE(ranges.empty());
  EXPECT_FALSE(every_row);  // zone 8 holds 80,000..89,999
  uint64_t planned = 0;
  for (const auto& [offset, length] : ranges) planned += length;
  const auto everything = Ok(PlanZones(object.get(), std::nullopt, std::nullopt));
  uint64_t whole = 0;
  for (const auto& [offset, length] : std::get<1>(*everything)) whole += length;
  EXPECT_LT(planned * 4, whole);  // 2 of 10 zones, of the larger column

  auto all = Filter(cp::greater_equal(cp::field_ref("n"), cp::literal(int64_t{0})));
  EXPECT_TRUE(std::get<2>(*Ok(PlanZones(object.get(), std::nullopt, all))));
  EXPECT_EQ(std::get<0>(*Ok(PlanZones(object.get(), std::nullopt, std::nullopt))).size(), 10u);
}

TEST_F(PlainRead, AFilterThatCannotBeReadOrBoundIsNoFilter) {
  auto schema = Ok(arrow::ipc::SerializeSchema(*schema_));
  EXPECT_FALSE(BoundFilter(Text("not an expression"), schema).has_value());
  EXPECT_FALSE(BoundFilter(Ok(cp::Serialize(cp::field_ref("missing"))), schema).has_value());
  EXPECT_FALSE(BoundFilter(nullptr, schema).has_value());
  EXPECT_FALSE(BoundFilter(Ok(cp::Serialize(cp::literal(true))), nullptr).has_value());
}

}  // namespace
}  // namespace skyhook
