#include "skyhook/storage/object/column_groups_reader.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include <arrow/array.h>
#include <arrow/record_batch.h>

#include "skyhook/errors/error.h"

namespace skyhook {
namespace {

arrow::Status Disagrees(const std::string& problem) {
  return Error(ErrorCode::kCorruptObject,
               "object's column extents disagree with its design: ", problem);
}

// A read that must end after `expected` rows, as the design says: extents
// whose footers do not say their row count (IPC) are checked as they are read.
class CountedBatches : public arrow::RecordBatchReader {
 public:
  CountedBatches(std::shared_ptr<arrow::RecordBatchReader> batches, int64_t expected)
      : batches_(std::move(batches)), expected_(expected) {}

  std::shared_ptr<arrow::Schema> schema() const override { return batches_->schema(); }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    ARROW_RETURN_NOT_OK(batches_->ReadNext(out));
    if (*out != nullptr) {
      read_ += (*out)->num_rows();
      if (read_ > expected_) return Disagrees("its extents hold more rows than its design says");
    } else if (read_ != expected_) {
      return Disagrees("its extents hold fewer rows than its design says");
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::RecordBatchReader> batches_;
  int64_t expected_;
  int64_t read_ = 0;
};

// Batches of several readers over the same rows, side by side: each output
// batch is as long as the shortest head, the rest of the others stays for
// the next one.
class ZippedBatches : public arrow::RecordBatchReader {
 public:
  struct Position {
    size_t part;
    int column;
  };

  ZippedBatches(std::vector<std::shared_ptr<arrow::RecordBatchReader>> parts,
                std::vector<Position> positions, std::shared_ptr<arrow::Schema> schema)
      : parts_(std::move(parts)),
        heads_(parts_.size()),
        positions_(std::move(positions)),
        schema_(std::move(schema)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    size_t ended = 0;
    int64_t rows = std::numeric_limits<int64_t>::max();
    for (size_t part = 0; part < parts_.size(); ++part) {
      auto& head = heads_[part];
      while (head == nullptr || head->num_rows() == 0) {
        ARROW_RETURN_NOT_OK(parts_[part]->ReadNext(&head));
        if (head == nullptr) break;
      }
      if (head == nullptr) {
        ++ended;
      } else {
        rows = std::min(rows, head->num_rows());
      }
    }
    if (ended == parts_.size()) {
      *out = nullptr;
      return arrow::Status::OK();
    }
    if (ended > 0) return Disagrees("its column groups hold different numbers of rows");
    arrow::ArrayVector columns;
    for (const auto& position : positions_) {
      columns.push_back(heads_[position.part]->column(position.column)->Slice(0, rows));
    }
    for (auto& head : heads_) head = head->Slice(rows);
    *out = arrow::RecordBatch::Make(schema_, rows, std::move(columns));
    return arrow::Status::OK();
  }

 private:
  std::vector<std::shared_ptr<arrow::RecordBatchReader>> parts_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> heads_;
  std::vector<Position> positions_;
  std::shared_ptr<arrow::Schema> schema_;
};

class ColumnGroupsReader : public ObjectReader {
 public:
  ColumnGroupsReader(std::vector<std::unique_ptr<ObjectReader>> groups, int64_t num_rows)
      : ObjectReader(nullptr), groups_(std::move(groups)), num_rows_(num_rows) {
    arrow::FieldVector fields;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const auto& group_schema = groups_[g]->schema();
      for (int i = 0; i < group_schema->num_fields(); ++i) {
        fields.push_back(group_schema->field(i));
        locations_.push_back({g, i});
      }
    }
    schema_ = arrow::schema(std::move(fields));
  }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  int64_t num_rows() const override { return num_rows_; }

  int64_t bytes_read() const override {
    int64_t total = 0;
    for (const auto& group : groups_) total += group->bytes_read();
    return total;
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ReadFields(
      const std::vector<int>& field_indices, int64_t batch_size, int64_t start_row) override {
    ARROW_ASSIGN_OR_RAISE(auto schema, FieldsSchema(field_indices));
    if (field_indices.empty()) {  // rows without columns: the cheapest group's footer says
      return SmallestGroup()->ReadFields({}, batch_size, start_row);
    }
    // The groups that hold a requested field, in order of first use.
    std::map<size_t, size_t> part_of_group;
    std::vector<std::vector<int>> part_fields;
    std::vector<ZippedBatches::Position> positions;
    for (int index : field_indices) {
      const auto [group, field] = locations_[static_cast<size_t>(index)];
      auto [it, added] = part_of_group.emplace(group, part_fields.size());
      if (added) part_fields.emplace_back();
      positions.push_back({it->second, static_cast<int>(part_fields[it->second].size())});
      part_fields[it->second].push_back(field);
    }
    std::vector<std::shared_ptr<arrow::RecordBatchReader>> parts(part_fields.size());
    for (const auto& [group, part] : part_of_group) {
      ARROW_ASSIGN_OR_RAISE(parts[part],
                            groups_[group]->ReadFields(part_fields[part], batch_size, start_row));
    }
    // The parts' own types: a kept dictionary stays one (KeepDictionaries).
    for (size_t i = 0; i < positions.size(); ++i) {
      ARROW_ASSIGN_OR_RAISE(
          schema, schema->SetField(static_cast<int>(i),
                                   parts[positions[i].part]->schema()->field(positions[i].column)));
    }
    const int64_t expected = std::max<int64_t>(num_rows_ - start_row, 0);
    if (parts.size() == 1 && std::is_sorted(field_indices.begin(), field_indices.end())) {
      // One group, its fields as asked: nothing to zip.
      return std::make_shared<CountedBatches>(std::move(parts[0]), expected);
    }
    return std::make_shared<CountedBatches>(
        std::make_shared<ZippedBatches>(std::move(parts), std::move(positions), std::move(schema)),
        expected);
  }

  std::vector<int> KeepDictionaries(const std::vector<int>& fields) override {
    std::vector<std::vector<int>> asked(groups_.size());
    for (int field : fields) {
      if (field < 0 || field >= schema_->num_fields()) continue;
      const auto [group, group_field] = locations_[static_cast<size_t>(field)];
      asked[group].push_back(group_field);
    }
    std::vector<int> kept;
    for (size_t group = 0; group < groups_.size(); ++group) {
      for (int group_field : groups_[group]->KeepDictionaries(asked[group])) {
        for (size_t field = 0; field < locations_.size(); ++field) {
          if (locations_[field].group == group && locations_[field].field == group_field) {
            kept.push_back(static_cast<int>(field));
          }
        }
      }
    }
    return kept;
  }

  // A default zone of the object lies inside one row group of a group's
  // Parquet file when the file's row groups are multiples of its size.
  std::vector<std::optional<ColumnBounds>> StatedBounds(int field) const override {
    if (field < 0 || field >= schema_->num_fields()) return {};
    const auto [group, group_field] = locations_[static_cast<size_t>(field)];
    auto stated = groups_[group]->StatedBounds(group_field);
    if (stated.empty()) return {};
    const auto group_rows = groups_[group]->known_zone_rows();
    std::vector<std::optional<ColumnBounds>> bounds;
    int64_t first_row = 0;
    for (int64_t rows : known_zone_rows()) {
      bounds.push_back(BoundsOfRows(stated, group_rows, first_row, rows));
      first_row += rows;
    }
    return bounds;
  }

 private:
  ObjectReader* SmallestGroup() const {
    return std::min_element(groups_.begin(), groups_.end(),
                            [](const auto& a, const auto& b) {
                              return a->schema()->num_fields() < b->schema()->num_fields();
                            })
        ->get();
  }

  struct Location {
    size_t group;
    int field;
  };
  std::vector<std::unique_ptr<ObjectReader>> groups_;
  std::vector<Location> locations_;  // of each field of the object's schema
  std::shared_ptr<arrow::Schema> schema_;
  int64_t num_rows_;
};

}  // namespace

ObjectDesign GroupsHolding(const ObjectDesign& design, const std::vector<std::string>& columns) {
  ObjectDesign subset = design;
  subset.column_groups.clear();
  for (const auto& group : design.column_groups) {
    if (std::any_of(group.columns.begin(), group.columns.end(), [&](const std::string& column) {
          return std::find(columns.begin(), columns.end(), column) != columns.end();
        })) {
      subset.column_groups.push_back(group);
    }
  }
  if (subset.column_groups.empty() && !design.column_groups.empty()) {
    subset.column_groups.push_back(*std::min_element(
        design.column_groups.begin(), design.column_groups.end(),
        [](const ColumnGroup& a, const ColumnGroup& b) { return a.length < b.length; }));
  }
  return subset;
}

arrow::Status CheckExtent(const ObjectReader& reader, const ObjectDesign& design,
                          const ColumnGroup& group) {
  // Rows are compared where the footer says them; zipping checks the others.
  auto rows = reader.known_num_rows();
  if (design.num_rows >= 0 && rows && *rows != design.num_rows) {
    return Disagrees("an extent holds " + std::to_string(*rows) + " rows, the design says " +
                     std::to_string(design.num_rows));
  }
  if (!group.columns.empty() && reader.schema()->field_names() != group.columns) {
    return Disagrees("the extent at " + std::to_string(group.offset) +
                     " does not hold the columns of its group");
  }
  return arrow::Status::OK();
}

arrow::Result<std::unique_ptr<ObjectReader>> OpenColumnGroups(ObjectContext* object,
                                                              const ObjectDesign& design,
                                                              arrow::MemoryPool* pool) {
  std::vector<std::unique_ptr<ObjectReader>> groups;
  for (const auto& group : design.column_groups) {
    if (group.columns.empty()) return Disagrees("a group among several names no columns");
    auto extent = ObjectFile::OpenExtent(object, group);
    if (!extent.ok()) return Disagrees(extent.status().message());
    ARROW_ASSIGN_OR_RAISE(auto reader, ObjectReader::OpenFormat(design.format, *extent, pool));
    ARROW_RETURN_NOT_OK(CheckExtent(*reader, design, group));
    groups.push_back(std::move(reader));
  }
  return std::unique_ptr<ObjectReader>(new ColumnGroupsReader(std::move(groups), design.num_rows));
}

}  // namespace skyhook
