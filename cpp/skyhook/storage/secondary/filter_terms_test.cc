#include "skyhook/storage/secondary/filter_terms.h"

#include <memory>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema({arrow::field("k", arrow::int64()), arrow::field("x", arrow::float64())});
}

std::vector<PhysicalRange> Ranges(const cp::Expression& filter, bool* whole) {
  auto bound = Ok(filter.Bind(*Schema()));
  return PhysicalRanges(bound, *Schema(), *Schema(), whole);
}

cp::Expression K() { return cp::field_ref("k"); }

TEST(PhysicalRanges, ComparisonsAreTheWholeFilter) {
  bool whole = false;
  auto ranges = Ranges(
      cp::and_(cp::equal(K(), cp::literal(int64_t{5})), cp::less(K(), cp::literal(int64_t{9}))),
      &whole);
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].low, 5);
  EXPECT_EQ(ranges[0].high, 5);
  EXPECT_TRUE(whole);
}

TEST(PhysicalRanges, AnInListNarrowsToItsExtremesWithoutBeingTheFilter) {
  auto values = Ok(arrow::json::ArrayFromJSONString(arrow::int64(), "[12, 3, 40]"));
  const auto is_in = cp::call("is_in", {K()}, cp::SetLookupOptions(values));
  const auto chain =
      cp::or_({cp::equal(K(), cp::literal(int64_t{40})), cp::equal(K(), cp::literal(int64_t{3}))});
  for (const cp::Expression& filter : {is_in, chain}) {
    bool whole = true;
    auto ranges = Ranges(cp::and_(filter, cp::greater(K(), cp::literal(int64_t{5}))), &whole);
    ASSERT_EQ(ranges.size(), 1u) << filter.ToString();
    EXPECT_EQ(ranges[0].low, 6);
    EXPECT_EQ(ranges[0].high, 40);
    EXPECT_FALSE(whole);
  }
}

TEST(PhysicalRanges, ListsWithNullsOrOfFloatsGiveNoRange) {
  auto with_null = Ok(arrow::json::ArrayFromJSONString(arrow::int64(), "[1, null]"));
  auto floats = Ok(arrow::json::ArrayFromJSONString(arrow::float64(), "[1.5, 2.5]"));
  for (const auto& filter :
       {cp::call("is_in", {K()}, cp::SetLookupOptions(with_null)),
        cp::call("is_in", {cp::field_ref("x")}, cp::SetLookupOptions(floats))}) {
    bool whole = true;
    EXPECT_TRUE(Ranges(filter, &whole).empty()) << filter.ToString();
    EXPECT_FALSE(whole);
  }
}

TEST(ExtractColumnTerms, AnInListIsOneTermBoundedByItsExtremes) {
  auto values = Ok(arrow::json::ArrayFromJSONString(arrow::int64(), "[12, 3, 40]"));
  for (const cp::Expression& filter :
       {cp::call("is_in", {K()}, cp::SetLookupOptions(values)),
        cp::or_({cp::equal(K(), cp::literal(int64_t{12})), cp::equal(K(), cp::literal(int64_t{3})),
                 cp::equal(K(), cp::literal(int64_t{40}))})}) {
    auto terms = ExtractColumnTerms(Ok(filter.Bind(*Schema())), *Schema());
    ASSERT_EQ(terms.count(0), 1u) << filter.ToString();
    EXPECT_EQ(terms[0].low->ToString(), "3");
    EXPECT_EQ(terms[0].high->ToString(), "40");
  }
}

}  // namespace
}  // namespace skyhook
