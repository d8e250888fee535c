// What storage derives from a Parquet footer, kept across calls: a query calls
// the same objects as the last one, and parsing the same footer again (Thrift,
// the schema and its manifest, the page checksums' table, the dictionary
// leaves) was 6 % of a selective scan's CPU. Kept by the footer's exact bytes,
// not by object: right in an OSD as in the embedded store, and after any
// rewrite (new bytes, a new entry). Everything depending on the object rather
// than its footer (its size, extents, pages) is still checked on every call.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/type.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>

#include "skyhook/storage/object/object_file.h"
#include "skyhook/storage/object/page_checksums.h"

namespace skyhook {

/// One footer's derived state; immutable once made, so calls share it (as
/// Arrow's datasets share FileMetaData between their scan threads).
struct ParsedFooter {
  std::string footer;                               // the Thrift bytes, the key
  std::shared_ptr<parquet::FileMetaData> metadata;  // parsed with the process's pool
  std::shared_ptr<arrow::Schema> schema;            // as stored
  std::shared_ptr<arrow::Schema> decoded;           // as the reader decodes it
  std::vector<int> dictionary_leaves;               // read as dictionaries (SmallDictionaryLeaves)
  std::shared_ptr<const PageChecksums> checksums;
};

/// Arrow's reader properties for storage calls, reading `footer`'s small
/// dictionary leaves as dictionaries.
parquet::ArrowReaderProperties StorageReadProperties(const ParsedFooter& footer);

/// The Thrift footer of a Parquet file (its tail's length and magic checked
/// against the file); a view of what the file read.
arrow::Result<std::shared_ptr<arrow::Buffer>> ReadParquetFooter(ObjectFile* file);

/// Parses a footer and derives the rest; kCorruptObject when it is not a
/// readable Parquet footer (or an encrypted one).
arrow::Result<std::shared_ptr<const ParsedFooter>> ParseFooter(std::string footer);

class ParsedFooters {
 public:
  using Parse = std::function<arrow::Result<std::shared_ptr<const ParsedFooter>>(std::string)>;

  /// At most max_bytes of charged bytes kept (0: nothing kept).
  explicit ParsedFooters(int64_t max_bytes, Parse parse = ParseFooter)
      : max_bytes_(max_bytes), parse_(std::move(parse)) {}

  /// The process's footers, at most SKYHOOK_PARSED_FOOTERS_MB (read at the
  /// first call; never destroyed: readers of exiting calls may still hold one).
  static ParsedFooters* Process();

  /// What a footer of these bytes parses to: kept if these exact bytes were
  /// parsed before, else parsed now (and kept if it fits; errors never are).
  arrow::Result<std::shared_ptr<const ParsedFooter>> Get(std::string_view footer);

  /// What keeping a footer of this many bytes is charged: the key's copy and a
  /// bound on the parsed structures' heap (parsed_footers_test.cc measures it).
  static int64_t Charge(int64_t footer_bytes);

  int64_t bytes() const;
  size_t entries() const;
  int64_t parses() const;

 private:
  struct Entry {
    std::shared_ptr<const ParsedFooter> parsed;
    std::list<uint64_t>::iterator recent;  // its place in recent_
  };

  void Keep(uint64_t hash, std::shared_ptr<const ParsedFooter> parsed);
  void Drop(std::unordered_map<uint64_t, Entry>::iterator entry);

  const int64_t max_bytes_;
  const Parse parse_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Entry> entries_;  // by the footer's hash
  std::list<uint64_t> recent_;                   // hashes, most recently used first
  int64_t bytes_ = 0;
  int64_t parses_ = 0;
};

}  // namespace skyhook
