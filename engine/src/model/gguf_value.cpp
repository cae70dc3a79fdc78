// GgufValue: one GGUF metadata value (scalar, string or array) and the names
// and sizes of the value types. The parser that builds values is in
// gguf_file.cpp; tests: tests/engine/model/gguf_file_test.cpp.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "model/gguf_file.h"

namespace kvscope {
namespace {

bool is_integer_type(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16:
    case GgufValueType::I16: case GgufValueType::U32: case GgufValueType::I32:
    case GgufValueType::U64: case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

bool is_signed_type(GgufValueType t) {
  return t == GgufValueType::I8 || t == GgufValueType::I16 || t == GgufValueType::I32 ||
         t == GgufValueType::I64;
}

// Decodes one little-endian scalar of fixed-size type `t` into the GgufValue bit
// convention: signed integers sign-extended, unsigned zero-extended, floats raw.
}  // namespace

namespace detail {
uint64_t gguf_decode_scalar_bits(GgufValueType t, const uint8_t* p) {
  uint64_t raw = 0;
  const size_t n = gguf_value_type_size(t);
  std::memcpy(&raw, p, n);  // little-endian host (x86-64, aarch64)
  if (is_signed_type(t) && n < 8) {
    const unsigned shift = static_cast<unsigned>(64 - 8 * n);
    raw = static_cast<uint64_t>(static_cast<int64_t>(raw << shift) >> shift);
  }
  return raw;
}
}  // namespace detail

namespace {

std::optional<int64_t> bits_to_int(GgufValueType t, uint64_t bits) {
  if (!is_integer_type(t)) return std::nullopt;
  if (!is_signed_type(t) && bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<int64_t>(bits);
}

std::optional<double> bits_to_float(GgufValueType t, uint64_t bits) {
  if (t == GgufValueType::F32) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (t == GgufValueType::F64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (!is_integer_type(t)) return std::nullopt;
  return is_signed_type(t) ? static_cast<double>(static_cast<int64_t>(bits))
                           : static_cast<double>(bits);
}

std::string render_scalar(GgufValueType t, uint64_t bits) {
  if (t == GgufValueType::Bool) return bits ? "true" : "false";
  if (t == GgufValueType::F32) return fmt::format("{}", static_cast<float>(*bits_to_float(t, bits)));
  if (t == GgufValueType::F64) return fmt::format("{}", *bits_to_float(t, bits));
  if (is_signed_type(t)) return fmt::format("{}", static_cast<int64_t>(bits));
  return fmt::format("{}", bits);
}

// Quoted, with control bytes escaped, cut to `max_bytes` of input.
std::string quote(std::string_view s, size_t max_bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += s.size() > max_bytes ? "\"..." : "\"";
  return out;
}


}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",   "u16",    "i16",   "u32",
                                                "i32", "f32",  "bool",   "string", "array",
                                                "u64", "i64",  "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : std::string_view("unknown");
}

size_t gguf_value_type_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    default: return 0;
  }
}

// ---- GgufValue --------------------------------------------------------------

bool GgufValue::is_integer() const { return is_integer_type(type_); }
std::optional<int64_t> GgufValue::as_int() const { return bits_to_int(type_, bits_); }
std::optional<uint64_t> GgufValue::as_uint() const {
  if (!is_integer_type(type_)) return std::nullopt;
  if (is_signed_type(type_) && static_cast<int64_t>(bits_) < 0) return std::nullopt;
  return bits_;
}
std::optional<double> GgufValue::as_float() const { return bits_to_float(type_, bits_); }
std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufValueType::Bool) return std::nullopt;
  return bits_ != 0;
}
const std::string* GgufValue::as_string() const {
  return type_ == GgufValueType::String ? &string_ : nullptr;
}
const std::vector<std::string>* GgufValue::strings() const {
  return is_array() && element_type_ == GgufValueType::String ? &strings_ : nullptr;
}
const std::vector<GgufValue>* GgufValue::arrays() const {
  return is_array() && element_type_ == GgufValueType::Array ? &arrays_ : nullptr;
}
const std::vector<uint8_t>* GgufValue::packed() const {
  return is_array() && gguf_value_type_size(element_type_) != 0 ? &packed_ : nullptr;
}
std::optional<int64_t> GgufValue::int_at(size_t i) const {
  if (!packed() || i >= count_) return std::nullopt;
  const size_t n = gguf_value_type_size(element_type_);
  return bits_to_int(element_type_, detail::gguf_decode_scalar_bits(element_type_, packed_.data() + i * n));
}
std::optional<double> GgufValue::float_at(size_t i) const {
  if (!packed() || i >= count_) return std::nullopt;
  const size_t n = gguf_value_type_size(element_type_);
  return bits_to_float(element_type_, detail::gguf_decode_scalar_bits(element_type_, packed_.data() + i * n));
}
std::optional<std::vector<int64_t>> GgufValue::to_int_vector() const {
  if (!packed() || !is_integer_type(element_type_)) return std::nullopt;
  std::vector<int64_t> out(count_);
  for (size_t i = 0; i < count_; ++i) {
    const std::optional<int64_t> v = int_at(i);
    if (!v) return std::nullopt;  // u64 above INT64_MAX
    out[i] = *v;
  }
  return out;
}
std::optional<std::vector<float>> GgufValue::to_float_vector() const {
  if (!packed() || element_type_ == GgufValueType::Bool) return std::nullopt;
  std::vector<float> out(count_);
  if (element_type_ == GgufValueType::F32) {
    if (count_) std::memcpy(out.data(), packed_.data(), count_ * 4);  // the common case
    return out;
  }
  for (size_t i = 0; i < count_; ++i) out[i] = static_cast<float>(*float_at(i));
  return out;
}

std::string GgufValue::describe() const {
  if (type_ == GgufValueType::String) return "string " + quote(string_, 60);
  if (!is_array()) return fmt::format("{} {}", gguf_value_type_name(type_), render_scalar(type_, bits_));
  std::string out = fmt::format("array[{}; {}]", gguf_value_type_name(element_type_), count_);
  constexpr size_t kShown = 8;  // small arrays show their elements
  if (count_ == 0 || count_ > kShown || element_type_ == GgufValueType::Array) return out;
  out += " [";
  for (size_t i = 0; i < count_; ++i) {
    if (i) out += ", ";
    if (element_type_ == GgufValueType::String) {
      out += quote(strings_[i], 16);
    } else {
      const size_t n = gguf_value_type_size(element_type_);
      out += render_scalar(element_type_, detail::gguf_decode_scalar_bits(element_type_, packed_.data() + i * n));
    }
  }
  return out + "]";
}

}  // namespace kvscope
