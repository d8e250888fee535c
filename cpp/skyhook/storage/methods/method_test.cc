#include "skyhook/storage/methods/method.h"

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <string_view>

#include <arrow/scalar.h>
#include <gtest/gtest.h>

#include "file_object_context.h"
#include "skyhook/protocol/frame.h"

namespace skyhook {
namespace {

namespace fs = std::filesystem;

// A writer as one would be registered: the request's bytes become the object's.
Reply WriteRequest(MutableObjectContext* object, const std::shared_ptr<arrow::Buffer>& request) {
  auto written = object->WriteFull(*request);
  return written.ok() ? Reply{} : Reply::FromStatus(written);
}

constexpr MethodInfo kWriter = {"write_request", WriteMethod{&WriteRequest}};

// A reader whose only work is its reply: 256 MiB of body to frame.
Reply LargeReply(ObjectContext*, const std::shared_ptr<arrow::Buffer>&) {
  Reply reply;
  reply.statistics = {{"storage_cpu_ns", 0}};
  auto body = arrow::AllocateBuffer(int64_t{256} << 20).ValueOrDie();
  std::memset(body->mutable_data(), 1, body->size());
  reply.body = std::move(body);
  return reply;
}

fs::path TemporaryDirectory() {
  std::string pattern = (fs::temp_directory_path() / "skyhook-unit-XXXXXX").string();
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

ErrorCode StatusOf(const std::shared_ptr<arrow::Buffer>& reply) {
  auto frame = DecodeFrame(reply, kReplyMagic).ValueOrDie();
  auto status = frame.header->GetColumnByName("status")->GetScalar(0).ValueOrDie();
  return static_cast<ErrorCode>(static_cast<const arrow::Int32Scalar&>(*status).value);
}

TEST(Methods, OnlyTheSecondaryDesignBuildersAndTransformWrite) {
  const std::set<std::string_view> writers = {"analyze", "create_index", "drop_index", "transform"};
  for (const auto& method : kMethods) {
    EXPECT_EQ(method.writes(), writers.count(method.name) == 1) << method.name;
  }
  EXPECT_TRUE(kWriter.writes());
  EXPECT_EQ(FindMethod("describe"), &kMethods[1]);
  EXPECT_EQ(FindMethod("write_request"), nullptr);
}

TEST(Methods, AWriterGetsTheMutableContextOnlyWhereThereIsOne) {
  const fs::path root = TemporaryDirectory();
  FileObjectContext object((root / "object").string(), (root / "omap.sqlite").string());
  auto request = std::make_shared<arrow::Buffer>("new bytes");

  EXPECT_EQ(StatusOf(RunMethod(kWriter, static_cast<ObjectContext*>(&object), request)),
            ErrorCode::kInternal);
  EXPECT_FALSE(fs::exists(root / "object"));

  EXPECT_EQ(StatusOf(RunMethod(kWriter, &object, request)), ErrorCode::kOk);
  EXPECT_EQ(object.Read(0, 100).ValueOrDie()->ToString(), "new bytes");
  fs::remove_all(root);
}

TEST(Methods, AReaderRunsOnEitherContext) {
  const fs::path root = TemporaryDirectory();
  FileObjectContext object((root / "missing").string(), (root / "omap.sqlite").string());
  auto request = std::make_shared<arrow::Buffer>("not a request");
  // Decoding fails before the object is touched, on both paths alike.
  EXPECT_EQ(StatusOf(RunMethod(*FindMethod("describe"), &object, request)),
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(
      StatusOf(RunMethod(*FindMethod("describe"), static_cast<ObjectContext*>(&object), request)),
      ErrorCode::kInvalidRequest);
  fs::remove_all(root);
}

TEST(Methods, StorageCpuCountsTheReplysFraming) {
  const fs::path root = TemporaryDirectory();
  FileObjectContext object((root / "object").string(), (root / "omap.sqlite").string());
  constexpr MethodInfo kLarge = {"large", ReadMethod{&LargeReply}};
  auto reply = RunMethod(kLarge, &object, std::make_shared<arrow::Buffer>(""));
  auto frame = DecodeFrame(reply, kReplyMagic).ValueOrDie();
  EXPECT_EQ(frame.body->size(), int64_t{256} << 20);
  auto cpu = HeaderReader(frame.header).Int64("storage_cpu_ns").ValueOrDie();
  // The method counted nothing; the call's count covers allocating the body
  // (the method's) and copying it into the frame.
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GT(*cpu, 1000000);
  fs::remove_all(root);
}

}  // namespace
}  // namespace skyhook
