#include "skyhook/storage/methods/execute_plan.h"

#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "proto/plan.pb.h"
#include "skyhook/errors/error.h"
#include "skyhook/protocol/frame.h"
#include "skyhook/storage/object/object_writer.h"
#include "skyhook/testing/designed_object.h"
#include "skyhook/testing/ok.h"

namespace skyhook {
namespace {

// Plans over an object of two columns (a: i64 0..999, b: string), as the
// client writes them (protobuf's text format).
// (Arrow's consumer knows the functions by their URIs in Substrait's repository.)
constexpr char kExtensions[] = R"(
  extension_uris { extension_uri_anchor: 1 uri: "https://github.com/substrait-io/substrait/blob/main/extensions/functions_comparison.yaml" }
  extension_uris { extension_uri_anchor: 2 uri: "https://github.com/substrait-io/substrait/blob/main/extensions/functions_arithmetic.yaml" }
  extensions { extension_function { extension_uri_reference: 1 function_anchor: 1 name: "gt:any_any" } }
  extensions { extension_function { extension_uri_reference: 2 function_anchor: 2 name: "sum:i64" } }
)";
constexpr char kColumnA[] =
    "selection { direct_reference { struct_field { field: 0 } } root_reference {} }";

std::string Read(const std::string& table = "object") {
  return "read { base_schema { names: \"a\" names: \"b\" struct { types { i64 {} } types { string "
         "{} } } } named_table { names: \"" +
         table + "\" } }";
}

std::string AOver(const std::string& input) {
  return "project { common { emit { output_mapping: 2 } } input { " + input + " } expressions { " +
         kColumnA + " } }";
}

std::string AAbove(int64_t bound) {
  return "filter { input { " + Read() +
         " } condition { scalar_function { function_reference: 1 output_type { bool {} } "
         "arguments { value { " +
         kColumnA + " } } arguments { value { literal { i64: " + std::to_string(bound) +
         " } } } } } }";
}

std::string SumOfA(const std::string& input) {
  return "aggregate { input { " + input +
         " } measures { measure { function_reference: 2 phase: "
         "AGGREGATION_PHASE_INITIAL_TO_RESULT output_type { i64 {} } arguments { value { " +
         kColumnA + " } } } } }";
}

std::shared_ptr<arrow::Buffer> Request(const std::string& root, const std::string& names) {
  proto::Plan plan;
  auto text =
      std::string(kExtensions) + " relations { root { input { " + root + " } " + names + " } }";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &plan)) << text;
  arrow::StringBuilder method;
  arrow::BinaryBuilder serialized;
  EXPECT_TRUE(method.Append("execute_plan").ok());
  EXPECT_TRUE(serialized.Append(plan.SerializeAsString()).ok());
  auto header = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("method", arrow::utf8()), arrow::field("plan", arrow::binary())}),
      1, {Ok(method.Finish()), Ok(serialized.Finish())});
  return Ok(EncodeFrame(kRequestMagic, *header, arrow::Buffer("")));
}

class ExecutePlanMethod : public testing::Test {
 protected:
  void SetUp() override {
    arrow::Int64Builder a;
    arrow::StringBuilder b;
    for (int64_t row = 0; row < 1000; ++row) {
      ASSERT_TRUE(a.Append(row).ok());
      ASSERT_TRUE(b.Append("v" + std::to_string(row % 7)).ok());
    }
    auto table = arrow::Table::Make(
        arrow::schema({arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8())}),
        {Ok(a.Finish()), Ok(b.Finish())});
    ObjectDesign request;
    request.format = ObjectFormat::kParquet;
    request.row_group_size = 256;
    request.column_groups = {{{"a", "b"}, 0, 0}};
    auto encoded = Ok(EncodeObject(table, request, arrow::default_memory_pool()));
    object_ = std::make_unique<DesignedObject>(encoded.data, encoded.design);
  }

  // The reply's body as a table; the reply must be a success.
  std::shared_ptr<arrow::Table> Answer(const Reply& reply) {
    EXPECT_EQ(reply.code, ErrorCode::kOk) << reply.message;
    if (reply.body == nullptr) return nullptr;
    auto stream = Ok(arrow::ipc::RecordBatchStreamReader::Open(
        std::make_shared<arrow::io::BufferReader>(reply.body)));
    return Ok(stream->ToTable());
  }

  std::unique_ptr<DesignedObject> object_;
};

TEST_F(ExecutePlanMethod, AProjectionReturnsTheColumnOfEveryRow) {
  auto reply = ExecutePlan(object_.get(), Request(AOver(Read()), "names: \"a\""));
  auto table = Answer(reply);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->num_rows(), 1000);
  EXPECT_EQ(table->schema()->field_names(), std::vector<std::string>{"a"});
  EXPECT_EQ(reply.executed, Executed::kAll);
}

TEST_F(ExecutePlanMethod, AFilterKeepsTheRowsItMatches) {
  auto table = Answer(ExecutePlan(object_.get(), Request(AOver(AAbove(899)), "names: \"a\"")));
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->num_rows(), 100);
}

TEST_F(ExecutePlanMethod, AnAggregateAnswersWithItsResult) {
  auto reply = ExecutePlan(object_.get(), Request(SumOfA(AOver(AAbove(989))), "names: \"sum\""));
  auto table = Answer(reply);
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->num_rows(), 1);
  EXPECT_EQ(Ok(table->column(0)->GetScalar(0))->ToString(), "9945");  // 990 + ... + 999
}

TEST_F(ExecutePlanMethod, FailuresTravelInTheReply) {
  auto other_table = ExecutePlan(object_.get(), Request(AOver(Read("lineitem")), "names: \"a\""));
  EXPECT_EQ(other_table.code, ErrorCode::kInvalidRequest) << other_table.message;
  auto garbage = ExecutePlan(object_.get(), arrow::Buffer::FromString("not a request"));
  EXPECT_EQ(garbage.code, ErrorCode::kInvalidRequest) << garbage.message;
  DesignedObject damaged(arrow::Buffer::FromString(std::string(512, 'x')), ObjectDesign{});
  auto unreadable = ExecutePlan(&damaged, Request(AOver(Read()), "names: \"a\""));
  EXPECT_NE(unreadable.code, ErrorCode::kOk);
}

}  // namespace
}  // namespace skyhook
