// Write access to the one object a method runs on, for methods registered as
// writing (method.h); every other method only ever sees its ObjectContext
// side. Like Ceph's object-class calls it reaches no other object: the bytes,
// the extended attributes, and the object's map of keys to values (omap).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "skyhook/storage/object/object_context.h"

namespace skyhook {

/// The condition of ReplaceObject: attribute `name` still has `value`
/// (nullopt: is still unset).
struct AttributeGuard {
  std::string name;
  std::optional<std::string> value;
};

class MutableObjectContext : public ObjectContext {
 public:
  /// Replace the object's bytes and set `attributes` as one change, if `guard`
  /// holds (else kConflict): readers see the old object or the new one, and a
  /// crash leaves one of them whole. Other attributes and the omap are kept.
  virtual arrow::Status ReplaceObject(const arrow::Buffer& data,
                                      const std::map<std::string, std::string>& attributes,
                                      const AttributeGuard& guard) = 0;
  /// Replace the object's bytes with `data`, creating the object if needed.
  /// Attributes and omap are kept.
  virtual arrow::Status WriteFull(const arrow::Buffer& data) = 0;
  /// Add `data` at the end of the object, creating it if needed.
  virtual arrow::Status Append(const arrow::Buffer& data) = 0;
  /// Cut the object to `size` bytes, or extend it with zeros.
  virtual arrow::Status Truncate(uint64_t size) = 0;

  /// Set an extended attribute (the one GetXattr reads).
  virtual arrow::Status SetXattr(const std::string& name, const std::string& value) = 0;

  virtual arrow::Status SetOmap(const std::string& key, const std::string& value) = 0;
  /// Remove `key` from the omap; removing an absent key is not an error.
  virtual arrow::Status RemoveOmap(const std::string& key) = 0;
  /// Removes `remove`, then sets `set`: at once where the store can (the
  /// embedded store's one transaction; a Ceph call's writes all apply with it).
  virtual arrow::Status UpdateOmap(const std::vector<std::string>& remove,
                                   const std::map<std::string, std::string>& set) {
    for (const auto& key : remove) ARROW_RETURN_NOT_OK(RemoveOmap(key));
    for (const auto& [key, value] : set) ARROW_RETURN_NOT_OK(SetOmap(key, value));
    return arrow::Status::OK();
  }
};

}  // namespace skyhook
