#include "mapped_objects.h"

#include <utility>

#include "skyhook/storage/runtime/node_limits.h"

namespace skyhook {

bool MappedObjects::Identity::operator==(const Identity& other) const {
  return device == other.device && inode == other.inode && size == other.size &&
         mtime_ns == other.mtime_ns && ctime_ns == other.ctime_ns;
}

MappedObjects::Identity MappedObjects::Of(const struct stat& status) {
  constexpr int64_t kNs = 1000000000;
  return Identity{status.st_dev, status.st_ino, status.st_size,
                  status.st_mtim.tv_sec * kNs + status.st_mtim.tv_nsec,
                  status.st_ctim.tv_sec * kNs + status.st_ctim.tv_nsec};
}

MappedObjects* MappedObjects::Process() {
  static auto* process = new MappedObjects(NodeLimits::FromEnvironment().mapped_object_bytes);
  return process;
}

arrow::Result<MappedObject> MappedObjects::Open(const std::string& path) {
  if (max_bytes_ > 0) {
    struct stat status{};
    const bool exists = stat(path.c_str(), &status) == 0;
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = mappings_.find(path);
    if (found != mappings_.end()) {
      if (exists && found->second.identity == Of(status)) {
        recent_.splice(recent_.begin(), recent_, found->second.recent);
        return MappedObject{found->second.file, found->second.verified};
      }
      Drop(found);
    }
  }
  // A missing or unreadable file fails here, with Arrow's error, as without kept mappings.
  ARROW_ASSIGN_OR_RAISE(auto file,
                        arrow::io::MemoryMappedFile::Open(path, arrow::io::FileMode::READ));
  struct stat status{};
  ARROW_ASSIGN_OR_RAISE(int64_t mapped, file->GetSize());
  // Kept only if the file still has the mapping's size: its identity is read after it was mapped.
  if (max_bytes_ > 0 && fstat(file->file_descriptor(), &status) == 0 && status.st_size == mapped) {
    return MappedObject{file, Keep(path, Of(status), file)};
  }
  return MappedObject{std::move(file), nullptr};
}

std::shared_ptr<VerifiedChunks> MappedObjects::Keep(
    const std::string& path, const Identity& identity,
    std::shared_ptr<arrow::io::MemoryMappedFile> file) {
  if (identity.size > max_bytes_) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = mappings_.find(path);
  if (found != mappings_.end()) Drop(found);  // another call mapped it meanwhile
  // Mappings of files deleted or renamed over since hold their disk space: let it go.
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    struct stat status{};
    auto next = std::next(it);
    if (fstat(it->second.file->file_descriptor(), &status) != 0 || status.st_nlink == 0) Drop(it);
    it = next;
  }
  while (!recent_.empty() &&
         (bytes_ + identity.size > max_bytes_ || mappings_.size() >= kMaxMappings)) {
    Drop(mappings_.find(recent_.back()));
  }
  recent_.push_front(path);
  auto verified = std::make_shared<VerifiedChunks>();
  mappings_.emplace(path, Mapping{identity, std::move(file), verified, recent_.begin()});
  bytes_ += identity.size;
  return verified;
}

void MappedObjects::Drop(std::unordered_map<std::string, Mapping>::iterator mapping) {
  bytes_ -= mapping->second.identity.size;
  recent_.erase(mapping->second.recent);
  mappings_.erase(mapping);
}

int64_t MappedObjects::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t MappedObjects::mappings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mappings_.size();
}

}  // namespace skyhook
