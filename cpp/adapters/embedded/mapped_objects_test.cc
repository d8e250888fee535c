#include "mapped_objects.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <arrow/buffer.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

namespace fs = std::filesystem;

class MappedObjectsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "skyhook-unit-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    auto path = (root_ / name).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
  }

  // The store's way: a new file renamed over the old one.
  std::string Replace(const std::string& name, const std::string& bytes) {
    auto temporary = Write("." + name + ".new", bytes);
    auto path = (root_ / name).string();
    EXPECT_EQ(rename(temporary.c_str(), path.c_str()), 0);
    return path;
  }

  static std::string Contents(MappedObjects& mapped, const std::string& path) {
    auto file = mapped.Open(path).ValueOrDie().file;
    return file->ReadAt(0, file->GetSize().ValueOrDie()).ValueOrDie()->ToString();
  }

  fs::path root_;
};

TEST_F(MappedObjectsTest, AnUnchangedFileKeepsItsMapping) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", "first version");
  auto first = mapped.Open(path).ValueOrDie();
  auto again = mapped.Open(path).ValueOrDie();
  EXPECT_EQ(again.file, first.file);
  ASSERT_NE(first.verified, nullptr);
  EXPECT_EQ(again.verified, first.verified);  // chunks verified through it stay verified
  EXPECT_EQ(mapped.mapped_bytes(), 13);
}

TEST_F(MappedObjectsTest, ChunksVerifiedGoWithTheirMapping) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", "first version");
  auto first = mapped.Open(path).ValueOrDie();
  first.verified->Add(0, 5);
  Replace("a", "other version");  // same size: another file
  auto other = mapped.Open(path).ValueOrDie();
  ASSERT_NE(other.verified, nullptr);
  EXPECT_FALSE(other.verified->Contains(0, 5));
  EXPECT_TRUE(first.verified->Contains(0, 5));  // the old mapping's, still held by its calls
  // A mapping too large to keep verifies every read again.
  EXPECT_EQ(MappedObjects(4).Open(path).ValueOrDie().verified, nullptr);
}

TEST_F(MappedObjectsTest, AFileRenamedOverIsMappedAnew) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", "first version");
  EXPECT_EQ(Contents(mapped, path), "first version");
  Replace("a", "other version");  // same size
  EXPECT_EQ(Contents(mapped, path), "other version");
  Replace("a", "third");
  EXPECT_EQ(Contents(mapped, path), "third");
  EXPECT_EQ(mapped.mappings(), 1u);
  EXPECT_EQ(mapped.mapped_bytes(), 5);
}

TEST_F(MappedObjectsTest, AFileChangedInPlaceIsNeverReadPastItsEnd) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", std::string(3 * 4096, 'x'));
  EXPECT_EQ(Contents(mapped, path).size(), 3u * 4096);
  ASSERT_EQ(truncate(path.c_str(), 10), 0);  // a kept mapping of 3 pages would fault past page 1
  EXPECT_EQ(Contents(mapped, path), std::string(10, 'x'));
  Write("a", "rewritten in place, longer");
  EXPECT_EQ(Contents(mapped, path), "rewritten in place, longer");
}

TEST_F(MappedObjectsTest, ADeletedFileFailsAndLetsItsMappingGo) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", "bytes");
  auto other = Write("b", "other bytes");
  ASSERT_TRUE(mapped.Open(path).ok());
  ASSERT_TRUE(mapped.Open(other).ok());
  fs::remove(path);
  EXPECT_FALSE(mapped.Open(path).ok());
  EXPECT_EQ(mapped.mappings(), 1u);
  // A file deleted without being asked for again is let go at the next new mapping.
  fs::remove(other);
  ASSERT_TRUE(mapped.Open(Write("c", "c")).ok());
  EXPECT_EQ(mapped.mappings(), 1u);
  EXPECT_EQ(mapped.mapped_bytes(), 1);
}

TEST_F(MappedObjectsTest, KeepsAtMostItsBytesAndMappings) {
  MappedObjects mapped(100);
  std::vector<std::string> paths;
  for (int i = 0; i < 5; ++i)
    paths.push_back(Write("o" + std::to_string(i), std::string(40, 'a' + i)));
  for (const auto& path : paths) ASSERT_TRUE(mapped.Open(path).ok());
  EXPECT_EQ(mapped.mappings(), 2u);  // the two most recent
  EXPECT_EQ(mapped.mapped_bytes(), 80);
  auto newest = mapped.Open(paths[4]).ValueOrDie().file;
  EXPECT_EQ(mapped.Open(paths[4]).ValueOrDie().file, newest);
  // Larger than the bound: served, not kept.
  EXPECT_EQ(Contents(mapped, Write("big", std::string(101, 'b'))), std::string(101, 'b'));
  EXPECT_EQ(mapped.mapped_bytes(), 80);

  MappedObjects many(int64_t{1} << 30);
  for (size_t i = 0; i < MappedObjects::kMaxMappings + 10; ++i) {
    ASSERT_TRUE(many.Open(Write("m" + std::to_string(i), "x")).ok());
  }
  EXPECT_EQ(many.mappings(), MappedObjects::kMaxMappings);
}

TEST_F(MappedObjectsTest, ZeroBytesKeepsNothing) {
  MappedObjects mapped(0);
  auto path = Write("a", "bytes");
  auto first = mapped.Open(path).ValueOrDie();
  EXPECT_NE(mapped.Open(path).ValueOrDie().file, first.file);
  EXPECT_EQ(first.verified, nullptr);
  EXPECT_EQ(mapped.mappings(), 0u);
}

TEST_F(MappedObjectsTest, ConcurrentReadersOfChangingFilesSeeWholeVersions) {
  MappedObjects mapped(1 << 20);
  auto path = Write("a", std::string(4096, 'a'));
  std::vector<std::thread> readers;
  std::atomic<int> torn{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto contents = Contents(mapped, path);
        if (contents.find_first_not_of(contents[0]) != std::string::npos) ++torn;
      }
    });
  }
  for (int i = 0; i < 200; ++i) Replace("a", std::string(1024 * (1 + i % 4), 'b' + i % 20));
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(Contents(mapped, path), std::string(1024 * 4, 'b' + 199 % 20));
}

}  // namespace
}  // namespace skyhook
