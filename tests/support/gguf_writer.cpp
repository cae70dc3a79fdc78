#include "support/gguf_writer.h"

#include <cassert>
#include <cstring>
#include <fstream>

namespace kvscope::test {
namespace {

constexpr uint32_t type_id(GgufValueType t) { return static_cast<uint32_t>(t); }

template <typename T>
void append_le(std::vector<uint8_t>& out, T v) {
  // resize + memcpy rather than insert: g++ 12 -O3 warns falsely on the latter.
  const size_t n = out.size();
  out.resize(n + sizeof(T));
  std::memcpy(out.data() + n, &v, sizeof(T));  // little-endian host
}

template <typename T>
std::vector<uint8_t> scalar_payload(T v) {
  std::vector<uint8_t> p;
  append_le(p, v);
  return p;
}

template <typename T>
GgufEncodedValue numeric_array(GgufValueType element_type, std::span<const T> v) {
  GgufEncodedValue e{type_id(GgufValueType::Array), {}};
  append_u32(e.payload, type_id(element_type));
  append_u64(e.payload, v.size());
  for (T x : v) append_le(e.payload, x);
  return e;
}

void pad_to(std::vector<uint8_t>& out, size_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
}

}  // namespace

void append_u8(std::vector<uint8_t>& out, uint8_t v) { out.push_back(v); }
void append_u32(std::vector<uint8_t>& out, uint32_t v) { append_le(out, v); }
void append_u64(std::vector<uint8_t>& out, uint64_t v) { append_le(out, v); }
void append_f32(std::vector<uint8_t>& out, float v) { append_le(out, v); }
void append_string(std::vector<uint8_t>& out, std::string_view s) {
  append_u64(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

GgufEncodedValue gguf_scalar_u32(uint32_t v) { return {type_id(GgufValueType::U32), scalar_payload(v)}; }

GgufEncodedValue gguf_string(std::string_view s) {
  GgufEncodedValue e{type_id(GgufValueType::String), {}};
  append_string(e.payload, s);
  return e;
}

GgufEncodedValue gguf_i32_array(std::span<const int32_t> v) { return numeric_array(GgufValueType::I32, v); }

GgufEncodedValue gguf_string_array(std::span<const std::string> v) {
  GgufEncodedValue e{type_id(GgufValueType::Array), {}};
  append_u32(e.payload, type_id(GgufValueType::String));
  append_u64(e.payload, v.size());
  for (const std::string& s : v) append_string(e.payload, s);
  return e;
}

GgufEncodedValue gguf_array(GgufValueType element_type, std::span<const GgufEncodedValue> elements) {
  GgufEncodedValue e{type_id(GgufValueType::Array), {}};
  append_u32(e.payload, type_id(element_type));
  append_u64(e.payload, elements.size());
  for (const GgufEncodedValue& x : elements) {
    assert(x.type == type_id(element_type) && "gguf_array: element of the wrong type");
    e.payload.insert(e.payload.end(), x.payload.begin(), x.payload.end());
  }
  return e;
}

void GgufWriter::set_encoded(std::string_view key, uint32_t type, std::vector<uint8_t> payload) {
  for (Kv& kv : kvs_) {
    if (kv.key == key) {
      kv.type = type;
      kv.payload = std::move(payload);
      return;
    }
  }
  kvs_.push_back({std::string(key), type, std::move(payload)});
}

void GgufWriter::set_u8(std::string_view k, uint8_t v) { set_encoded(k, type_id(GgufValueType::U8), scalar_payload(v)); }
void GgufWriter::set_i8(std::string_view k, int8_t v) { set_encoded(k, type_id(GgufValueType::I8), scalar_payload(v)); }
void GgufWriter::set_u16(std::string_view k, uint16_t v) { set_encoded(k, type_id(GgufValueType::U16), scalar_payload(v)); }
void GgufWriter::set_i16(std::string_view k, int16_t v) { set_encoded(k, type_id(GgufValueType::I16), scalar_payload(v)); }
void GgufWriter::set_u32(std::string_view k, uint32_t v) { set_encoded(k, type_id(GgufValueType::U32), scalar_payload(v)); }
void GgufWriter::set_i32(std::string_view k, int32_t v) { set_encoded(k, type_id(GgufValueType::I32), scalar_payload(v)); }
void GgufWriter::set_u64(std::string_view k, uint64_t v) { set_encoded(k, type_id(GgufValueType::U64), scalar_payload(v)); }
void GgufWriter::set_i64(std::string_view k, int64_t v) { set_encoded(k, type_id(GgufValueType::I64), scalar_payload(v)); }
void GgufWriter::set_f32(std::string_view k, float v) { set_encoded(k, type_id(GgufValueType::F32), scalar_payload(v)); }
void GgufWriter::set_f64(std::string_view k, double v) { set_encoded(k, type_id(GgufValueType::F64), scalar_payload(v)); }
void GgufWriter::set_bool(std::string_view k, bool v) {
  set_encoded(k, type_id(GgufValueType::Bool), scalar_payload(static_cast<uint8_t>(v ? 1 : 0)));
}
void GgufWriter::set_string(std::string_view k, std::string_view v) { set_value(k, gguf_string(v)); }
void GgufWriter::set_string_array(std::string_view k, std::span<const std::string> v) {
  set_value(k, gguf_string_array(v));
}
void GgufWriter::set_f32_array(std::string_view k, std::span<const float> v) {
  set_value(k, numeric_array(GgufValueType::F32, v));
}
void GgufWriter::set_i32_array(std::string_view k, std::span<const int32_t> v) {
  set_value(k, numeric_array(GgufValueType::I32, v));
}
void GgufWriter::set_u32_array(std::string_view k, std::span<const uint32_t> v) {
  set_value(k, numeric_array(GgufValueType::U32, v));
}
void GgufWriter::set_value(std::string_view k, GgufEncodedValue v) {
  set_encoded(k, v.type, std::move(v.payload));
}
void GgufWriter::raw_kv(std::string_view key, uint32_t type, std::vector<uint8_t> payload) {
  kvs_.push_back({std::string(key), type, std::move(payload)});
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> dims,
                            std::vector<uint8_t> bytes) {
  assert(!dims.empty());
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  assert(bytes.size() == row_bytes(type, dims[0]) * static_cast<size_t>(rows) &&
         "add_tensor: byte count does not match type and dims");
  (void)rows;
  std::vector<uint64_t> udims(dims.begin(), dims.end());
  raw_tensor(name, static_cast<uint32_t>(type), std::move(udims), std::move(bytes));
}

void GgufWriter::add_f32_tensor(std::string_view name, std::vector<int64_t> dims,
                                std::span<const float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  add_tensor(name, TensorType::F32, std::move(dims), std::move(bytes));
}

void GgufWriter::raw_tensor(std::string_view name, uint32_t type, std::vector<uint64_t> dims,
                            std::vector<uint8_t> bytes, std::optional<uint64_t> offset) {
  tensors_.push_back({std::string(name), type, std::move(dims), std::move(bytes), offset});
}

std::vector<uint8_t> GgufWriter::build(size_t alignment) const {
  std::vector<Kv> kvs = kvs_;
  bool has_alignment = false;
  for (const Kv& kv : kvs) has_alignment |= kv.key == "general.alignment";
  if (alignment != 32 && !has_alignment) {
    kvs.push_back({"general.alignment", type_id(GgufValueType::U32),
                   scalar_payload(static_cast<uint32_t>(alignment))});
  }

  // Data offsets first: each tensor starts aligned after the previous one.
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const Tensor& t : tensors_) {
    offsets.push_back(t.offset.value_or(next));
    next += t.bytes.size();
    next += (alignment - next % alignment) % alignment;
  }

  std::vector<uint8_t> out(magic_.begin(), magic_.end());
  append_u32(out, version_);
  append_u64(out, num_tensors_override_.value_or(tensors_.size()));
  append_u64(out, num_kv_override_.value_or(kvs.size()));
  for (const Kv& kv : kvs) {
    append_string(out, kv.key);
    append_u32(out, kv.type);
    out.insert(out.end(), kv.payload.begin(), kv.payload.end());
  }
  tensor_info_offsets_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    tensor_info_offsets_.push_back(out.size());
    append_string(out, t.name);
    append_u32(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) append_u64(out, d);
    append_u32(out, t.type_id);
    append_u64(out, offsets[i]);
  }
  if (tensors_.empty()) {
    data_offset_ = out.size();
    return out;
  }
  pad_to(out, alignment);
  data_offset_ = out.size();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    pad_to(out, alignment);
  }
  return out;
}

Status GgufWriter::write(const std::string& path, size_t alignment) const {
  const std::vector<uint8_t> bytes = build(alignment);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Error{path + ": cannot create"};
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return Error{path + ": write failed"};
  return Status::success();
}

}  // namespace kvscope::test
