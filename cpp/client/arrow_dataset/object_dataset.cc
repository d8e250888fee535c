#include "client/arrow_dataset/object_dataset.h"

#include <arrow/util/iterator.h>
#include "skyhook/storage/statistics/nan_safe_simplify.h"

namespace skyhook::client {

ObjectDataset::ObjectDataset(std::shared_ptr<arrow::Schema> schema,
                             std::vector<std::shared_ptr<ObjectFragment>> fragments)
    : Dataset(std::move(schema)), fragments_(std::move(fragments)) {}

arrow::Result<std::shared_ptr<arrow::dataset::Dataset>> ObjectDataset::ReplaceSchema(
    std::shared_ptr<arrow::Schema> schema) const {
  for (const auto& field : schema_->fields()) {
    auto replacement = schema->GetFieldByName(field->name());
    if (replacement == nullptr || !replacement->type()->Equals(*field->type())) {
      return arrow::Status::TypeError("a skyhook dataset's schema can only be widened: column '",
                                      field->name(), "' (", field->type()->ToString(),
                                      ") is missing or of another type in ", schema->ToString());
    }
  }
  return std::make_shared<ObjectDataset>(std::move(schema), fragments_);
}

arrow::Result<arrow::dataset::FragmentIterator> ObjectDataset::GetFragmentsImpl(
    arrow::compute::Expression predicate) {
  arrow::dataset::FragmentVector kept;
  const bool prunable = !HoldsNanLiteral(predicate);  // NanSafeSimplify: Arrow misjudges NaN
  for (const auto& fragment : fragments_) {
    // An empty object's guarantee is false, which simplification leaves alone.
    if (!fragment->partition_expression().IsSatisfiable()) continue;
    if (!prunable) {  // Arrow's scanner simplifies with each fragment's guarantee too
      kept.push_back(fragment->WithoutGuarantee());
      continue;
    }
    // A predicate the guarantee cannot simplify (mixed types, say) keeps the object.
    auto simplified =
        arrow::compute::SimplifyWithGuarantee(predicate, fragment->partition_expression());
    if (!simplified.ok() || simplified->IsSatisfiable()) kept.push_back(fragment);
  }
  return arrow::MakeVectorIterator(std::move(kept));
}

}  // namespace skyhook::client
