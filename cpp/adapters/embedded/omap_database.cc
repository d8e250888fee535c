#include "omap_database.h"

#include <sqlite3.h>

namespace skyhook {
namespace {

// Keys and values are bytes: BLOBs, bound without copies for the statement's life.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS omap (object BLOB NOT NULL, key BLOB NOT NULL, "
    "value BLOB NOT NULL, PRIMARY KEY (object, key)) WITHOUT ROWID";
// Another process holding the database's lock makes a statement wait this long.
constexpr int kBusyTimeoutMs = 10000;

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr); }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return statement_ != nullptr; }
  void Bind(int index, const std::string& bytes) {
    sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_STATIC);
  }
  int Step() { return sqlite3_step(statement_); }
  std::string Column(int index) {
    const void* data = sqlite3_column_blob(statement_, index);
    return std::string(static_cast<const char*>(data), sqlite3_column_bytes(statement_, index));
  }

 private:
  sqlite3_stmt* statement_ = nullptr;
};

}  // namespace

arrow::Result<std::unique_ptr<OmapDatabase>> OmapDatabase::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int code = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<OmapDatabase> database(new OmapDatabase(db, path));
  if (code != SQLITE_OK) return database->Failed("open");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return database->Failed("create the omap table of");
  }
  return database;
}

OmapDatabase::~OmapDatabase() { sqlite3_close(db_); }

arrow::Status OmapDatabase::Failed(const char* what) const {
  return arrow::Status::IOError("cannot ", what, " the omap database ", path_, ": ",
                                db_ ? sqlite3_errmsg(db_) : "out of memory");
}

arrow::Result<std::optional<std::string>> OmapDatabase::Get(const std::string& object,
                                                            const std::string& key) {
  Statement select(db_, "SELECT value FROM omap WHERE object = ?1 AND key = ?2");
  if (!select.prepared()) return Failed("read");
  select.Bind(1, object);
  select.Bind(2, key);
  int code = select.Step();
  if (code == SQLITE_DONE) return std::nullopt;
  if (code != SQLITE_ROW) return Failed("read");
  return select.Column(0);
}

arrow::Status OmapDatabase::Set(const std::string& object, const std::string& key,
                                const std::string& value) {
  Statement insert(db_, "INSERT OR REPLACE INTO omap (object, key, value) VALUES (?1, ?2, ?3)");
  if (!insert.prepared()) return Failed("write");
  insert.Bind(1, object);
  insert.Bind(2, key);
  insert.Bind(3, value);
  return insert.Step() == SQLITE_DONE ? arrow::Status::OK() : Failed("write");
}

arrow::Status OmapDatabase::Remove(const std::string& object, const std::string& key) {
  Statement remove(db_, "DELETE FROM omap WHERE object = ?1 AND key = ?2");
  if (!remove.prepared()) return Failed("write");
  remove.Bind(1, object);
  remove.Bind(2, key);
  return remove.Step() == SQLITE_DONE ? arrow::Status::OK() : Failed("write");
}

arrow::Status OmapDatabase::Update(const std::string& object,
                                   const std::vector<std::string>& remove,
                                   const std::map<std::string, std::string>& set) {
  // One transaction: readers see all of it or none, and it syncs once.
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Failed("write");
  }
  arrow::Status status;
  for (const auto& key : remove) {
    if (status.ok()) status = Remove(object, key);
  }
  for (const auto& [key, value] : set) {
    if (status.ok()) status = Set(object, key, value);
  }
  const char* end = status.ok() ? "COMMIT" : "ROLLBACK";
  if (sqlite3_exec(db_, end, nullptr, nullptr, nullptr) != SQLITE_OK && status.ok()) {
    status = Failed("write");
  }
  return status;
}

arrow::Status OmapDatabase::Copy(const std::string& source, const std::string& target) {
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Failed("write");
  }
  bool copied = false;
  {
    Statement clear(db_, "DELETE FROM omap WHERE object = ?1");
    Statement copy(db_,
                   "INSERT INTO omap (object, key, value) SELECT ?2, key, value FROM omap "
                   "WHERE object = ?1");
    if (clear.prepared() && copy.prepared()) {
      clear.Bind(1, target);
      copy.Bind(1, source);
      copy.Bind(2, target);
      copied = clear.Step() == SQLITE_DONE && copy.Step() == SQLITE_DONE;
    }
  }
  const char* end = copied ? "COMMIT" : "ROLLBACK";
  if (sqlite3_exec(db_, end, nullptr, nullptr, nullptr) != SQLITE_OK || !copied) {
    return Failed("copy entries in");
  }
  return arrow::Status::OK();
}

}  // namespace skyhook
