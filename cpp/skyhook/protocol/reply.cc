#include "skyhook/protocol/reply.h"

#include <arrow/array/util.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/util/utf8.h>

#include "skyhook/protocol/frame.h"

namespace skyhook {
namespace {

// Messages quote object and request bytes; the header's message is utf8.
std::string ValidUtf8(const std::string& text) {
  if (arrow::util::ValidateUTF8(text)) return text;
  std::string cleaned;
  for (unsigned char c : text) cleaned.push_back(c < 0x80 ? static_cast<char>(c) : '?');
  return cleaned;
}

}  // namespace

Reply Reply::FromStatus(const arrow::Status& status) {
  Reply reply;
  reply.message = status.message();
  if (CodeOf(status) == ErrorCode::kPushedBack) {
    reply.executed = Executed::kNone;
  } else {
    reply.code = CodeOf(status);
  }
  return reply;
}

namespace {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> HeaderOf(const Reply& reply) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> columns;
  auto add = [&](const std::string& name,
                 const std::shared_ptr<arrow::Scalar>& value) -> arrow::Status {
    fields.push_back(arrow::field(name, value->type, /*nullable=*/false));
    ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*value, 1));
    columns.push_back(std::move(array));
    return arrow::Status::OK();
  };
  ARROW_RETURN_NOT_OK(add("status", arrow::MakeScalar(static_cast<int32_t>(reply.code))));
  ARROW_RETURN_NOT_OK(
      add("message", std::make_shared<arrow::StringScalar>(ValidUtf8(reply.message))));
  const char* executed = reply.executed == Executed::kAll          ? "all"
                         : reply.executed == Executed::kFilterOnly ? "filter"
                                                                   : "none";
  ARROW_RETURN_NOT_OK(add("executed", std::make_shared<arrow::StringScalar>(executed)));
  if (reply.resume_row) {
    ARROW_RETURN_NOT_OK(add("resume_row", arrow::MakeScalar(*reply.resume_row)));
  }
  for (const auto& [name, value] : reply.statistics) {
    ARROW_RETURN_NOT_OK(add(name, arrow::MakeScalar(value)));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), 1, columns);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeReply(const Reply& reply) {
  ARROW_ASSIGN_OR_RAISE(auto header, HeaderOf(reply));
  auto body = reply.body ? reply.body : std::make_shared<arrow::Buffer>(nullptr, 0);
  return EncodeFrame(kReplyMagic, *header, *body);
}

arrow::Status SetStatistic(arrow::Buffer* encoded, Reply* reply, std::string_view name,
                           int64_t value) {
  for (auto& [statistic, old_value] : reply->statistics) {
    if (statistic != name) continue;
    old_value = value;
    ARROW_ASSIGN_OR_RAISE(auto header, HeaderOf(*reply));
    return ReplaceFrameHeader(encoded, *header);
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
