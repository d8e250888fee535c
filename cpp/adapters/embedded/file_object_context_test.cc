#include "file_object_context.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "omap_database.h"
#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

namespace fs = std::filesystem;

// A store's objects directory and omap database in a directory of their own.
class FileObjectContextTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "skyhook-unit-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directory(root_ / "objects");
  }
  void TearDown() override { fs::remove_all(root_); }

  FileObjectContext Object(const std::string& name) {
    return FileObjectContext((root_ / "objects" / name).string(), (root_ / "omap.sqlite").string());
  }

  static std::string Contents(ObjectContext& object) {
    uint64_t size = object.Size().ValueOrDie();
    return object.Read(0, size).ValueOrDie()->ToString();
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root_ / "objects")) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path root_;
};

TEST_F(FileObjectContextTest, WriteFullCreatesAndReplacesTheBytes) {
  auto object = Object("a");
  EXPECT_FALSE(object.Size().ok());
  ASSERT_TRUE(object.WriteFull(arrow::Buffer("first version")).ok());
  EXPECT_EQ(Contents(object), "first version");
  ASSERT_TRUE(object.WriteFull(arrow::Buffer("second")).ok());
  EXPECT_EQ(Contents(object), "second");
  auto again = Object("a");
  EXPECT_EQ(Contents(again), "second");
  EXPECT_EQ(Files(), std::vector<std::string>{"a"});  // no temporary file is left
}

TEST_F(FileObjectContextTest, AppendAndTruncate) {
  auto object = Object("a");
  ASSERT_TRUE(object.Append(arrow::Buffer("abc")).ok());  // creates the object
  ASSERT_TRUE(object.Append(arrow::Buffer("def")).ok());
  EXPECT_EQ(Contents(object), "abcdef");
  ASSERT_TRUE(object.Truncate(2).ok());
  EXPECT_EQ(Contents(object), "ab");
  ASSERT_TRUE(object.Truncate(4).ok());
  EXPECT_EQ(Contents(object), std::string("ab\0\0", 4));
  ASSERT_TRUE(object.Truncate(0).ok());
  EXPECT_EQ(object.Size().ValueOrDie(), 0u);
}

TEST_F(FileObjectContextTest, ReadersKeepTheBytesTheyMapped) {
  auto writer = Object("a");
  ASSERT_TRUE(writer.WriteFull(arrow::Buffer("bytes a reader maps")).ok());
  auto reader = Object("a");
  auto mapped = reader.Read(0, 19).ValueOrDie();
  ASSERT_TRUE(writer.Truncate(0).ok());
  EXPECT_EQ(mapped->ToString(), "bytes a reader maps");
}

TEST_F(FileObjectContextTest, AnAppendOverAnotherWritersReplacementIsAConflict) {
  auto appender = Object("a");
  ASSERT_TRUE(appender.WriteFull(arrow::Buffer("short")).ok());
  EXPECT_EQ(Contents(appender), "short");  // mapped: the 5 bytes
  ASSERT_TRUE(Object("a").WriteFull(arrow::Buffer("a longer version")).ok());
  auto appended = appender.Append(arrow::Buffer("!"));
  EXPECT_EQ(CodeOf(appended), ErrorCode::kConflict) << appended.ToString();
  auto reader = Object("a");
  EXPECT_EQ(Contents(reader), "a longer version");  // nothing of the append was written
}

TEST_F(FileObjectContextTest, XattrsBelongToTheObjectAndSurviveWrites) {
  auto object = Object("a");
  ASSERT_TRUE(object.SetXattr("format", "parquet").ok());  // creates an empty object
  EXPECT_EQ(object.Size().ValueOrDie(), 0u);
  ASSERT_TRUE(object.WriteFull(arrow::Buffer("data")).ok());
  ASSERT_TRUE(object.Append(arrow::Buffer("more")).ok());
  ASSERT_TRUE(object.SetXattr("binary", std::string("\0\xff", 2)).ok());
  auto again = Object("a");
  EXPECT_EQ(again.GetXattr("format").ValueOrDie(), "parquet");
  EXPECT_EQ(again.GetXattr("binary").ValueOrDie(), std::string("\0\xff", 2));
  EXPECT_EQ(again.GetXattr("absent").ValueOrDie(), std::nullopt);
  ASSERT_TRUE(object.SetXattr("format", std::string(1000, 'x')).ok());
  EXPECT_EQ(again.GetXattr("format").ValueOrDie(), std::string(1000, 'x'));
}

TEST_F(FileObjectContextTest, ReplaceObjectSetsBytesAndAttributesTogether) {
  auto object = Object("a");
  ASSERT_TRUE(object.WriteFull(arrow::Buffer("old bytes")).ok());
  ASSERT_TRUE(object.SetXattr("design", "1").ok());
  ASSERT_TRUE(object.SetXattr("other", "kept").ok());
  ASSERT_TRUE(object.ReplaceObject(arrow::Buffer("new"), {{"design", "2"}}, {"design", "1"}).ok());
  auto reread = Object("a");
  EXPECT_EQ(Contents(reread), "new");
  EXPECT_EQ(reread.GetXattr("design").ValueOrDie(), "2");
  EXPECT_EQ(reread.GetXattr("other").ValueOrDie(), "kept");
  EXPECT_EQ(Files(), std::vector<std::string>{"a"});
}

TEST_F(FileObjectContextTest, ReplaceObjectRefusesAChangedObject) {
  auto writer = Object("a");
  ASSERT_TRUE(writer.WriteFull(arrow::Buffer("v1")).ok());
  // A context keeps the file it read first: another writer's replacement is a conflict.
  auto stale = Object("a");
  EXPECT_EQ(Contents(stale), "v1");
  ASSERT_TRUE(
      Object("a").ReplaceObject(arrow::Buffer("v2"), {{"design", "2"}}, {"design", {}}).ok());
  auto refused = stale.ReplaceObject(arrow::Buffer("v3"), {{"design", "3"}}, {"design", {}});
  EXPECT_EQ(CodeOf(refused), ErrorCode::kConflict) << refused.ToString();
  auto guarded = Object("a");
  EXPECT_EQ(Contents(guarded), "v2");
  refused = guarded.ReplaceObject(arrow::Buffer("v3"), {{"design", "3"}}, {"design", "1"});
  EXPECT_EQ(CodeOf(refused), ErrorCode::kConflict) << refused.ToString();
  auto last = Object("a");
  EXPECT_EQ(Contents(last), "v2");
  EXPECT_EQ(Files(), std::vector<std::string>{"a"});
}

TEST_F(FileObjectContextTest, OmapSetGetRemove) {
  auto object = Object("a");
  EXPECT_EQ(object.GetOmap("key").ValueOrDie(), std::nullopt);
  ASSERT_TRUE(object.SetOmap("key", "value").ok());
  ASSERT_TRUE(object.SetOmap(std::string("k\0y", 3), std::string("v\0\xff", 3)).ok());
  ASSERT_TRUE(object.SetOmap("empty", "").ok());
  ASSERT_TRUE(object.SetOmap("key", "replaced").ok());
  auto again = Object("a");
  EXPECT_EQ(again.GetOmap("key").ValueOrDie(), "replaced");
  EXPECT_EQ(again.GetOmap(std::string("k\0y", 3)).ValueOrDie(), std::string("v\0\xff", 3));
  EXPECT_EQ(again.GetOmap("empty").ValueOrDie(), "");
  ASSERT_TRUE(again.RemoveOmap("key").ok());
  ASSERT_TRUE(again.RemoveOmap("never set").ok());
  EXPECT_EQ(object.GetOmap("key").ValueOrDie(), std::nullopt);
}

TEST_F(FileObjectContextTest, OmapIsPerObjectAndOutsideTheObjectsDirectory) {
  auto a = Object("a");
  auto b = Object("b");
  ASSERT_TRUE(a.SetOmap("key", "of a").ok());
  ASSERT_TRUE(b.SetOmap("key", "of b").ok());
  EXPECT_EQ(a.GetOmap("key").ValueOrDie(), "of a");
  EXPECT_EQ(b.GetOmap("key").ValueOrDie(), "of b");
  EXPECT_TRUE(Files().empty());  // the omap made no object
  EXPECT_TRUE(fs::exists(root_ / "omap.sqlite"));
}

TEST_F(FileObjectContextTest, CopyingAnOmapReplacesTheTargetsEntries) {
  auto source = Object("source");
  auto target = Object("target");
  ASSERT_TRUE(source.UpdateOmap({}, {{"k1", "one"}, {"k2", "two"}}).ok());
  ASSERT_TRUE(target.UpdateOmap({}, {{"k1", "stale"}, {"k3", "stale"}}).ok());
  auto database = OmapDatabase::Open((root_ / "omap.sqlite").string()).ValueOrDie();
  ASSERT_TRUE(database->Copy("source", "target").ok());
  EXPECT_EQ(target.GetOmap("k1").ValueOrDie(), "one");
  EXPECT_EQ(target.GetOmap("k2").ValueOrDie(), "two");
  EXPECT_EQ(target.GetOmap("k3").ValueOrDie(), std::nullopt);
  EXPECT_EQ(source.GetOmap("k1").ValueOrDie(), "one");
  ASSERT_TRUE(database->Copy("never set", "target").ok());  // an object without an omap: none
  EXPECT_EQ(target.GetOmap("k1").ValueOrDie(), std::nullopt);
}

TEST_F(FileObjectContextTest, ReadingNeverOpensTheOmapDatabase) {
  auto object = Object("a");
  ASSERT_TRUE(object.WriteFull(arrow::Buffer("data")).ok());
  ASSERT_TRUE(object.SetXattr("format", "arrow").ok());
  EXPECT_EQ(Contents(object), "data");
  EXPECT_FALSE(fs::exists(root_ / "omap.sqlite"));
}

TEST_F(FileObjectContextTest, AnUnusableOmapDatabaseIsAnError) {
  FileObjectContext object((root_ / "objects" / "a").string(),
                           (root_ / "missing" / "omap").string());
  auto value = object.GetOmap("key");
  ASSERT_FALSE(value.ok());
  EXPECT_TRUE(value.status().IsIOError());
  EXPECT_FALSE(object.SetOmap("key", "value").ok());
}

}  // namespace
}  // namespace skyhook
