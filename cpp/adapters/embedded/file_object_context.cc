#include "file_object_context.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

#include "mapped_objects.h"
#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

arrow::Status Failed(const char* what, const std::string& path) {
  return arrow::Status::IOError("cannot ", what, " ", path, ": ", std::strerror(errno));
}

// A file's attribute `key` (by path, or by descriptor when fd >= 0), or
// nullopt when it is not set.
arrow::Result<std::optional<std::string>> ReadXattr(const std::string& path, const std::string& key,
                                                    int fd = -1) {
  std::vector<char> value(256);
  while (true) {
    ssize_t n = fd >= 0 ? fgetxattr(fd, key.c_str(), value.data(), value.size())
                        : getxattr(path.c_str(), key.c_str(), value.data(), value.size());
    if (n >= 0) return std::string(value.data(), static_cast<size_t>(n));
    if (errno == ENODATA) return std::nullopt;
    if (errno != ERANGE) return Failed(("read attribute " + key + " of").c_str(), path);
    value.resize(value.size() * 4);
  }
}

// A new file beside `target`, named as the store names its temporary files
// (".<name>.<8 random characters>"), renamed over `target` by Commit and
// removed if it never is.
class TemporaryFile {
 public:
  static arrow::Result<std::unique_ptr<TemporaryFile>> Create(const std::string& target) {
    static constexpr char kCharacters[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    std::random_device random;
    std::uniform_int_distribution<size_t> pick(0, sizeof(kCharacters) - 2);
    const std::filesystem::path path(target);
    while (true) {
      std::string name = "." + path.filename().string() + ".";
      for (int i = 0; i < 8; ++i) name += kCharacters[pick(random)];
      auto temporary = (path.parent_path() / name).string();
      int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) return std::unique_ptr<TemporaryFile>(new TemporaryFile(fd, temporary, target));
      if (errno != EEXIST) return Failed("create a file beside", target);
    }
  }

  ~TemporaryFile() {
    if (fd_ >= 0) close(fd_);
    if (!committed_) unlink(path_.c_str());
  }

  arrow::Status Write(const uint8_t* data, uint64_t size) {
    while (size > 0) {
      ssize_t n = write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Failed("write", path_);
      data += n;
      size -= static_cast<uint64_t>(n);
    }
    return arrow::Status::OK();
  }

  arrow::Status Resize(uint64_t size) {
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) return Failed("resize", path_);
    return arrow::Status::OK();
  }

  arrow::Status SetXattr(const std::string& name, const std::string& value) {
    if (fsetxattr(fd_, name.c_str(), value.data(), value.size(), 0) != 0) {
      return Failed("set an attribute of", path_);
    }
    return arrow::Status::OK();
  }

  // The target's "user." attributes, which belong to the object, not its bytes.
  arrow::Status CopyXattrs() {
    ssize_t length = listxattr(target_.c_str(), nullptr, 0);
    if (length < 0) return errno == ENOENT ? arrow::Status::OK() : Failed("list", target_);
    std::vector<char> names(static_cast<size_t>(length));
    length = listxattr(target_.c_str(), names.data(), names.size());
    if (length < 0) return Failed("list", target_);
    for (const char* name = names.data(); name < names.data() + length;
         name += std::strlen(name) + 1) {
      if (std::strncmp(name, "user.", 5) != 0) continue;
      ARROW_ASSIGN_OR_RAISE(auto value, ReadXattr(target_, name));
      if (value) ARROW_RETURN_NOT_OK(SetXattr(name, *value));
    }
    return arrow::Status::OK();
  }

  // Synced, renamed over the target, the directory synced: the store's atomic write.
  arrow::Status Commit() {
    if (fsync(fd_) != 0) return Failed("sync", path_);
    if (close(std::exchange(fd_, -1)) != 0) return Failed("close", path_);
    if (rename(path_.c_str(), target_.c_str()) != 0) return Failed("rename", path_);
    committed_ = true;
    auto directory = std::filesystem::path(target_).parent_path().string();
    int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Failed("open", directory);
    int synced = fsync(fd);
    close(fd);
    return synced == 0 ? arrow::Status::OK() : Failed("sync", directory);
  }

 private:
  TemporaryFile(int fd, std::string path, std::string target)
      : fd_(fd), path_(std::move(path)), target_(std::move(target)) {}

  int fd_;
  std::string path_;
  std::string target_;
  bool committed_ = false;
};

// An exclusive flock on the file now at `path`: a lock taken on a file that
// was renamed over meanwhile is dropped and taken again on the new one.
class ObjectLock {
 public:
  static arrow::Result<std::unique_ptr<ObjectLock>> Take(const std::string& path) {
    while (true) {
      int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Failed("open", path);
      std::unique_ptr<ObjectLock> lock(new ObjectLock(fd));
      if (flock(fd, LOCK_EX) != 0) return Failed("lock", path);
      struct stat locked{}, current{};
      if (fstat(fd, &locked) != 0) return Failed("stat", path);
      if (stat(path.c_str(), &current) == 0 && current.st_ino == locked.st_ino &&
          current.st_dev == locked.st_dev) {
        return lock;
      }
    }
  }

  ~ObjectLock() { close(fd_); }  // closing drops the lock
  int fd() const { return fd_; }

 private:
  explicit ObjectLock(int fd) : fd_(fd) {}
  int fd_;
};

bool SameFile(int a, int b) {
  struct stat first{}, second{};
  return fstat(a, &first) == 0 && fstat(b, &second) == 0 && first.st_ino == second.st_ino &&
         first.st_dev == second.st_dev;
}

arrow::Status Conflict(const std::string& path, const std::string& why) {
  return Error(ErrorCode::kConflict, "object ", std::filesystem::path(path).filename().string(),
               " changed meanwhile (", why, "): nothing was written");
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::io::MemoryMappedFile>> FileObjectContext::Mapped() {
  if (!file_) {
    ARROW_ASSIGN_OR_RAISE(auto mapped, MappedObjects::Process()->Open(path_));
    file_ = std::move(mapped.file);
    verified_ = std::move(mapped.verified);
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
  auto mapped = Mapped();
  return ReadXattr(path_, "user." + name, mapped.ok() ? (*mapped)->file_descriptor() : -1);
}

arrow::Result<uint64_t> FileObjectContext::SizeOrZero() const {
  struct stat status{};
  if (stat(path_.c_str(), &status) == 0) return static_cast<uint64_t>(status.st_size);
  if (errno == ENOENT) return 0;
  return Failed("stat", path_);
}

// The object's bytes are replaced, never changed in place: readers map the
// file (in this and the store's other processes), and a mapped file that
// shrinks under a reader faults it (SIGBUS). The new bytes go to a file beside
// it that gets the object's attributes and is renamed over it, as the store
// writes objects; readers that mapped the old file keep reading it whole.
arrow::Status FileObjectContext::Replace(uint64_t keep, const arrow::Buffer& tail, uint64_t size) {
  ARROW_ASSIGN_OR_RAISE(auto temporary, TemporaryFile::Create(path_));
  if (keep > 0) {
    ARROW_ASSIGN_OR_RAISE(auto kept, Read(0, keep));
    // Sized by a stat of the path, read from the mapping: another writer's
    // replacement in between must not leave a shifted tail or zeros.
    if (static_cast<uint64_t>(kept->size()) != keep) {
      return Conflict(path_, "another writer replaced it");
    }
    ARROW_RETURN_NOT_OK(temporary->Write(kept->data(), static_cast<uint64_t>(kept->size())));
  }
  ARROW_RETURN_NOT_OK(temporary->Write(tail.data(), static_cast<uint64_t>(tail.size())));
  ARROW_RETURN_NOT_OK(temporary->Resize(size));
  ARROW_RETURN_NOT_OK(temporary->CopyXattrs());
  ARROW_RETURN_NOT_OK(temporary->Commit());
  file_.reset();  // the next read maps the new file
  verified_.reset();
  return arrow::Status::OK();
}

arrow::Status FileObjectContext::ReplaceObject(const arrow::Buffer& data,
                                               const std::map<std::string, std::string>& attributes,
                                               const AttributeGuard& guard) {
  ARROW_ASSIGN_OR_RAISE(auto mapped, Mapped());
  ARROW_ASSIGN_OR_RAISE(auto lock, ObjectLock::Take(path_));
  if (!SameFile(lock->fd(), mapped->file_descriptor())) {
    return Conflict(path_, "another writer replaced it");
  }
  ARROW_ASSIGN_OR_RAISE(auto value, ReadXattr(path_, "user." + guard.name, lock->fd()));
  if (value != guard.value) return Conflict(path_, "its " + guard.name + " attribute differs");
  ARROW_ASSIGN_OR_RAISE(auto temporary, TemporaryFile::Create(path_));
  ARROW_RETURN_NOT_OK(temporary->Write(data.data(), static_cast<uint64_t>(data.size())));
  ARROW_RETURN_NOT_OK(temporary->CopyXattrs());
  for (const auto& [name, attribute] : attributes) {
    ARROW_RETURN_NOT_OK(temporary->SetXattr("user." + name, attribute));
  }
  ARROW_RETURN_NOT_OK(temporary->Commit());
  file_.reset();  // the next read maps the new file
  verified_.reset();
  return arrow::Status::OK();
}

arrow::Status FileObjectContext::WriteFull(const arrow::Buffer& data) {
  return Replace(0, data, static_cast<uint64_t>(data.size()));
}

arrow::Status FileObjectContext::Append(const arrow::Buffer& data) {
  ARROW_ASSIGN_OR_RAISE(uint64_t size, SizeOrZero());
  return Replace(size, data, size + static_cast<uint64_t>(data.size()));
}

arrow::Status FileObjectContext::Truncate(uint64_t size) {
  ARROW_ASSIGN_OR_RAISE(uint64_t current, SizeOrZero());
  return Replace(std::min(size, current), arrow::Buffer(nullptr, 0), size);
}

arrow::Status FileObjectContext::SetXattr(const std::string& name, const std::string& value) {
  const std::string key = "user." + name;
  auto set = [&] { return setxattr(path_.c_str(), key.c_str(), value.data(), value.size(), 0); };
  if (set() != 0) {
    // Setting an attribute creates the object, as it does in Ceph.
    if (errno != ENOENT) return Failed(("set attribute " + name + " of").c_str(), path_);
    ARROW_RETURN_NOT_OK(Replace(0, arrow::Buffer(nullptr, 0), 0));
    if (set() != 0) return Failed(("set attribute " + name + " of").c_str(), path_);
  }
  return arrow::Status::OK();
}

arrow::Result<OmapDatabase*> FileObjectContext::Omap() {
  if (!omap_) {
    ARROW_ASSIGN_OR_RAISE(omap_, OmapDatabase::Open(omap_database_));
  }
  return omap_.get();
}

std::string FileObjectContext::Name() const {
  return std::filesystem::path(path_).filename().string();
}

arrow::Result<std::optional<std::string>> FileObjectContext::GetOmap(const std::string& key) {
  // Scans read the omap: a store that never wrote one (maybe read-only) gets none made.
  const std::filesystem::path database(omap_database_);
  std::error_code error;
  if (!omap_ && !std::filesystem::exists(database, error) &&
      std::filesystem::is_directory(database.parent_path(), error)) {
    return std::nullopt;
  }
  ARROW_ASSIGN_OR_RAISE(auto omap, Omap());
  return omap->Get(Name(), key);
}

arrow::Status FileObjectContext::SetOmap(const std::string& key, const std::string& value) {
  ARROW_ASSIGN_OR_RAISE(auto omap, Omap());
  return omap->Set(Name(), key, value);
}

arrow::Status FileObjectContext::RemoveOmap(const std::string& key) {
  ARROW_ASSIGN_OR_RAISE(auto omap, Omap());
  return omap->Remove(Name(), key);
}

arrow::Status FileObjectContext::UpdateOmap(const std::vector<std::string>& remove,
                                            const std::map<std::string, std::string>& set) {
  ARROW_ASSIGN_OR_RAISE(auto omap, Omap());
  return omap->Update(Name(), remove, set);
}

}  // namespace skyhook
