#include "skyhook/storage/object/ipc_blocks.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include <arrow/buffer.h>
#include <arrow/result.h>

namespace skyhook {
namespace {

constexpr int64_t kMagicBytes = 6;                  // "ARROW1"
constexpr int64_t kTrailerBytes = 4 + kMagicBytes;  // footer length, magic
constexpr int kFooterDictionaries = 2, kFooterRecordBatches = 3, kMessageBodyLength = 3;
constexpr int64_t kBlockBytes = 24;       // struct Block {int64 offset; int32 metadata; int64 body}
constexpr int64_t kMaxMessagePrefix = 8;  // continuation marker, metadata length

arrow::Status Lies(const char* what) {
  return arrow::Status::Invalid("the IPC file's ", what, " lies outside the file");
}

// A bounds-checked reader of one flatbuffer (Arrow's footer and messages).
class FlatBuffer {
 public:
  explicit FlatBuffer(std::string_view data) : data_(data) {}

  template <typename T>
  arrow::Result<T> Read(int64_t position) const {
    if (position < 0 || position > static_cast<int64_t>(data_.size()) ||
        static_cast<int64_t>(data_.size()) - position < static_cast<int64_t>(sizeof(T))) {
      return Lies("metadata");
    }
    T value;
    std::memcpy(&value, data_.data() + position, sizeof(T));
    return value;
  }

  arrow::Result<int64_t> Root() const { return Read<uint32_t>(0); }

  /// Where field `id` of the table at `table` is stored, or nullopt if absent.
  arrow::Result<std::optional<int64_t>> Field(int64_t table, int id) const {
    ARROW_ASSIGN_OR_RAISE(int32_t to_vtable, Read<int32_t>(table));
    int64_t vtable = table - to_vtable;
    ARROW_ASSIGN_OR_RAISE(uint16_t vtable_bytes, Read<uint16_t>(vtable));
    int64_t entry = 4 + 2 * int64_t{id};
    if (entry + 2 > vtable_bytes) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(uint16_t offset, Read<uint16_t>(vtable + entry));
    if (offset == 0) return std::nullopt;
    return table + offset;
  }

  /// The vector referenced at `position`: where its elements start, and how many.
  arrow::Result<std::pair<int64_t, int64_t>> Vector(int64_t position) const {
    ARROW_ASSIGN_OR_RAISE(uint32_t offset, Read<uint32_t>(position));
    ARROW_ASSIGN_OR_RAISE(uint32_t length, Read<uint32_t>(position + offset));
    return std::make_pair(position + offset + 4, int64_t{length});
  }

 private:
  std::string_view data_;
};

// The body length a block's message declares, checked against the room the
// block leaves for it before `end` (where the footer starts).
arrow::Status CheckMessage(ObjectFile* file, int64_t offset, int32_t metadata_length, int64_t end) {
  ARROW_ASSIGN_OR_RAISE(auto prefix, file->ReadAt(offset, kMaxMessagePrefix));
  FlatBuffer prefix_view(std::string_view(reinterpret_cast<const char*>(prefix->data()),
                                          static_cast<size_t>(prefix->size())));
  ARROW_ASSIGN_OR_RAISE(int32_t first, prefix_view.Read<int32_t>(0));
  int64_t start = first == -1 ? 8 : 4;  // continuation marker, or the legacy format
  ARROW_ASSIGN_OR_RAISE(int32_t flatbuffer_bytes, prefix_view.Read<int32_t>(start - 4));
  if (flatbuffer_bytes < 0 || start + flatbuffer_bytes > metadata_length) {
    return Lies("message metadata");
  }
  ARROW_ASSIGN_OR_RAISE(auto metadata, file->ReadAt(offset + start, flatbuffer_bytes));
  FlatBuffer message(std::string_view(reinterpret_cast<const char*>(metadata->data()),
                                      static_cast<size_t>(metadata->size())));
  ARROW_ASSIGN_OR_RAISE(int64_t root, message.Root());
  ARROW_ASSIGN_OR_RAISE(auto body_field, message.Field(root, kMessageBodyLength));
  if (!body_field) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(int64_t body_length, message.Read<int64_t>(*body_field));
  if (body_length < 0 || body_length > end - offset - metadata_length) {
    return Lies("message body");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<IpcLayout> CheckIpcBlocks(ObjectFile* file) {
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  if (size < 2 * kMagicBytes + kTrailerBytes) return Lies("footer");
  ARROW_ASSIGN_OR_RAISE(auto trailer, file->ReadAt(size - kTrailerBytes, 4));
  if (trailer->size() != 4) return Lies("footer");
  int32_t footer_bytes;
  std::memcpy(&footer_bytes, trailer->data(), 4);
  IpcLayout layout;
  layout.footer_start = size - kTrailerBytes - footer_bytes;
  if (footer_bytes <= 0 || layout.footer_start < kMagicBytes) return Lies("footer");
  ARROW_ASSIGN_OR_RAISE(auto footer_data, file->ReadAt(layout.footer_start, footer_bytes));
  FlatBuffer footer(std::string_view(reinterpret_cast<const char*>(footer_data->data()),
                                     static_cast<size_t>(footer_data->size())));
  ARROW_ASSIGN_OR_RAISE(int64_t root, footer.Root());
  for (int field : {kFooterDictionaries, kFooterRecordBatches}) {
    ARROW_ASSIGN_OR_RAISE(auto blocks, footer.Field(root, field));
    if (!blocks) continue;
    ARROW_ASSIGN_OR_RAISE(auto vector, footer.Vector(*blocks));
    auto [first, count] = vector;
    for (int64_t i = 0; i < count; ++i) {
      int64_t block = first + i * kBlockBytes;
      IpcBlock checked;
      ARROW_ASSIGN_OR_RAISE(checked.offset, footer.Read<int64_t>(block));
      ARROW_ASSIGN_OR_RAISE(checked.metadata_length, footer.Read<int32_t>(block + 8));
      ARROW_ASSIGN_OR_RAISE(checked.body_length, footer.Read<int64_t>(block + 16));
      const int64_t offset = checked.offset, metadata_length = checked.metadata_length;
      if (offset < kMagicBytes || offset > layout.footer_start || metadata_length < 8 ||
          checked.body_length < 0 || metadata_length > layout.footer_start - offset ||
          checked.body_length > layout.footer_start - offset - metadata_length) {
        return Lies("block");
      }
      // Dictionaries are read with any batch; a batch's message only when it is read.
      if (field == kFooterDictionaries) {
        ARROW_RETURN_NOT_OK(CheckIpcMessage(file, checked, layout.footer_start));
      } else {
        layout.record_batches.push_back(checked);
      }
    }
  }
  return layout;
}

arrow::Status CheckIpcMessage(ObjectFile* file, const IpcBlock& block, int64_t footer_start) {
  return CheckMessage(file, block.offset, block.metadata_length, footer_start);
}

}  // namespace skyhook
