#include "skyhook/storage/object/parsed_footers.h"

#include <malloc.h>

#include <cstring>
#include <string>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

// The Thrift footer of a Parquet file of `columns` int64 and as many text
// columns, `rows` rows in row groups of `group_rows`.
std::string Footer(int columns, int64_t rows, int64_t group_rows) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (int column = 0; column < columns; ++column) {
    arrow::Int64Builder numbers;
    arrow::StringBuilder texts;
    for (int64_t row = 0; row < rows; ++row) {
      EXPECT_TRUE(numbers.Append(row * (column + 1)).ok());
      EXPECT_TRUE(texts.Append("value " + std::to_string((row + column) % 97)).ok());
    }
    fields.push_back(arrow::field("n" + std::to_string(column), arrow::int64()));
    fields.push_back(arrow::field("t" + std::to_string(column), arrow::utf8()));
    arrays.push_back(*numbers.Finish());
    arrays.push_back(*texts.Finish());
  }
  auto table = arrow::Table::Make(arrow::schema(fields), arrays);
  auto sink = *arrow::io::BufferOutputStream::Create();
  EXPECT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink, group_rows,
                                         parquet::default_writer_properties(),
                                         parquet::default_arrow_writer_properties())
                  .ok());
  auto file = *sink->Finish();
  uint32_t length;
  std::memcpy(&length, file->data() + file->size() - 8, sizeof(length));
  return std::string(reinterpret_cast<const char*>(file->data()) + file->size() - 8 - length,
                     length);
}

TEST(ParsedFooters, ParsesOnceAndServesTheSameBytesFromTheCache) {
  ParsedFooters footers(64 << 20);
  const std::string footer = Footer(2, 100, 10);
  auto first = footers.Get(footer);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->metadata->num_rows(), 100);
  EXPECT_EQ((*first)->metadata->num_row_groups(), 10);
  EXPECT_EQ((*first)->schema->num_fields(), 4);
  auto again = footers.Get(std::string(footer));  // equal bytes, another buffer
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first->get());
  EXPECT_EQ(footers.parses(), 1);
  EXPECT_EQ(footers.entries(), 1u);
  EXPECT_EQ(footers.bytes(), ParsedFooters::Charge(static_cast<int64_t>(footer.size())));
}

TEST(ParsedFooters, AnyOtherFooterIsParsedAnew) {
  ParsedFooters footers(64 << 20);
  auto groups = footers.Get(Footer(2, 100, 10));
  auto other_groups = footers.Get(Footer(2, 100, 20));
  auto other_schema = footers.Get(Footer(3, 100, 10));
  ASSERT_TRUE(groups.ok() && other_groups.ok() && other_schema.ok());
  EXPECT_EQ((*other_groups)->metadata->num_row_groups(), 5);
  EXPECT_EQ((*other_schema)->schema->num_fields(), 6);
  EXPECT_EQ(footers.parses(), 3);
  EXPECT_EQ(footers.entries(), 3u);
}

TEST(ParsedFooters, OffKeepsNothing) {
  ParsedFooters footers(0);
  const std::string footer = Footer(1, 10, 10);
  ASSERT_TRUE(footers.Get(footer).ok());
  ASSERT_TRUE(footers.Get(footer).ok());
  EXPECT_EQ(footers.parses(), 2);
  EXPECT_EQ(footers.entries(), 0u);
  EXPECT_EQ(footers.bytes(), 0);
}

TEST(ParsedFooters, TheLeastRecentlyUsedGoesFirstAndTheBoundHolds) {
  const std::string a = Footer(1, 30, 10), b = Footer(1, 30, 15), c = Footer(1, 30, 30);
  const int64_t bound = ParsedFooters::Charge(static_cast<int64_t>(a.size())) +
                        ParsedFooters::Charge(static_cast<int64_t>(b.size()));
  ASSERT_GE(bound, ParsedFooters::Charge(static_cast<int64_t>(c.size())) +
                       ParsedFooters::Charge(static_cast<int64_t>(a.size())));
  ParsedFooters footers(bound);
  ASSERT_TRUE(footers.Get(a).ok());
  ASSERT_TRUE(footers.Get(b).ok());
  ASSERT_TRUE(footers.Get(a).ok());  // a is now the most recent
  EXPECT_EQ(footers.parses(), 2);
  ASSERT_TRUE(footers.Get(c).ok());  // b goes
  EXPECT_EQ(footers.parses(), 3);
  EXPECT_EQ(footers.entries(), 2u);
  EXPECT_LE(footers.bytes(), bound);
  ASSERT_TRUE(footers.Get(a).ok());
  EXPECT_EQ(footers.parses(), 3);
  ASSERT_TRUE(footers.Get(b).ok());
  EXPECT_EQ(footers.parses(), 4);
  EXPECT_LE(footers.bytes(), bound);
}

TEST(ParsedFooters, AFooterLargerThanTheBoundIsParsedButNotKept) {
  const std::string footer = Footer(4, 100, 10);
  ParsedFooters footers(ParsedFooters::Charge(static_cast<int64_t>(footer.size())) - 1);
  ASSERT_TRUE(footers.Get(footer).ok());
  ASSERT_TRUE(footers.Get(footer).ok());
  EXPECT_EQ(footers.parses(), 2);
  EXPECT_EQ(footers.entries(), 0u);
}

TEST(ParsedFooters, AFooterThatFailsToParseIsNeverKept) {
  ParsedFooters footers(64 << 20);
  std::string footer = Footer(1, 10, 10);
  footer.resize(footer.size() / 2);  // truncated Thrift
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto parsed = footers.Get(footer);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(CodeOf(parsed.status()), ErrorCode::kCorruptObject) << parsed.status();
  }
  EXPECT_EQ(footers.entries(), 0u);
  EXPECT_EQ(footers.bytes(), 0);
}

// The charge bounds what a kept footer holds on the heap (glibc's count, and
// Arrow's pool), for a narrow and a wide footer, many row groups.
TEST(ParsedFooters, TheChargeBoundsTheMemoryAParsedFooterHolds) {
  for (int columns : {1, 16, 64}) {
    std::string footer = Footer(columns, 2000, 50);
    const int64_t size = static_cast<int64_t>(footer.size());
    const auto before = mallinfo2().uordblks;
    const int64_t pool_before = arrow::default_memory_pool()->bytes_allocated();
    auto parsed = ParseFooter(std::move(footer));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const int64_t held = static_cast<int64_t>(mallinfo2().uordblks - before) +
                         arrow::default_memory_pool()->bytes_allocated() - pool_before;
    EXPECT_LE(held, ParsedFooters::Charge(size)) << columns << " columns, footer " << size;
    EXPECT_GE(held, size) << "the measure must see the parse at all";
  }
}

}  // namespace
}  // namespace skyhook
