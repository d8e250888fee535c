// The omap (a map of keys to values per object) of every object of an
// embedded store, in one SQLite database per store. One file rather than a
// sidecar per object: the store lists its objects directory as the objects,
// and SQLite's transactions and file locks make each update atomic and safe
// for the several processes that may use a store at once, as its other writes are.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

struct sqlite3;

namespace skyhook {

class OmapDatabase {
 public:
  /// Opens the database at `path`, creating it (and its table) if needed.
  static arrow::Result<std::unique_ptr<OmapDatabase>> Open(const std::string& path);
  ~OmapDatabase();
  OmapDatabase(const OmapDatabase&) = delete;
  OmapDatabase& operator=(const OmapDatabase&) = delete;

  arrow::Result<std::optional<std::string>> Get(const std::string& object, const std::string& key);
  arrow::Status Set(const std::string& object, const std::string& key, const std::string& value);
  arrow::Status Remove(const std::string& object, const std::string& key);
  /// Removes `remove`, then sets `set`, in one transaction.
  arrow::Status Update(const std::string& object, const std::vector<std::string>& remove,
                       const std::map<std::string, std::string>& set);
  /// Makes `target`'s entries a copy of `source`'s, in one transaction (as
  /// RADOS copy_from copies an object's omap).
  arrow::Status Copy(const std::string& source, const std::string& target);

 private:
  OmapDatabase(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  arrow::Status Failed(const char* what) const;

  sqlite3* db_;
  std::string path_;
};

}  // namespace skyhook
