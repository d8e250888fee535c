#include "skyhook/protocol/decoded_requests.h"

#include <string>
#include <thread>
#include <vector>

#include <arrow/status.h>
#include <gtest/gtest.h>

namespace skyhook {
namespace {

using Cache = DecodedRequests<std::string>;

// A decoder that counts its runs and answers "decoded:<key>".
struct CountingDecoder {
  int runs = 0;
  auto For(std::string_view key) {
    return [this, key]() -> arrow::Result<std::string> {
      ++runs;
      return "decoded:" + std::string(key);
    };
  }
};

TEST(DecodedRequests, KeysOfOneLengthGetEachTheirOwnValueAndAreDecodedOnce) {
  Cache cache;
  CountingDecoder decoder;
  for (int round = 0; round < 3; ++round) {
    for (std::string key : {"filter-a", "filter-b"}) {
      auto value = cache.GetOrDecode(key, decoder.For(key));
      ASSERT_TRUE(value.ok());
      EXPECT_EQ(**value, "decoded:" + key);
    }
  }
  EXPECT_EQ(decoder.runs, 2);
}

TEST(DecodedRequests, AFailureIsNeverKeptAndFailsTheSameEveryTime) {
  Cache cache;
  int runs = 0;
  for (int round = 0; round < 3; ++round) {
    auto value = cache.GetOrDecode("bad", [&]() -> arrow::Result<std::string> {
      ++runs;
      return arrow::Status::Invalid("malformed");
    });
    ASSERT_FALSE(value.ok());
    EXPECT_EQ(value.status().message(), "malformed");
  }
  EXPECT_EQ(runs, 3);
}

TEST(DecodedRequests, EntriesAndBytesAreBoundedLeastRecentFirst) {
  Cache cache;
  CountingDecoder decoder;
  const std::string kept = "kept";
  for (size_t i = 0; i < 3 * Cache::kMaxEntries; ++i) {
    ASSERT_TRUE(cache.GetOrDecode(kept, decoder.For(kept)).ok());  // used each round: stays
    const std::string key = "key-" + std::to_string(i);
    ASSERT_TRUE(cache.GetOrDecode(key, decoder.For(key)).ok());
  }
  EXPECT_EQ(decoder.runs, 1 + 3 * static_cast<int>(Cache::kMaxEntries));
  const std::string first = "key-0";  // evicted long ago: decoded again
  ASSERT_TRUE(cache.GetOrDecode(first, decoder.For(first)).ok());
  EXPECT_EQ(decoder.runs, 2 + 3 * static_cast<int>(Cache::kMaxEntries));

  // A key over a tenth of the bytes is answered but not kept.
  const std::string large(Cache::kMaxBytes / 10 + 1, 'x');
  CountingDecoder large_decoder;
  for (int round = 0; round < 2; ++round) {
    auto value = cache.GetOrDecode(large, large_decoder.For(large));
    ASSERT_TRUE(value.ok());
    EXPECT_EQ((*value)->size(), large.size() + 8);
  }
  EXPECT_EQ(large_decoder.runs, 2);
}

TEST(DecodedRequests, KeptBytesAreBounded) {
  Cache cache;
  CountingDecoder decoder;
  // Ten keys of a tenth of the bytes fit; the eleventh evicts the least recent.
  std::vector<std::string> keys;
  for (char c = 'a'; c < 'a' + 11; ++c) keys.emplace_back(Cache::kMaxBytes / 10, c);
  for (const auto& key : keys) ASSERT_TRUE(cache.GetOrDecode(key, decoder.For(key)).ok());
  ASSERT_TRUE(cache.GetOrDecode(keys[1], decoder.For(keys[1])).ok());
  ASSERT_TRUE(cache.GetOrDecode(keys.back(), decoder.For(keys.back())).ok());
  EXPECT_EQ(decoder.runs, 11);
  ASSERT_TRUE(cache.GetOrDecode(keys[0], decoder.For(keys[0])).ok());
  EXPECT_EQ(decoder.runs, 12);
}

TEST(DecodedRequests, ConcurrentCallsShareValues) {
  Cache cache;
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t]() {
      for (int i = 0; i < 2000; ++i) {
        const std::string key = "k" + std::to_string((i * 7 + t) % 100);
        auto value = cache.GetOrDecode(
            key, [&]() -> arrow::Result<std::string> { return "decoded:" + key; });
        if (!value.ok() || **value != "decoded:" + key) ++wrong[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, std::vector<int>(8, 0));
}

}  // namespace
}  // namespace skyhook
