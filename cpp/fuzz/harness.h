// What both libFuzzer targets share: the committed seed files, exactly sized
// aligned copies of the input, and a storage call whose reply is checked the
// way a client decodes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/buffer.h>

#include "skyhook/storage/methods/method.h"

namespace skyhook::fuzz {

struct SeedFile {
  std::string name;
  std::shared_ptr<arrow::Buffer> bytes;
};

/// The files of a directory under cpp/fuzz (or $SKYHOOK_FUZZ_DATA), sorted by
/// name so that an input selects the same file on every machine. Aborts when
/// the directory is empty: a harness without seeds fuzzes nothing useful.
std::vector<SeedFile> LoadSeedFiles(const std::string& subdirectory);

/// The format attribute of a seed object, from its file extension.
std::optional<std::string> FormatOf(const std::string& file_name);

/// A 64-byte-aligned copy of exactly size bytes: aligned as the adapters'
/// buffers are (mmap, Ceph bufferlists), and a read one byte past it is an
/// ASan report rather than a read of padding.
std::shared_ptr<arrow::Buffer> AlignedCopy(const uint8_t* data, size_t size);

/// What a checked reply said: its status, and the rows of its body.
struct CheckedReply {
  int32_t status;
  int64_t rows;
};

/// Runs the method and aborts unless the reply is one a client can decode: a
/// reply envelope with a status and, when there is a body, a valid IPC stream.
CheckedReply CallAndCheck(const MethodInfo& method, ObjectContext* object,
                          const std::shared_ptr<arrow::Buffer>& request);

/// The same with the object writable (for the writing methods).
CheckedReply CallAndCheck(const MethodInfo& method, MutableObjectContext* object,
                          const std::shared_ptr<arrow::Buffer>& request);

}  // namespace skyhook::fuzz
