#include "skyhook/storage/object/parsed_footers.h"

#include <cstring>
#include <utility>

#include <arrow/io/memory.h>
#include <arrow/util/hashing.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/dictionary_columns.h"
#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {
namespace {

constexpr int64_t kTailBytes = 8;  // the footer's length and the magic

arrow::Status Corrupt(const std::string& message) {
  return Error(ErrorCode::kCorruptObject, "object is not a readable Parquet partition: ", message);
}

arrow::Status Corrupt(const arrow::Status& cause) {
  if (CodeOf(cause) != ErrorCode::kInternal) return cause;
  return Corrupt(cause.message());
}

uint64_t Hash(std::string_view bytes) {
  return arrow::internal::ComputeStringHash<0>(bytes.data(), static_cast<int64_t>(bytes.size()));
}

// The schema a reader with these properties decodes, if every column is the
// stored one or a dictionary of exactly it (as SmallDictionaryLeaves asks);
// nullptr otherwise. Nothing is read: the metadata is given.
arrow::Result<std::shared_ptr<arrow::Schema>> DecodedSchema(
    const std::shared_ptr<parquet::FileMetaData>& metadata,
    const parquet::ArrowReaderProperties& properties, const arrow::Schema& schema) {
  parquet::arrow::FileReaderBuilder builder;
  auto opened = builder.Open(
      std::make_shared<arrow::io::BufferReader>(std::make_shared<arrow::Buffer>(nullptr, 0)),
      parquet::ReaderProperties(), metadata);
  if (!opened.ok()) return Corrupt(opened);
  auto reader = builder.properties(properties)->Build();
  if (!reader.ok()) return Corrupt(reader.status());
  std::shared_ptr<arrow::Schema> decoded;
  auto status = (*reader)->GetSchema(&decoded);
  if (!status.ok()) return Corrupt(status);
  if (decoded->num_fields() != schema.num_fields()) return nullptr;
  for (int i = 0; i < schema.num_fields(); ++i) {
    const auto& type = *decoded->field(i)->type();
    const auto& stored = *schema.field(i)->type();
    if (type.Equals(stored)) continue;
    if (type.id() != arrow::Type::DICTIONARY ||
        !static_cast<const arrow::DictionaryType&>(type).value_type()->Equals(stored)) {
      return nullptr;
    }
  }
  return decoded;
}

}  // namespace

parquet::ArrowReaderProperties StorageReadProperties(const ParsedFooter& footer) {
  parquet::ArrowReaderProperties properties;
  properties.set_pre_buffer(false);   // pre-buffering reads on an I/O thread
  properties.set_use_threads(false);  // storage methods run on the caller's thread
  for (int leaf : footer.dictionary_leaves) properties.set_read_dictionary(leaf, true);
  return properties;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ReadParquetFooter(ObjectFile* file) {
  auto file_size = file->GetSize();
  if (!file_size.ok()) return Corrupt(file_size.status());
  const int64_t size = *file_size;
  if (size < kTailBytes) {
    return Corrupt("Parquet file size is " + std::to_string(size) +
                   " bytes, smaller than the minimum file footer");
  }
  auto tail = file->ReadAt(size - kTailBytes, kTailBytes);
  if (!tail.ok()) return Corrupt(tail.status());
  if ((*tail)->size() != kTailBytes || std::memcmp((*tail)->data() + 4, "PAR1", 4) != 0) {
    return Corrupt("Parquet magic bytes not found in footer (or an encrypted footer)");
  }
  uint32_t length;
  std::memcpy(&length, (*tail)->data(), sizeof(length));  // little-endian, as the hosts
  if (length > size - kTailBytes) {
    return Corrupt("Parquet file size is " + std::to_string(size) +
                   " bytes, smaller than its footer's " + std::to_string(length));
  }
  auto footer = file->ReadAt(size - kTailBytes - length, length);
  if (!footer.ok()) return Corrupt(footer.status());
  if ((*footer)->size() != length) return Corrupt("Parquet footer read short");
  return std::move(*footer);
}

arrow::Result<std::shared_ptr<const ParsedFooter>> ParseFooter(std::string footer) {
  auto parsed = std::make_shared<ParsedFooter>();
  // The process's pool, not a call's: the metadata outlives the call.
  const parquet::ReaderProperties file_properties;
  try {
    uint32_t length = static_cast<uint32_t>(footer.size());
    parsed->metadata = parquet::FileMetaData::Make(footer.data(), &length, file_properties);
  } catch (const parquet::ParquetException& error) {
    return Corrupt(error.what());
  }
  const auto& metadata = parsed->metadata;
  if (metadata->is_encryption_algorithm_set()) return Corrupt("encrypted columns");
  ARROW_ASSIGN_OR_RAISE(parsed->checksums, PageChecksums::Make(metadata));
  parquet::arrow::SchemaManifest manifest;
  const auto plain = StorageReadProperties(*parsed);
  auto status = parquet::arrow::SchemaManifest::Make(
      metadata->schema(), metadata->key_value_metadata(), plain, &manifest);
  if (status.ok()) {
    status = parquet::arrow::FromParquetSchema(metadata->schema(), plain,
                                               metadata->key_value_metadata(), &parsed->schema);
  }
  if (!status.ok()) return Corrupt(status);
  // Small-dictionary text columns are decoded as dictionaries (dictionary_columns.h),
  // unless Arrow decodes some dictionary to another type: then all plainly.
  parsed->dictionary_leaves = SmallDictionaryLeaves(*metadata, manifest, *parsed->schema);
  ARROW_ASSIGN_OR_RAISE(parsed->decoded,
                        DecodedSchema(metadata, StorageReadProperties(*parsed), *parsed->schema));
  if (parsed->decoded == nullptr && !parsed->dictionary_leaves.empty()) {
    parsed->dictionary_leaves.clear();
    ARROW_ASSIGN_OR_RAISE(parsed->decoded, DecodedSchema(metadata, plain, *parsed->schema));
  }
  if (parsed->decoded == nullptr) return Corrupt("its schema is inconsistent");
  parsed->footer = std::move(footer);
  return std::shared_ptr<const ParsedFooter>(std::move(parsed));
}

ParsedFooters* ParsedFooters::Process() {
  static auto* process = new ParsedFooters(NodeLimits::FromEnvironment().parsed_footer_bytes);
  return process;
}

int64_t ParsedFooters::Charge(int64_t footer_bytes) {
  // Thrift's structures (strings, vectors, optional fields) and the schemas
  // took 7.2-7.5x the compact bytes on the heap (parsed_footers_test.cc; 1 to
  // 128 columns, 40 row groups); charged with a margin, plus the fixed parts.
  constexpr int64_t kParsedPerFooterByte = 12;
  constexpr int64_t kFixedBytes = 16 * 1024;
  return footer_bytes * (1 + kParsedPerFooterByte) + kFixedBytes;
}

arrow::Result<std::shared_ptr<const ParsedFooter>> ParsedFooters::Get(std::string_view footer) {
  const uint64_t hash = max_bytes_ > 0 ? Hash(footer) : 0;
  if (max_bytes_ > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(hash);
    if (found != entries_.end() && found->second.parsed->footer == footer) {
      recent_.splice(recent_.begin(), recent_, found->second.recent);
      return found->second.parsed;
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto parsed, parse_(std::string(footer)));
  std::lock_guard<std::mutex> lock(mutex_);
  ++parses_;
  if (max_bytes_ > 0 && Charge(static_cast<int64_t>(footer.size())) <= max_bytes_) {
    Keep(hash, parsed);
  }
  return parsed;
}

void ParsedFooters::Keep(uint64_t hash, std::shared_ptr<const ParsedFooter> parsed) {
  auto same = entries_.find(hash);  // this footer, parsed by a concurrent call, or a collision
  if (same != entries_.end()) Drop(same);
  const int64_t charge = Charge(static_cast<int64_t>(parsed->footer.size()));
  while (bytes_ + charge > max_bytes_ && !recent_.empty()) Drop(entries_.find(recent_.back()));
  recent_.push_front(hash);
  entries_.emplace(hash, Entry{std::move(parsed), recent_.begin()});
  bytes_ += charge;
}

void ParsedFooters::Drop(std::unordered_map<uint64_t, Entry>::iterator entry) {
  bytes_ -= Charge(static_cast<int64_t>(entry->second.parsed->footer.size()));
  recent_.erase(entry->second.recent);
  entries_.erase(entry);
}

int64_t ParsedFooters::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t ParsedFooters::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

int64_t ParsedFooters::parses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return parses_;
}

}  // namespace skyhook
