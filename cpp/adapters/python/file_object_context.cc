#include "file_object_context.h"

#include <sys/xattr.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skyhook {

arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> FileObjectContext::Mapped() {
  if (!file_) {
    ARROW_ASSIGN_OR_RAISE(file_,
                          arrow::io::MemoryMappedFile::Open(path_, arrow::io::FileMode::READ));
  }
  return file_;
}

arrow::Result<uint64_t> FileObjectContext::Size() {
  ARROW_ASSIGN_OR_RAISE(auto file, Mapped());
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  return static_cast<uint64_t>(size);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> FileObjectContext::Read(uint64_t offset,
                                                                      uint64_t length) {
  ARROW_ASSIGN_OR_RAISE(auto file, Mapped());
  return file->ReadAt(static_cast<int64_t>(offset), static_cast<int64_t>(length));
}

arrow::Result<std::optional<std::string>> FileObjectContext::GetXattr(const std::string& name) {
  const std::string key = "user." + name;
  std::vector<char> value(256);
  while (true) {
    ssize_t n = getxattr(path_.c_str(), key.c_str(), value.data(), value.size());
    if (n >= 0) return std::string(value.data(), static_cast<size_t>(n));
    if (errno == ENODATA) return std::nullopt;
    if (errno != ERANGE) {
      return arrow::Status::IOError("cannot read attribute ", name, " of ", path_, ": ",
                                    std::strerror(errno));
    }
    value.resize(value.size() * 4);
  }
}

}  // namespace skyhook
