#pragma once

#include <memory>
#include <string>
#include <vector>

#include <arrow/dataset/dataset.h>

#include "client/arrow_dataset/object_fragment.h"

namespace skyhook::client {

// A stored dataset as an Arrow C++ Dataset: one fragment per object, so
// Arrow's scanner, Acero and everything built on them scan it natively.
class ObjectDataset : public arrow::dataset::Dataset {
 public:
  ObjectDataset(std::shared_ptr<arrow::Schema> schema,
                std::vector<std::shared_ptr<ObjectFragment>> fragments);

  std::string type_name() const override { return "skyhook"; }

  // A wider schema (as pyarrow's union of datasets asks for) reads the
  // columns the objects lack as nulls; the stored columns cannot change type.
  arrow::Result<std::shared_ptr<arrow::dataset::Dataset>> ReplaceSchema(
      std::shared_ptr<arrow::Schema> schema) const override;

 protected:
  arrow::Result<arrow::dataset::FragmentIterator> GetFragmentsImpl(
      arrow::compute::Expression predicate) override;

 private:
  std::vector<std::shared_ptr<ObjectFragment>> fragments_;
};

}  // namespace skyhook::client
