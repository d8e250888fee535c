#include "skyhook/storage/runtime/result_writer.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/runtime/delta_encoding.h"

namespace skyhook {
namespace {

constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

// `rows` consecutive int64 values from `first` in column "x".
std::shared_ptr<arrow::RecordBatch> Rows(int64_t first, int64_t rows) {
  std::vector<int64_t> values(rows);
  std::iota(values.begin(), values.end(), first);
  arrow::Int64Builder builder;
  EXPECT_TRUE(builder.AppendValues(values).ok());
  return arrow::RecordBatch::Make(arrow::schema({arrow::field("x", arrow::int64())}), rows,
                                  {builder.Finish().ValueOrDie()});
}

std::unique_ptr<ResultWriter> Writer(int64_t batch_size, bool delta = false) {
  ResultOptions options;
  options.batch_size = batch_size;
  options.delta_sorted_integers = delta;
  return ResultWriter::Open(Rows(0, 1)->schema(), options, kNoLimit).ValueOrDie();
}

// The batches of a written reply, with each one's metadata.
std::vector<std::shared_ptr<arrow::RecordBatch>> Batches(
    const std::shared_ptr<arrow::Buffer>& body,
    std::vector<std::shared_ptr<const arrow::KeyValueMetadata>>* metadata = nullptr) {
  auto reader =
      arrow::ipc::RecordBatchStreamReader::Open(std::make_shared<arrow::io::BufferReader>(body))
          .ValueOrDie();
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    auto next = reader->ReadNext().ValueOrDie();
    if (next.batch == nullptr) return batches;
    batches.push_back(next.batch);
    if (metadata != nullptr) metadata->push_back(next.custom_metadata);
  }
}

TEST(ResultWriter, JoinsSmallBatchesUpToTheBatchSize) {
  auto writer = Writer(/*batch_size=*/250);
  for (int64_t start = 0; start < 1000; start += 100) {
    ASSERT_TRUE(writer->Write(Rows(start, 100)).ok());
  }
  EXPECT_EQ(writer->rows_written(), 1000);  // waiting ones included
  auto batches = Batches(writer->Finish().ValueOrDie());
  std::vector<int64_t> sizes;
  for (const auto& batch : batches) sizes.push_back(batch->num_rows());
  EXPECT_EQ(sizes, (std::vector<int64_t>{200, 200, 200, 200, 200}));
  int64_t expected = 0;
  for (const auto& batch : batches) {
    const auto& values = static_cast<const arrow::Int64Array&>(*batch->column(0));
    for (int64_t i = 0; i < values.length(); ++i) EXPECT_EQ(values.Value(i), expected++);
  }
}

TEST(ResultWriter, ABatchAtTheSizeGoesAlone) {
  auto writer = Writer(/*batch_size=*/100);
  ASSERT_TRUE(writer->Write(Rows(0, 100)).ok());
  ASSERT_TRUE(writer->Write(Rows(100, 100)).ok());
  EXPECT_EQ(Batches(writer->Finish().ValueOrDie()).size(), 2u);
}

TEST(ResultWriter, JoinsNoMoreThanAMebibyte) {
  auto writer = Writer(/*batch_size=*/1 << 20);
  constexpr int64_t kRows = 100 * 1024;  // 800 KiB a batch
  ASSERT_TRUE(writer->Write(Rows(0, kRows)).ok());
  ASSERT_TRUE(writer->Write(Rows(kRows, kRows)).ok());
  EXPECT_EQ(Batches(writer->Finish().ValueOrDie()).size(), 2u);
}

TEST(ResultWriter, WaitingBatchesCountTowardsTheLimits) {
  ResultOptions options;
  options.max_result_bytes = 4096;
  auto writer =
      ResultWriter::Open(Rows(0, 1)->schema(), options, /*node_max_bytes=*/2048).ValueOrDie();
  ASSERT_TRUE(writer->Write(Rows(0, 200)).ok());           // 1,600 bytes, not yet written
  EXPECT_FALSE(writer->Fits(*Rows(0, 100)).ValueOrDie());  // past the node's 2,048
  auto past_client = writer->Fits(*Rows(0, 400));
  ASSERT_FALSE(past_client.ok());
  EXPECT_EQ(CodeOf(past_client.status()), ErrorCode::kResultTooLarge);
}

TEST(ResultWriter, AJoinedBatchIsDeltaEncodedWhole) {
  auto writer = Writer(/*batch_size=*/4 * kMinDeltaRows, /*delta=*/true);
  ASSERT_TRUE(writer->Write(Rows(0, 2 * kMinDeltaRows)).ok());
  ASSERT_TRUE(writer->Write(Rows(2 * kMinDeltaRows, 2 * kMinDeltaRows)).ok());
  std::vector<std::shared_ptr<const arrow::KeyValueMetadata>> metadata;
  auto batches = Batches(writer->Finish().ValueOrDie(), &metadata);
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_NE(metadata[0], nullptr);
  EXPECT_EQ(metadata[0]->Get(kDeltaMetadataKey).ValueOrDie(), "0");
}

TEST(ResultWriter, AReplyThatMightPassItsObjectIsWrittenAtOnce) {
  ResultOptions options;
  options.within_object = true;
  auto writer = ResultWriter::Open(Rows(0, 1)->schema(), options, kNoLimit, /*object_bytes=*/5000)
                    .ValueOrDie();
  ASSERT_TRUE(writer->Write(Rows(0, 100)).ok());  // 800 bytes: joined later
  auto past = writer->Write(Rows(100, 600));      // 5,600 bytes in all: written now, and too many
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(CodeOf(past), ErrorCode::kPushedBack);
}

}  // namespace
}  // namespace skyhook
