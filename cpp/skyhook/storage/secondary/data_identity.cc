#include "skyhook/storage/secondary/data_identity.h"

#include "skyhook/storage/object/object_design.h"

namespace skyhook {

arrow::Result<std::string> DataIdentity(ObjectContext* object) {
  ARROW_ASSIGN_OR_RAISE(uint64_t size, object->Size());
  ARROW_ASSIGN_OR_RAISE(auto format, object->GetXattr(kFormatAttribute));
  ARROW_ASSIGN_OR_RAISE(auto design, object->GetXattr(kDesignAttribute));
  // Lengths first, so no value can pose as another's boundary.
  std::string identity = "size=" + std::to_string(size);
  for (const auto& part : {format, design}) {
    const std::string& text = part ? *part : std::string("-");
    identity += ";" + std::to_string(text.size()) + ":" + text;
  }
  return identity;
}

}  // namespace skyhook
