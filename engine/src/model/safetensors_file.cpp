// SafetensorsFile / SafetensorsCheckpoint: mapping and validating .safetensors
// files (format rules in safetensors_file.h).
#include "model/safetensors_file.h"

#include "model/mapped_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>


namespace kvscope {
namespace {

using ordered_json = nlohmann::ordered_json;

// The reference implementation refuses headers above 100 MB; so do we, which
// also bounds the JSON parser's work on a hostile file.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DtypeInfo {
  SafetensorsDtype dtype;
  std::string_view name;
  size_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::BOOL, "BOOL", 1},       {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::I8, "I8", 1},           {SafetensorsDtype::I16, "I16", 2},
    {SafetensorsDtype::U16, "U16", 2},         {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2},       {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::U32, "U32", 4},         {SafetensorsDtype::F32, "F32", 4},
    {SafetensorsDtype::F64, "F64", 8},         {SafetensorsDtype::I64, "I64", 8},
    {SafetensorsDtype::U64, "U64", 8},         {SafetensorsDtype::F8_E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::F8_E5M2, "F8_E5M2", 1},
};

const DtypeInfo* dtype_by_name(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const DtypeInfo& dtype_info(SafetensorsDtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d;
  }
  return kDtypes[0];  // unreachable: the table lists every enumerator
}

std::optional<uint64_t> non_negative(const ordered_json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::string_view safetensors_dtype_name(SafetensorsDtype dtype) { return dtype_info(dtype).name; }
size_t safetensors_dtype_size(SafetensorsDtype dtype) { return dtype_info(dtype).size; }

int64_t SafetensorsTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::~SafetensorsFile() = default;

void SafetensorsFile::release_resident_pages() const {
  if (mapping_) mapping_->release_resident_pages();
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return Error{mapped.error()};
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->mapping_ = std::move(mapped).value();
  file->data_ = file->mapping_->data();
  file->size_ = file->mapping_->size();
  if (Status s = file->parse(); !s.ok()) return Error{s.error()};
  return file;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::from_memory(const uint8_t* data, size_t size,
                                                                      std::string name) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = std::move(name);
  file->data_ = data;
  file->size_ = size;
  if (Status s = file->parse(); !s.ok()) return Error{s.error()};
  return file;
}

Status SafetensorsFile::parse() {
  const std::string& p = path_;
  if (size_ < 8) return Error{fmt::format("{}: {} bytes is too short for a safetensors header", p, size_)};
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data_[i];  // little-endian
  if (header_len > size_ - 8) {
    return Error{fmt::format("{}: header length {} runs past the end of the file ({} bytes)", p, header_len, size_)};
  }
  if (header_len > kMaxHeaderBytes) {
    return Error{fmt::format("{}: header length {} is above the 100 MB limit", p, header_len)};
  }
  if (header_len < 2 || data_[8] != '{') return Error{fmt::format("{}: the header is not a JSON object", p)};
  const char* text = reinterpret_cast<const char*>(data_ + 8);
  const ordered_json header = ordered_json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return Error{fmt::format("{}: the header is not valid JSON", p)};
  }
  const uint8_t* section = data_ + 8 + header_len;
  const uint64_t section_size = size_ - 8 - header_len;

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return Error{fmt::format("{}: __metadata__ is not an object", p)};
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return Error{fmt::format("{}: __metadata__ value '{}' is not a string", p, key)};
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) return Error{fmt::format("{}: tensor '{}': header entry is not an object", p, name)};
    const auto dt = entry.find("dtype");
    if (dt == entry.end() || !dt->is_string()) return Error{fmt::format("{}: tensor '{}': no dtype", p, name)};
    const std::string dtype_name = dt->get<std::string>();
    const DtypeInfo* info = dtype_by_name(dtype_name);
    if (!info) return Error{fmt::format("{}: tensor '{}': dtype '{}' is not a safetensors dtype", p, name, dtype_name)};

    SafetensorsTensor t;
    t.name = name;
    t.dtype = info->dtype;
    const auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array()) return Error{fmt::format("{}: tensor '{}': no shape", p, name)};
    uint64_t num_elements = 1;
    for (const auto& d : *shape) {
      const std::optional<uint64_t> v = non_negative(d);
      if (!v || *v > (uint64_t{1} << 40) || __builtin_mul_overflow(num_elements, *v, &num_elements)) {
        return Error{fmt::format("{}: tensor '{}': shape {} is not a list of sizes", p, name, shape->dump())};
      }
      t.shape.push_back(static_cast<int64_t>(*v));
    }
    const auto offsets = entry.find("data_offsets");
    std::optional<uint64_t> begin, end;
    if (offsets != entry.end() && offsets->is_array() && offsets->size() == 2) {
      begin = non_negative((*offsets)[0]);
      end = non_negative((*offsets)[1]);
    }
    if (!begin || !end) return Error{fmt::format("{}: tensor '{}': data_offsets is not [begin, end]", p, name)};
    if (*begin > *end || *end > section_size) {
      return Error{fmt::format("{}: tensor '{}': data_offsets [{}, {}] lie outside the data section of {} bytes",
                               p, name, *begin, *end, section_size)};
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(num_elements, static_cast<uint64_t>(info->size), &expected) ||
        expected != *end - *begin) {
      return Error{fmt::format("{}: tensor '{}': data_offsets [{}, {}] hold {} bytes, but shape {} of {} needs {}",
                               p, name, *begin, *end, *end - *begin, shape_text(t.shape), dtype_name,
                               num_elements * info->size)};
    }
    t.data = section + *begin;
    t.num_bytes = static_cast<size_t>(expected);
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // The data section must be covered exactly once: overlapping tensors could
  // alias each other, and unindexed bytes are how polyglot files hide content.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const SafetensorsTensor& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->data != b->data ? a->data < b->data : a->num_bytes < b->num_bytes;
  });
  uint64_t covered = 0;
  for (const SafetensorsTensor* t : by_offset) {
    const uint64_t begin = static_cast<uint64_t>(t->data - section);
    if (begin < covered) {
      return Error{fmt::format("{}: tensor '{}': data_offsets [{}, {}] overlap another tensor", p, t->name, begin,
                               begin + t->num_bytes)};
    }
    if (begin > covered) {
      return Error{fmt::format("{}: bytes [{}, {}) of the data section belong to no tensor (before '{}')", p,
                               covered, begin, t->name)};
    }
    covered = begin + t->num_bytes;
  }
  if (covered != section_size) {
    return Error{fmt::format("{}: the data section has {} bytes but its tensors cover {}", p, section_size, covered)};
  }
  return Status::success();
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// ---- SafetensorsCheckpoint ---------------------------------------------------

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  auto ckpt = std::unique_ptr<SafetensorsCheckpoint>(new SafetensorsCheckpoint());
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single_path = fs::path(dir) / "model.safetensors";

  // Tensor name -> shard file name, from the index; empty for a single file.
  std::map<std::string, std::string> weight_map;
  std::vector<std::string> shard_names;
  if (const std::optional<std::string> text = read_text_file(index_path.string())) {
    const nlohmann::json index = nlohmann::json::parse(*text, nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object()) {
      return Error{fmt::format("{}: not valid JSON with a \"weight_map\" object", index_path.string())};
    }
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) {
        return Error{fmt::format("{}: weight_map entry '{}' is not a file name", index_path.string(), name)};
      }
      const std::string file = shard.get<std::string>();
      // A shard must be a plain name in the model directory, never a path out of it.
      if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos ||
          file == "." || file == "..") {
        return Error{fmt::format("{}: tensor '{}': shard '{}' is not a file name in the model directory",
                                 index_path.string(), name, file)};
      }
      weight_map[name] = file;
      if (std::find(shard_names.begin(), shard_names.end(), file) == shard_names.end()) shard_names.push_back(file);
    }
    if (shard_names.empty()) return Error{fmt::format("{}: the weight_map is empty", index_path.string())};
  } else if (fs::exists(single_path)) {
    shard_names.push_back("model.safetensors");
  } else {
    return Error{fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir)};
  }

  for (const std::string& shard : shard_names) {
    auto file = SafetensorsFile::open((fs::path(dir) / shard).string());
    if (!file.ok()) return Error{file.error()};
    const size_t file_index = ckpt->files_.size();
    for (const SafetensorsTensor& t : (*file)->tensors()) {
      if (!weight_map.empty()) {
        const auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != shard) continue;  // the index says it lives elsewhere
      }
      if (!ckpt->index_.emplace(t.name, std::make_pair(file_index, &t)).second) {
        return Error{fmt::format("{}: tensor '{}' is also in {}", (*file)->path(), t.name,
                                 ckpt->file_of(t.name))};
      }
    }
    ckpt->files_.push_back(std::move(file).value());
  }
  for (const auto& [name, shard] : weight_map) {
    if (!ckpt->index_.count(name)) {
      return Error{fmt::format("{}: tensor '{}' is listed in the index but missing from {}", index_path.string(),
                               name, shard)};
    }
  }
  return ckpt;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second.second;
}

std::string SafetensorsCheckpoint::file_of(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? std::string() : files_[it->second.first]->path();
}

}  // namespace kvscope
