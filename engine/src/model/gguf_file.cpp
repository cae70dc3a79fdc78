// GGUF v2/v3 reader: a bounds-checked cursor and the parser, which belong
// together: every read goes through ByteCursor, and every count is checked
// against the bytes left before anything is allocated, so hostile input fails
// fast with a message. Values themselves: gguf_value.cpp.
#include "model/gguf_file.h"

#include "model/mapped_file.h"


#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace kvscope {
namespace {

constexpr size_t kMaxNameBytes = 64 * 1024;     // keys and tensor names; llama.cpp warns at 64
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();  // strings bounded by the file
constexpr size_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxNestedArrays = 1u << 16;    // arrays inside arrays, whole file
constexpr size_t kMinKvBytes = 8 + 1 + 4 + 1;    // key length, 1-byte key, type, 1-byte value
constexpr size_t kMinTensorBytes = 8 + 1 + 4 + 8 + 4 + 8;
constexpr size_t kMaxAlignment = size_t{1} << 30;

bool is_known_value_type(uint32_t t) { return t <= 12; }

// A read position over a byte buffer; every read is bounds-checked.
class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  // Returns a pointer to the next n bytes and advances, or nullptr if fewer remain.
  const uint8_t* take(size_t n) {
    if (n > remaining()) return nullptr;
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

// ---- GgufTensorInfo ---------------------------------------------------------

int64_t GgufTensorInfo::num_elements() const {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}
int64_t GgufTensorInfo::num_rows() const {
  if (dims.empty()) return 0;
  return std::accumulate(dims.begin() + 1, dims.end(), int64_t{1}, std::multiplies<>());
}

// ---- Parser -----------------------------------------------------------------

// Fills a GgufFile from its bytes. Each read_* returns false after setting error_.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : file_(file), cur_(file.data_, file.size_) {}

  Status parse() {
    if (!read_header() || !read_metadata() || !read_tensor_infos() || !place_tensors()) {
      return Error{file_.path_ + ": " + error_};
    }
    return Status::success();
  }

 private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  // Takes n bytes or fails with a truncation message naming context_.
  const uint8_t* take(size_t n) {
    const uint8_t* p = cur_.take(n);
    if (!p) {
      fail(fmt::format("truncated at offset {} while reading {} (need {} bytes, {} left)",
                       cur_.pos(), context_, n, cur_.remaining()));
    }
    return p;
  }
  bool read_u32(uint32_t& v) {
    const uint8_t* p = take(4);
    if (p) std::memcpy(&v, p, 4);
    return p != nullptr;
  }
  bool read_u64(uint64_t& v) {
    const uint8_t* p = take(8);
    if (p) std::memcpy(&v, p, 8);
    return p != nullptr;
  }
  // A string whose length must be at most max_len (besides fitting in the file).
  bool read_string(std::string& out, uint64_t max_len) {
    uint64_t len = 0;
    if (!read_u64(len)) return false;
    if (len > max_len) {
      return fail(fmt::format("{}: string length {} at offset {} exceeds the limit of {} bytes",
                              context_, len, cur_.pos() - 8, max_len));
    }
    const uint8_t* p = take(static_cast<size_t>(len));
    if (!p) return false;
    out.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    return true;
  }

  bool read_header() {
    context_ = "the magic";
    if (cur_.remaining() == 0) return fail("the file is empty (0 bytes), not a GGUF model");
    if (cur_.remaining() >= 4 && std::memcmp(file_.data_, "GGUF", 4) != 0) {
      std::string shown;
      for (int i = 0; i < 4; ++i) {
        const uint8_t c = file_.data_[i];
        shown += (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') ? std::string(1, char(c))
                                                                    : fmt::format("\\x{:02x}", c);
      }
      return fail(fmt::format("not a GGUF file (magic is '{}', expected 'GGUF')", shown));
    }
    if (!take(4)) return false;
    context_ = "the version";
    uint32_t version = 0;
    if (!read_u32(version)) return false;
    if (version != 2 && version != 3) {
      if (version != 0 && (version & 0xffffu) == 0) {
        return fail(fmt::format("big-endian GGUF (version word 0x{:08x}) is not supported; "
                                "kvscope reads little-endian files", version));
      }
      return fail(fmt::format("unsupported GGUF version {} (kvscope reads version 2 and 3)", version));
    }
    file_.version_ = version;
    uint64_t num_tensors = 0;
    context_ = "the tensor count";
    if (!read_u64(num_tensors)) return false;
    context_ = "the metadata count";
    if (!read_u64(num_kv_)) return false;
    if (num_kv_ > cur_.remaining() / kMinKvBytes) {
      return fail(fmt::format("metadata count {} is impossible: only {} bytes follow the header (the file is cut short, as by an incomplete download, or damaged)",
                              num_kv_, cur_.remaining()));
    }
    if (num_tensors > cur_.remaining() / kMinTensorBytes) {
      return fail(fmt::format("tensor count {} is impossible: only {} bytes follow the header (the file is cut short, as by an incomplete download, or damaged)",
                              num_tensors, cur_.remaining()));
    }
    num_tensors_ = num_tensors;
    return true;
  }

  bool read_metadata() {
    file_.metadata_.reserve(static_cast<size_t>(num_kv_));
    for (uint64_t i = 0; i < num_kv_; ++i) {
      context_ = fmt::format("the key of metadata entry {}", i);
      std::string key;
      if (!read_string(key, kMaxNameBytes)) return false;
      if (key.empty()) return fail(fmt::format("metadata entry {} has an empty key", i));
      context_ = fmt::format("key '{}'", key);
      if (auto it = file_.key_index_.find(key); it != file_.key_index_.end()) {
        return fail(fmt::format("duplicate metadata key '{}' (entries {} and {})", key, it->second, i));
      }
      uint32_t type = 0;
      if (!read_u32(type)) return false;
      if (!is_known_value_type(type)) {
        return fail(fmt::format("key '{}': unknown value type {}", key, type));
      }
      GgufValue value;
      if (!read_value(static_cast<GgufValueType>(type), value, 0)) return false;
      if (key == "general.alignment" && !set_alignment(value)) return false;
      file_.key_index_.emplace(key, file_.metadata_.size());
      file_.metadata_.emplace_back(std::move(key), std::move(value));
    }
    return true;
  }

  bool set_alignment(const GgufValue& v) {
    const std::optional<uint64_t> a = v.as_uint();
    if (!a) {
      return fail(fmt::format("key 'general.alignment': expected an unsigned integer, found {}",
                              v.describe()));
    }
    if (*a == 0 || (*a & (*a - 1)) != 0 || *a > kMaxAlignment) {
      return fail(fmt::format("key 'general.alignment': alignment {} is not a power of two "
                              "between 1 and {}", *a, kMaxAlignment));
    }
    file_.alignment_ = static_cast<size_t>(*a);
    return true;
  }

  bool read_value(GgufValueType type, GgufValue& out, int depth) {
    out.type_ = type;
    if (type == GgufValueType::String) return read_string(out.string_, kNoLimit);
    if (type != GgufValueType::Array) {
      const uint8_t* p = take(gguf_value_type_size(type));
      if (p) out.bits_ = detail::gguf_decode_scalar_bits(type, p);
      return p != nullptr;
    }
    if (depth >= kMaxArrayDepth) {
      return fail(fmt::format("{}: arrays nested deeper than {} levels", context_, kMaxArrayDepth));
    }
    uint32_t elem = 0;
    uint64_t count = 0;
    if (!read_u32(elem) || !read_u64(count)) return false;
    if (!is_known_value_type(elem)) {
      return fail(fmt::format("{}: unknown array element type {}", context_, elem));
    }
    out.element_type_ = static_cast<GgufValueType>(elem);
    const size_t elem_size = gguf_value_type_size(out.element_type_);
    // The least bytes one element can take: strings a length, arrays type + count.
    const size_t min_bytes = elem_size ? elem_size : (elem == 8 ? 8 : 12);
    if (count > cur_.remaining() / min_bytes) {
      return fail(fmt::format("{}: array of {} {} elements (at least {} bytes each) does not fit "
                              "in the {} bytes left at offset {}", context_, count,
                              gguf_value_type_name(out.element_type_), min_bytes,
                              cur_.remaining(), cur_.pos()));
    }
    out.count_ = static_cast<size_t>(count);
    if (elem_size) {
      const uint8_t* p = take(out.count_ * elem_size);
      if (!p) return false;
      out.packed_.assign(p, p + out.count_ * elem_size);
      return true;
    }
    if (out.element_type_ == GgufValueType::String) {
      out.strings_.resize(out.count_);
      for (std::string& s : out.strings_) {
        if (!read_string(s, kNoLimit)) return false;
      }
      return true;
    }
    num_nested_arrays_ += out.count_;
    if (num_nested_arrays_ > kMaxNestedArrays) {
      return fail(fmt::format("{}: more than {} nested arrays in the file", context_,
                              kMaxNestedArrays));
    }
    out.arrays_.resize(out.count_);
    for (GgufValue& v : out.arrays_) {
      if (!read_value(GgufValueType::Array, v, depth + 1)) return false;
    }
    return true;
  }

  bool read_tensor_infos() {
    if (num_tensors_ > cur_.remaining() / kMinTensorBytes) {
      return fail(fmt::format("tensor count {} is impossible: only {} bytes follow the metadata (the file is cut short, as by an incomplete download, or damaged)",
                              num_tensors_, cur_.remaining()));
    }
    file_.tensors_.reserve(static_cast<size_t>(num_tensors_));
    for (uint64_t i = 0; i < num_tensors_; ++i) {
      GgufTensorInfo t;
      context_ = fmt::format("the name of tensor {}", i);
      if (!read_string(t.name, kMaxNameBytes)) return false;
      if (t.name.empty()) return fail(fmt::format("tensor {} has an empty name", i));
      if (t.name.size() >= 64) {
        file_.warnings_.push_back(fmt::format("tensor name of {} bytes (llama.cpp expects < 64): '{}...'",
                                              t.name.size(), t.name.substr(0, 32)));
      }
      context_ = fmt::format("tensor '{}'", t.name);
      if (auto it = file_.tensor_index_.find(t.name); it != file_.tensor_index_.end()) {
        return fail(fmt::format("duplicate tensor name '{}' (tensors {} and {})", t.name, it->second, i));
      }
      if (!read_tensor_shape(t)) return false;
      file_.tensor_index_.emplace(t.name, file_.tensors_.size());
      file_.tensors_.push_back(std::move(t));
    }
    return true;
  }

  bool read_tensor_shape(GgufTensorInfo& t) {
    uint32_t num_dims = 0;
    if (!read_u32(num_dims)) return false;
    if (num_dims == 0 || num_dims > kMaxDims) {
      return fail(fmt::format("{}: {} dimensions (expected 1 to {})", context_, num_dims, kMaxDims));
    }
    int64_t num_elements = 1;
    for (uint32_t d = 0; d < num_dims; ++d) {
      uint64_t dim = 0;
      if (!read_u64(dim)) return false;
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fail(fmt::format("{}: dimension {} is {} (expected a positive size)", context_, d,
                                static_cast<int64_t>(dim)));
      }
      t.dims.push_back(static_cast<int64_t>(dim));
      if (__builtin_mul_overflow(num_elements, static_cast<int64_t>(dim), &num_elements)) {
        return fail(fmt::format("{}: element count of dims {} overflows", context_,
                                fmt::join(t.dims, " x ")));
      }
    }
    uint32_t type_id = 0;
    if (!read_u32(type_id)) return false;
    const std::optional<TensorTypeTraits> traits = tensor_type_traits(type_id);
    if (!traits) return fail(fmt::format("{}: type {} is not supported", context_, type_id));
    t.type = static_cast<TensorType>(type_id);
    if (t.dims[0] % traits->block_elems != 0) {
      return fail(fmt::format("{}: row length {} is not a multiple of the {} block size {}",
                              context_, t.dims[0], traits->name, traits->block_elems));
    }
    uint64_t num_bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(num_elements / traits->block_elems),
                               static_cast<uint64_t>(traits->block_bytes), &num_bytes) ||
        num_bytes > std::numeric_limits<size_t>::max()) {
      return fail(fmt::format("{}: byte size overflows", context_));
    }
    t.num_bytes = static_cast<size_t>(num_bytes);
    if (!read_u64(t.offset)) return false;
    if (t.offset % file_.alignment_ != 0) {
      return fail(fmt::format("{}: data offset {} is not a multiple of the alignment {}", context_,
                              t.offset, file_.alignment_));
    }
    return true;
  }

  // Finds the data section and checks that every tensor lies inside the file
  // and that no two tensors share bytes.
  bool place_tensors() {
    const size_t a = file_.alignment_;
    const size_t end_of_infos = cur_.pos();
    const size_t data_offset = end_of_infos + (a - end_of_infos % a) % a;
    file_.data_offset_ = data_offset;
    if (file_.tensors_.empty()) return true;  // a file with no tensors may end unpadded
    if (data_offset > file_.size_) {
      return fail(fmt::format("the file is shorter than its header says (cut short, as by an incomplete download "
                              "or copy, or corrupt): the data section would start at offset {}, past the end of "
                              "the file ({} bytes)",
                              data_offset, file_.size_));
    }
    const uint64_t data_bytes = file_.size_ - data_offset;
    for (GgufTensorInfo& t : file_.tensors_) {
      if (t.offset > data_bytes || t.num_bytes > data_bytes - t.offset) {
        return fail(fmt::format("the file is shorter than its tensor table says (cut short, as by an incomplete "
                                "download or copy, or corrupt): tensor '{}': {} bytes at data offset {} run past "
                                "the end of the file (the data section holds {} bytes from file offset {})",
                                t.name, t.num_bytes, t.offset, data_bytes, data_offset));
      }
      t.data = file_.data_ + data_offset + t.offset;
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(file_.tensors_.size());
    for (const GgufTensorInfo& t : file_.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* x, const GgufTensorInfo* y) { return x->offset < y->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo& prev = *by_offset[i - 1];
      const GgufTensorInfo& next = *by_offset[i];
      if (prev.offset + prev.num_bytes > next.offset) {  // both bounded by data_bytes: no overflow
        return fail(fmt::format("tensors '{}' and '{}' overlap (data offsets {} + {} bytes and {})",
                                prev.name, next.name, prev.offset, prev.num_bytes, next.offset));
      }
    }
    return true;
  }

  GgufFile& file_;
  ByteCursor cur_;
  std::string error_;
  std::string context_;  // what is being read, for truncation messages
  uint64_t num_kv_ = 0;
  uint64_t num_tensors_ = 0;
  size_t num_nested_arrays_ = 0;
};

// ---- GgufFile ---------------------------------------------------------------

GgufFile::~GgufFile() = default;

void GgufFile::release_resident_pages() const {
  if (mapping_) mapping_->release_resident_pages();
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_memory(const uint8_t* data, size_t size,
                                                        std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(name);
  file->data_ = data;
  file->size_ = data ? size : 0;
  Status s = GgufParser(*file).parse();
  if (!s.ok()) return Error{s.error()};
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return Error{mapped.error()};
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->mapping_ = std::move(mapped).value();
  file->data_ = file->mapping_->data();
  file->size_ = file->mapping_->size();
  Status s = GgufParser(*file).parse();
  if (!s.ok()) return Error{s.error()};
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v || !v->as_string()) return std::nullopt;
  return *v->as_string();
}
std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_int() : std::nullopt;
}
std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_float() : std::nullopt;
}
std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_bool() : std::nullopt;
}
const std::vector<std::string>* GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->strings() : nullptr;
}
std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->to_float_vector() : std::nullopt;
}
std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->to_int_vector() : std::nullopt;
}

std::vector<std::pair<std::string, std::string>> GgufFile::describe_metadata() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(metadata_.size());
  for (const auto& [key, value] : metadata_) out.emplace_back(key, value.describe());
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace kvscope
