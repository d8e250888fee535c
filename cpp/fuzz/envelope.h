// The skyhook envelope (magic | version | header length | one-row Arrow IPC
// header | body), taken apart and put together again independently of the
// core's own codec, so the harness can check replies and rewrite requests
// without trusting the code under test.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

namespace skyhook::fuzz {

struct Envelope {
  std::string magic;
  uint16_t version = 1;
  std::shared_ptr<arrow::RecordBatch> header;  // one row
  std::shared_ptr<arrow::Buffer> body;
};

arrow::Result<Envelope> ParseEnvelope(const uint8_t* data, size_t size);

arrow::Result<std::shared_ptr<arrow::Buffer>> BuildEnvelope(const Envelope& envelope);

}  // namespace skyhook::fuzz
