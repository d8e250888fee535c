#include "skyhook/storage/secondary/secondary_design.h"

#include <map>
#include <sstream>

#include <arrow/util/utf8.h>

#include "skyhook/errors/error.h"
#include "skyhook/storage/object/object_reader.h"
#include "skyhook/storage/runtime/call_resources.h"
#include "skyhook/storage/secondary/column_index.h"
#include "skyhook/storage/secondary/data_identity.h"
#include "skyhook/storage/secondary/omap_value.h"
#include "skyhook/storage/secondary/zone_statistics.h"

namespace skyhook {

arrow::Result<std::vector<std::string>> IndexedColumns(ObjectContext* object) {
  ARROW_ASSIGN_OR_RAISE(auto listed, object->GetOmap(kIndexListKey));
  std::vector<std::string> columns;
  if (!listed) return columns;
  std::istringstream lines(*listed);
  for (std::string column; std::getline(lines, column);) {
    // Column names are UTF-8: any other line names no column (and must not reach a reply).
    if (!column.empty() && arrow::util::ValidateUTF8(column)) columns.push_back(column);
  }
  return columns;
}

std::string JoinIndexedColumns(const std::vector<std::string>& columns) {
  std::string listed;
  for (const auto& column : columns) listed += column + "\n";
  return listed;
}

arrow::Status RebuildSecondaryDesign(MutableObjectContext* object, CallResources* resources) {
  ARROW_ASSIGN_OR_RAISE(auto had_statistics, object->GetOmap(kStatisticsKey));
  ARROW_ASSIGN_OR_RAISE(auto indexed, IndexedColumns(object));
  if (!had_statistics && indexed.empty()) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::Open(object, resources->pool()));
  ARROW_ASSIGN_OR_RAISE(auto identity, DataIdentity(object));
  std::map<std::string, std::string> entries;
  if (had_statistics) {
    ARROW_ASSIGN_OR_RAISE(auto statistics, ComputeZoneStatistics(reader.get(), resources));
    ARROW_ASSIGN_OR_RAISE(entries[kStatisticsKey], EncodeOmapValue(*statistics, identity));
  }
  std::vector<std::string> kept;
  for (const auto& column : indexed) {
    int field = reader->schema()->GetFieldIndex(column);
    // A column the transform removed or retyped loses its index.
    if (field < 0 || NotIndexable(*reader->schema()->field(field)->type())) continue;
    ARROW_ASSIGN_OR_RAISE(auto index, BuildColumnIndex(reader.get(), field, identity, resources));
    entries.merge(index);
    kept.push_back(column);
  }
  // Everything is computed: now write (a failure before this point wrote nothing).
  std::vector<std::string> old_keys;
  for (const auto& column : indexed) {
    ARROW_ASSIGN_OR_RAISE(auto keys, ColumnIndexKeys(object, column));
    old_keys.insert(old_keys.end(), keys.begin(), keys.end());
  }
  entries[kIndexListKey] = JoinIndexedColumns(kept);
  return object->UpdateOmap(old_keys, entries);
}

}  // namespace skyhook
