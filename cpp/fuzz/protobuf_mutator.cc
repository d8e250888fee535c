#include "protobuf_mutator.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace skyhook::fuzz {
namespace {

constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr int kMaxDepth = 64;

struct WireField {
  uint32_t number = 0;
  int wire_type = kVarint;
  uint64_t varint = 0;
  std::string bytes;                // fixed32/64, or a length-delimited payload that is no message
  std::vector<WireField> children;  // a length-delimited payload that parses as a message
  bool is_message = false;
};

bool ReadVarint(std::string_view data, size_t* position, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *position < data.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(data[(*position)++]);
    *value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

bool Parse(std::string_view data, int depth, std::vector<WireField>* fields) {
  size_t position = 0;
  while (position < data.size()) {
    uint64_t tag;
    if (!ReadVarint(data, &position, &tag)) return false;
    WireField field;
    field.number = static_cast<uint32_t>(tag >> 3);
    field.wire_type = static_cast<int>(tag & 7);
    if (field.number == 0) return false;
    switch (field.wire_type) {
      case kVarint:
        if (!ReadVarint(data, &position, &field.varint)) return false;
        break;
      case kFixed64:
      case kFixed32: {
        const size_t width = field.wire_type == kFixed64 ? 8 : 4;
        if (data.size() - position < width) return false;
        field.bytes = data.substr(position, width);
        position += width;
        break;
      }
      case kLengthDelimited: {
        uint64_t length;
        if (!ReadVarint(data, &position, &length) || length > data.size() - position) return false;
        const auto payload = data.substr(position, length);
        position += length;
        field.is_message =
            depth < kMaxDepth && !payload.empty() && Parse(payload, depth + 1, &field.children);
        if (!field.is_message) {
          field.children.clear();
          field.bytes = payload;
        }
        break;
      }
      default:
        return false;
    }
    fields->push_back(std::move(field));
  }
  return true;
}

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void Serialize(const std::vector<WireField>& fields, std::string* out) {
  for (const auto& field : fields) {
    AppendVarint((uint64_t{field.number} << 3) | field.wire_type, out);
    switch (field.wire_type) {
      case kVarint:
        AppendVarint(field.varint, out);
        break;
      case kLengthDelimited:
        if (field.is_message) {
          std::string payload;
          Serialize(field.children, &payload);
          AppendVarint(payload.size(), out);
          out->append(payload);
        } else {
          AppendVarint(field.bytes.size(), out);
          out->append(field.bytes);
        }
        break;
      default:
        out->append(field.bytes);
    }
  }
}

// A field in the tree: the list it sits in and its place there.
struct Site {
  std::vector<WireField>* siblings;
  size_t index;
  WireField& field() const { return (*siblings)[index]; }
};

void CollectSites(std::vector<WireField>* fields, std::vector<Site>* sites) {
  for (size_t i = 0; i < fields->size(); ++i) {
    sites->push_back({fields, i});
    if ((*fields)[i].is_message) CollectSites(&(*fields)[i].children, sites);
  }
}

// Boundaries where validation tends to be missing: decimal precisions (1..38),
// small indices and their neighbours, sign and width limits.
uint64_t InterestingValue(uint64_t current, std::minstd_rand& random) {
  static constexpr uint64_t kValues[] = {0,
                                         1,
                                         2,
                                         3,
                                         4,
                                         7,
                                         8,
                                         16,
                                         31,
                                         32,
                                         37,
                                         38,
                                         39,
                                         40,
                                         63,
                                         64,
                                         127,
                                         128,
                                         255,
                                         256,
                                         1000,
                                         4096,
                                         65535,
                                         65536,
                                         0x7fffffff,
                                         0x80000000,
                                         0xffffffff,
                                         ~uint64_t{0},
                                         ~uint64_t{0} - 1,
                                         uint64_t{1} << 63};
  switch (random() % 4) {
    case 0:
      return current + 1;
    case 1:
      return current - 1;
    default:
      return kValues[random() % std::size(kValues)];
  }
}

// A packed repeated integer field (emit output_mapping, for one) is a run of
// varints: change one of them.
bool MutatePackedVarints(std::string* bytes, std::minstd_rand& random) {
  std::vector<uint64_t> values;
  size_t position = 0;
  while (position < bytes->size()) {
    uint64_t value;
    if (!ReadVarint(*bytes, &position, &value)) return false;
    values.push_back(value);
  }
  if (values.empty()) return false;
  auto& chosen = values[random() % values.size()];
  chosen = InterestingValue(chosen, random);
  bytes->clear();
  for (uint64_t value : values) AppendVarint(value, bytes);
  return true;
}

void MutateBytes(std::string* bytes, std::minstd_rand& random) {
  const size_t size = bytes->size();
  bytes->resize(size + 16 + size / 4);
  const size_t mutated =
      LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes->data()), size, bytes->size());
  bytes->resize(mutated);
}

void MutateSite(const Site& site, const std::vector<Site>& sites, std::minstd_rand& random) {
  WireField& field = site.field();
  switch (random() % 8) {
    case 0:  // drop it: a missing type, input, name or argument
      site.siblings->erase(site.siblings->begin() + site.index);
      return;
    case 1:  // repeat it: a column named twice, two conditions where one belongs
      site.siblings->insert(site.siblings->begin() + site.index, WireField(field));
      return;
    case 2: {  // replace it with another field of its wire type: a subtree out of place;
               // half the time a sibling of the same number (one name copied over another)
      std::vector<const WireField*> donors;
      if (random() % 2 == 0) {
        for (const auto& sibling : *site.siblings) {
          if (sibling.number == field.number) donors.push_back(&sibling);
        }
      } else {
        donors.push_back(&sites[random() % sites.size()].field());
      }
      const WireField& donor = *donors[random() % donors.size()];
      if (&donor == &field || donor.wire_type != field.wire_type) return;
      const uint32_t number = field.number;
      field = WireField(donor);
      field.number = number;
      return;
    }
    case 3: {  // swap with a sibling: argument or column order
      const size_t other = random() % site.siblings->size();
      std::swap(field, (*site.siblings)[other]);
      return;
    }
    case 4: {  // a field the message did not have (another oneof member, an unexpected option)
      if (!field.is_message) break;
      WireField added;
      added.number = 1 + random() % 16;
      added.varint = InterestingValue(0, random);
      field.children.insert(field.children.begin() + random() % (field.children.size() + 1),
                            std::move(added));
      return;
    }
    default:
      break;
  }
  switch (field.wire_type) {
    case kVarint:
      field.varint = InterestingValue(field.varint, random);
      return;
    case kLengthDelimited:
      if (field.is_message) {
        if (!field.children.empty()) {
          field.children.erase(field.children.begin() + random() % field.children.size());
        }
      } else if (random() % 2 == 0 || !MutatePackedVarints(&field.bytes, random)) {
        MutateBytes(&field.bytes, random);
      }
      return;
    default:
      MutateBytes(&field.bytes, random);
      field.bytes.resize(field.wire_type == kFixed64 ? 8 : 4);
  }
}

}  // namespace

std::string MutateProtobuf(std::string_view message, size_t max_size, std::minstd_rand& random) {
  std::vector<WireField> root;
  if (!Parse(message, 0, &root) || root.empty()) return std::string(message);
  std::vector<Site> sites;
  CollectSites(&root, &sites);
  // A few mutations at once: one rarely gets a valid plan past a check.
  const int rounds = 1 + random() % 3;
  for (int round = 0; round < rounds && !sites.empty(); ++round) {
    MutateSite(sites[random() % sites.size()], sites, random);
    sites.clear();
    CollectSites(&root, &sites);
  }
  std::string mutated;
  Serialize(root, &mutated);
  if (mutated.size() > max_size) return std::string(message);
  return mutated;
}

}  // namespace skyhook::fuzz
