#include "skyhook/protocol/frame.h"

#include <cstring>
#include <functional>

#include <arrow/array/util.h>
#include <arrow/scalar.h>
#include <gtest/gtest.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

std::shared_ptr<arrow::RecordBatch> Header(int64_t rows = 1) {
  auto method = arrow::MakeArrayFromScalar(arrow::StringScalar("scan"), rows).ValueOrDie();
  auto batch_size = arrow::MakeArrayFromScalar(arrow::Int64Scalar(1024), rows).ValueOrDie();
  auto schema = arrow::schema(
      {arrow::field("method", arrow::utf8()), arrow::field("batch_size", arrow::int64())});
  return arrow::RecordBatch::Make(schema, rows, {method, batch_size});
}

std::shared_ptr<arrow::Buffer> Encoded(const std::string& body = "body bytes") {
  return EncodeFrame(kRequestMagic, *Header(), arrow::Buffer(body)).ValueOrDie();
}

// A copy of the message whose bytes `edit` may change.
std::shared_ptr<arrow::Buffer> Edited(const std::shared_ptr<arrow::Buffer>& message,
                                      const std::function<void(uint8_t*)>& edit) {
  auto copy = arrow::AllocateBuffer(message->size()).ValueOrDie();
  std::memcpy(copy->mutable_data(), message->data(), message->size());
  edit(copy->mutable_data());
  return copy;
}

ErrorCode CodeOfDecoding(const std::shared_ptr<arrow::Buffer>& message) {
  auto frame = DecodeFrame(message, kRequestMagic);
  return frame.ok() ? ErrorCode::kOk : CodeOf(frame.status());
}

TEST(Frame, DecodesWhatItEncodes) {
  auto message = Encoded();
  auto frame = DecodeFrame(message, kRequestMagic);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_EQ(frame->version, kProtocolVersion);
  EXPECT_TRUE(frame->header->Equals(*Header()));
  EXPECT_EQ(frame->body->ToString(), "body bytes");
  // The header is padded so that the body starts 8-byte aligned.
  EXPECT_EQ((frame->body->data() - message->data()) % 8, 0);
}

TEST(Frame, DecodesAnEmptyBody) {
  auto frame = DecodeFrame(Encoded(""), kRequestMagic);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_EQ(frame->body->size(), 0);
}

TEST(Frame, ReplacesAHeaderOfTheSameLengthInPlace) {
  auto message = Encoded();
  auto other = Header();
  auto batch_size = arrow::MakeArrayFromScalar(arrow::Int64Scalar(7), 1).ValueOrDie();
  other = other->SetColumn(1, other->schema()->field(1), batch_size).ValueOrDie();
  ASSERT_TRUE(ReplaceFrameHeader(message.get(), *other).ok());
  auto frame = DecodeFrame(message, kRequestMagic);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_TRUE(frame->header->Equals(*other));
  EXPECT_EQ(frame->body->ToString(), "body bytes");
  // A header of another length would overwrite the body: refused, nothing changed.
  auto longer = Header()->AddColumn(2, "extra", batch_size).ValueOrDie();
  EXPECT_FALSE(ReplaceFrameHeader(message.get(), *longer).ok());
  EXPECT_TRUE(DecodeFrame(message, kRequestMagic)->header->Equals(*other));
}

TEST(Frame, RefusesTruncatedMessages) {
  auto message = Encoded();
  EXPECT_EQ(CodeOfDecoding(std::make_shared<arrow::Buffer>(nullptr, 0)),
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(CodeOfDecoding(arrow::SliceBuffer(message, 0, kFramePrefixSize - 1)),
            ErrorCode::kInvalidRequest);
  // Cut inside the header: its length now exceeds what follows the envelope.
  EXPECT_EQ(CodeOfDecoding(arrow::SliceBuffer(message, 0, kFramePrefixSize + 8)),
            ErrorCode::kInvalidRequest);
}

TEST(Frame, RefusesAnOversizedHeaderLength) {
  auto message = Edited(Encoded(), [](uint8_t* data) { std::memset(data + 8, 0xff, 4); });
  auto frame = DecodeFrame(message, kRequestMagic);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(CodeOf(frame.status()), ErrorCode::kInvalidRequest);
  EXPECT_NE(frame.status().message().find("truncated"), std::string::npos);
}

TEST(Frame, RefusesOtherVersions) {
  for (uint8_t version : {uint8_t{0}, uint8_t{kProtocolVersion + 1}, uint8_t{255}}) {
    auto message = Edited(Encoded(), [&](uint8_t* data) { data[4] = version; });
    EXPECT_EQ(CodeOfDecoding(message), ErrorCode::kUnsupportedVersion) << int{version};
  }
}

TEST(Frame, RefusesTheOtherSidesMagic) {
  auto frame = DecodeFrame(Encoded(), kReplyMagic);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(CodeOf(frame.status()), ErrorCode::kInvalidRequest);
}

TEST(Frame, RefusesAHeaderThatIsNotOneRow) {
  for (int64_t rows : {0, 2}) {
    auto message = EncodeFrame(kRequestMagic, *Header(rows), arrow::Buffer("")).ValueOrDie();
    EXPECT_EQ(CodeOfDecoding(message), ErrorCode::kInvalidRequest) << rows;
  }
}

TEST(Frame, RefusesAHeaderThatIsNotArrow) {
  auto message = Edited(Encoded(), [](uint8_t* data) {
    std::memset(data + kFramePrefixSize, 0x5a, 16);  // the IPC stream's first message
  });
  EXPECT_EQ(CodeOfDecoding(message), ErrorCode::kInvalidRequest);
}

TEST(HeaderReader, ReadsTypedFields) {
  HeaderReader header(Header());
  EXPECT_EQ(header.String("method").ValueOrDie(), "scan");
  EXPECT_EQ(header.Int64("batch_size").ValueOrDie(), 1024);
  EXPECT_EQ(header.Int64("absent").ValueOrDie(), std::nullopt);
  auto wrong = header.Int64("method");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(CodeOf(wrong.status()), ErrorCode::kInvalidRequest);
  EXPECT_NE(wrong.status().message().find("'method'"), std::string::npos);
}

}  // namespace
}  // namespace skyhook
