#include "client/arrow_dataset/object_dataset.h"

#include <atomic>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/dataset/scanner.h>
#include <arrow/json/from_string.h>
#include <arrow/util/async_generator.h>
#include <gtest/gtest.h>

namespace skyhook::client {
namespace {

namespace cp = arrow::compute;

// Records what the fragments ask for and answers with a fixed table.
class RecordingHandler : public ObjectScanHandler {
 public:
  explicit RecordingHandler(std::shared_ptr<arrow::Table> table) : table_(std::move(table)) {}

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Scan(const ObjectScan& scan) override {
    ++calls;
    last = scan;
    return std::make_shared<arrow::TableBatchReader>(table_);
  }

  std::atomic<int> calls{0};
  ObjectScan last;

 private:
  std::shared_ptr<arrow::Table> table_;
};

std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema({arrow::field("x", arrow::int64()), arrow::field("y", arrow::utf8())});
}

cp::Expression Bound(cp::Expression expression) { return expression.Bind(*Schema()).ValueOrDie(); }

// x in [low, high] for every row of an object.
cp::Expression Range(int64_t low, int64_t high) {
  return cp::and_(cp::greater_equal(cp::field_ref("x"), cp::literal(low)),
                  cp::less_equal(cp::field_ref("x"), cp::literal(high)));
}

struct Fixture {
  std::shared_ptr<RecordingHandler> handler = std::make_shared<RecordingHandler>(arrow::Table::Make(
      Schema(), {arrow::json::ArrayFromJSONString(arrow::int64(), "[11, 12]").ValueOrDie(),
                 arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["a", "b"])").ValueOrDie()}));
  std::shared_ptr<ObjectDataset> dataset = std::make_shared<ObjectDataset>(
      Schema(),
      std::vector<std::shared_ptr<ObjectFragment>>{
          std::make_shared<ObjectFragment>(0, 10, Bound(Range(0, 9)), Schema(), handler),
          std::make_shared<ObjectFragment>(1, 10, Bound(Range(10, 19)), Schema(), handler),
          std::make_shared<ObjectFragment>(2, 0, cp::literal(false), Schema(), handler)});

  std::vector<int64_t> Kept(const cp::Expression& predicate) {
    std::vector<int64_t> kept;
    for (auto fragment : dataset->GetFragments(Bound(predicate)).ValueOrDie()) {
      kept.push_back(static_cast<ObjectFragment&>(*fragment.ValueOrDie()).object_index());
    }
    return kept;
  }
};

TEST(ObjectDataset, PrunesObjectsByTheirGuarantees) {
  Fixture fixture;
  EXPECT_EQ(fixture.Kept(cp::literal(true)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(fixture.Kept(cp::greater(cp::field_ref("x"), cp::literal(12))),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(fixture.Kept(cp::less(cp::field_ref("x"), cp::literal(0))), (std::vector<int64_t>{}));
  EXPECT_EQ(fixture.Kept(cp::equal(cp::field_ref("y"), cp::literal("a"))),
            (std::vector<int64_t>{0, 1}));
}

TEST(ObjectDataset, ReplaceSchemaOnlyWidens) {
  Fixture fixture;
  auto wider = arrow::schema({arrow::field("x", arrow::int64()), arrow::field("y", arrow::utf8()),
                              arrow::field("z", arrow::float64())});
  EXPECT_TRUE(fixture.dataset->ReplaceSchema(wider).ok());
  auto retyped =
      arrow::schema({arrow::field("x", arrow::int32()), arrow::field("y", arrow::utf8())});
  EXPECT_TRUE(fixture.dataset->ReplaceSchema(retyped).status().IsTypeError());
}

TEST(ObjectFragment, AsksForMaterializedColumnsAndWhatTheGuaranteeLeaves) {
  Fixture fixture;
  auto options = std::make_shared<arrow::dataset::ScanOptions>();
  options->dataset_schema = Schema();
  options->filter = Bound(cp::and_(cp::greater(cp::field_ref("x"), cp::literal(5)),
                                   cp::equal(cp::field_ref("y"), cp::literal("a"))));
  arrow::dataset::SetProjection(
      options.get(), arrow::dataset::ProjectionDescr::FromNames({"x"}, *Schema()).ValueOrDie());
  auto fragment = fixture.dataset->GetFragments().ValueOrDie().Next().ValueOrDie();  // x in [0, 9]
  auto batches = arrow::CollectAsyncGenerator(fragment->ScanBatchesAsync(options).ValueOrDie());
  ASSERT_TRUE(batches.result().ok()) << batches.result().status();
  EXPECT_EQ(fixture.handler->calls, 1);
  EXPECT_EQ(fixture.handler->last.object_index, 0);
  EXPECT_EQ(fixture.handler->last.columns, (std::vector<std::string>{"x", "y"}));
  // x > 5 still matters for x in [0, 9]; y == "a" always does.
  EXPECT_EQ(fixture.handler->last.filter, options->filter);

  auto second = fixture.dataset->GetFragments(options->filter).ValueOrDie();
  second.Next().ValueOrDie();
  auto later = second.Next().ValueOrDie();  // x in [10, 19]: x > 5 holds for every row
  ASSERT_TRUE(
      arrow::CollectAsyncGenerator(later->ScanBatchesAsync(options).ValueOrDie()).result().ok());
  EXPECT_EQ(fixture.handler->last.filter, Bound(cp::equal(cp::field_ref("y"), cp::literal("a"))));
}

TEST(ObjectFragment, LeavesColumnsTheObjectLacksToArrow) {
  Fixture fixture;
  auto wider = arrow::schema({arrow::field("x", arrow::int64()), arrow::field("y", arrow::utf8()),
                              arrow::field("z", arrow::float64())});
  auto options = std::make_shared<arrow::dataset::ScanOptions>();
  options->dataset_schema = wider;
  auto bind = [&](cp::Expression expression) { return expression.Bind(*wider).ValueOrDie(); };
  options->filter = bind(
      cp::and_(cp::is_null(cp::field_ref("z")), cp::greater(cp::field_ref("x"), cp::literal(5))));
  arrow::dataset::SetProjection(
      options.get(), arrow::dataset::ProjectionDescr::FromNames({"x", "z"}, *wider).ValueOrDie());
  auto fragment = fixture.dataset->GetFragments().ValueOrDie().Next().ValueOrDie();
  ASSERT_TRUE(
      arrow::CollectAsyncGenerator(fragment->ScanBatchesAsync(options).ValueOrDie()).result().ok());
  EXPECT_EQ(fixture.handler->last.columns, (std::vector<std::string>{"x"}));
  EXPECT_EQ(fixture.handler->last.filter, bind(cp::greater(cp::field_ref("x"), cp::literal(5))));

  // Storage never hears of the missing column: a comparison with it is null.
  options->filter = bind(cp::greater(cp::field_ref("z"), cp::literal(1.5)));
  ASSERT_TRUE(
      arrow::CollectAsyncGenerator(fragment->ScanBatchesAsync(options).ValueOrDie()).result().ok());
  EXPECT_TRUE(cp::FieldsInExpression(fixture.handler->last.filter).empty());
}

TEST(ObjectFragment, CountsRowsFromTheManifestOnlyWhenEveryRowPasses) {
  Fixture fixture;
  auto options = std::make_shared<arrow::dataset::ScanOptions>();
  auto fragment = fixture.dataset->GetFragments().ValueOrDie().Next().ValueOrDie();
  EXPECT_EQ(fragment->CountRows(cp::literal(true), options).result().ValueOrDie(), 10);
  auto within = Bound(cp::less(cp::field_ref("x"), cp::literal(100)));
  EXPECT_EQ(fragment->CountRows(within, options).result().ValueOrDie(), 10);
  auto partial = Bound(cp::less(cp::field_ref("x"), cp::literal(5)));
  EXPECT_FALSE(fragment->CountRows(partial, options).result().ValueOrDie().has_value());
  EXPECT_EQ(fixture.handler->calls, 0);
}

}  // namespace
}  // namespace skyhook::client
