// GgufFile: round trips through the test GgufWriter, one test per malformed
// input rule (the message must name the file and the key or tensor), a
// truncation sweep and a seeded byte-flip sweep. Label: unit.
#include "model/gguf_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/gguf_writer.h"
#include "support/require_data.h"
#include "support/test_paths.h"

namespace kvscope {
namespace {

using test::GgufEncodedValue;
using test::GgufWriter;
using ::testing::HasSubstr;

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

Result<std::unique_ptr<GgufFile>> parse(const std::vector<uint8_t>& bytes) {
  return GgufFile::from_memory(bytes.data(), bytes.size(), "t.gguf");
}

// Parses, expects failure, and returns the message (which must name the file).
std::string parse_error(const std::vector<uint8_t>& bytes) {
  auto r = parse(bytes);
  EXPECT_FALSE(r.ok()) << "expected an error";
  if (r.ok()) return {};
  EXPECT_EQ(r.error().rfind("t.gguf: ", 0), 0u) << r.error();
  return r.error();
}

// Nests `depth` arrays: [[[... [1] ...]]].
GgufEncodedValue nested(int depth) {
  GgufEncodedValue v = test::gguf_i32_array(std::vector<int32_t>{1});
  for (int d = 1; d < depth; ++d) v = test::gguf_array(GgufValueType::Array, std::span(&v, 1));
  return v;
}

GgufWriter full_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u8("v.u8", 200);
  w.set_i8("v.i8", -100);
  w.set_u16("v.u16", 60000);
  w.set_i16("v.i16", -30000);
  w.set_u32("v.u32", 4000000000u);
  w.set_i32("v.i32", -2000000000);
  w.set_u64("v.u64", 18000000000000000000ull);
  w.set_i64("v.i64", -9000000000000000000ll);
  w.set_f32("v.f32", 1e-5f);
  w.set_f64("v.f64", -2.25);
  w.set_bool("v.bool", true);
  w.set_string("v.empty", "");
  w.set_string_array("v.strings", std::vector<std::string>{"<s>", "", "hello world", "\n"});
  w.set_f32_array("v.f32s", std::vector<float>{0.5f, -1.0f, 3.0f});
  w.set_i32_array("v.i32s", std::vector<int32_t>{-1, 0, 7});
  w.set_u32_array("v.u32s", std::vector<uint32_t>{});
  const GgufEncodedValue rows[] = {test::gguf_i32_array(std::vector<int32_t>{1, 2}),
                                   test::gguf_i32_array(std::vector<int32_t>{}),
                                   test::gguf_string_array(std::vector<std::string>{"x"})};
  // An array of arrays whose inner element types differ is legal GGUF.
  std::vector<uint8_t> payload;
  test::append_u32(payload, 9);
  test::append_u64(payload, 3);
  for (const auto& r : rows) payload.insert(payload.end(), r.payload.begin(), r.payload.end());
  w.raw_kv("v.nested", 9, payload);
  w.set_value("v.deep", nested(8));
  w.add_tensor("f32", TensorType::F32, {8, 3}, pattern_bytes(96, 1));
  w.add_tensor("q41", TensorType::Q4_1, {64, 2}, pattern_bytes(80, 2));
  w.add_tensor("q80", TensorType::Q8_0, {32}, pattern_bytes(34, 3));
  w.add_tensor("f16", TensorType::F16, {4, 2, 2, 1}, pattern_bytes(32, 4));
  w.add_tensor("q4k", TensorType::Q4_K, {256, 1}, pattern_bytes(144, 5));
  return w;
}

TEST(GgufFile, RoundTripEveryValueType) {
  GgufWriter w = full_writer();
  const std::vector<uint8_t> bytes = w.build(64);
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.file_size(), bytes.size());
  EXPECT_EQ(f.data_offset(), w.data_offset());
  EXPECT_EQ(f.num_metadata(), 20u);  // 19 set + general.alignment
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("v.u8"), 200);
  EXPECT_EQ(f.get_int("v.i8"), -100);
  EXPECT_EQ(f.get_int("v.u16"), 60000);
  EXPECT_EQ(f.get_int("v.i16"), -30000);
  EXPECT_EQ(f.get_int("v.u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("v.i32"), -2000000000);
  EXPECT_EQ(f.get_int("v.u64"), std::nullopt);  // above INT64_MAX
  EXPECT_EQ(f.find("v.u64")->as_uint(), 18000000000000000000ull);
  EXPECT_EQ(f.get_int("v.i64"), -9000000000000000000ll);
  EXPECT_EQ(f.get_float("v.f32"), static_cast<double>(1e-5f));
  EXPECT_EQ(f.get_float("v.f64"), -2.25);
  EXPECT_EQ(f.get_float("v.i32"), -2000000000.0);
  EXPECT_EQ(f.get_bool("v.bool"), true);
  EXPECT_EQ(f.get_bool("v.u8"), std::nullopt);
  EXPECT_EQ(f.get_string("v.empty"), "");
  EXPECT_EQ(f.get_string("v.u8"), std::nullopt);
  EXPECT_EQ(f.get_int("missing"), std::nullopt);
  EXPECT_EQ(f.get_int("general.alignment"), 64);

  const std::vector<std::string>* strings = f.get_string_array("v.strings");
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(*strings, (std::vector<std::string>{"<s>", "", "hello world", "\n"}));
  EXPECT_EQ(f.get_string_array("v.f32s"), nullptr);
  EXPECT_EQ(f.get_float_array("v.f32s"), (std::vector<float>{0.5f, -1.0f, 3.0f}));
  EXPECT_EQ(f.get_int_array("v.i32s"), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(f.get_float_array("v.i32s"), (std::vector<float>{-1, 0, 7}));
  EXPECT_EQ(f.get_int_array("v.f32s"), std::nullopt);
  EXPECT_EQ(f.get_int_array("v.u32s"), std::vector<int64_t>{});
  EXPECT_EQ(f.find("v.u32s")->element_type(), GgufValueType::U32);

  const GgufValue* n = f.find("v.nested");
  ASSERT_NE(n, nullptr);
  ASSERT_NE(n->arrays(), nullptr);
  ASSERT_EQ(n->array_size(), 3u);
  EXPECT_EQ((*n->arrays())[0].to_int_vector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*n->arrays())[1].array_size(), 0u);
  ASSERT_NE((*n->arrays())[2].strings(), nullptr);
  EXPECT_EQ((*n->arrays())[2].strings()->at(0), "x");
  const GgufValue* deep = f.find("v.deep");
  for (int d = 1; d < 8; ++d) {
    ASSERT_NE(deep->arrays(), nullptr) << d;
    deep = &deep->arrays()->at(0);
  }
  EXPECT_EQ(deep->int_at(0), 1);

  const auto described = f.describe_metadata();
  ASSERT_EQ(described.size(), f.num_metadata());
  EXPECT_EQ(described[0], (std::pair<std::string, std::string>{"general.architecture", "string \"llama\""}));
  EXPECT_EQ(described[5].second, "u32 4000000000");
  EXPECT_EQ(described[9].second, "f32 1e-05");
  EXPECT_EQ(described[11].second, "bool true");
  EXPECT_EQ(described[13].second, "array[string; 4] [\"<s>\", \"\", \"hello world\", \"\\n\"]");
  EXPECT_EQ(described[17].second, "array[array; 3]");

  ASSERT_EQ(f.tensors().size(), 5u);
  const struct { const char* name; TensorType type; std::vector<int64_t> dims; size_t bytes; uint8_t seed; } want[] = {
      {"f32", TensorType::F32, {8, 3}, 96, 1},       {"q41", TensorType::Q4_1, {64, 2}, 80, 2},
      {"q80", TensorType::Q8_0, {32}, 34, 3},        {"f16", TensorType::F16, {4, 2, 2, 1}, 32, 4},
      {"q4k", TensorType::Q4_K, {256, 1}, 144, 5}};
  for (size_t i = 0; i < 5; ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type);
    EXPECT_EQ(t.dims, want[i].dims);
    EXPECT_EQ(t.num_bytes, want[i].bytes);
    EXPECT_EQ(t.offset % 64, 0u);
    EXPECT_EQ(t.data, bytes.data() + f.data_offset() + t.offset);
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.num_bytes), pattern_bytes(want[i].bytes, want[i].seed));
    EXPECT_EQ(f.find_tensor(want[i].name), &t);
  }
  EXPECT_EQ(f.tensors()[0].num_elements(), 24);
  EXPECT_EQ(f.tensors()[0].num_rows(), 3);
  EXPECT_EQ(f.tensors()[3].num_rows(), 4);
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

TEST(GgufFile, TypedArraysOfEveryWidth) {
  GgufWriter w;
  auto raw_array = [&](const char* key, uint32_t elem, uint64_t count, std::vector<uint8_t> bytes) {
    std::vector<uint8_t> p;
    test::append_u32(p, elem);
    test::append_u64(p, count);
    p.insert(p.end(), bytes.begin(), bytes.end());
    w.raw_kv(key, 9, p);
  };
  raw_array("bools", 7, 3, {1, 0, 1});
  raw_array("i8s", 1, 2, {0xff, 0x7f});
  raw_array("u16s", 2, 1, {0x34, 0x12});
  std::vector<uint8_t> f64s(16);
  const double d[2] = {0.25, -8.0};
  std::memcpy(f64s.data(), d, 16);
  raw_array("f64s", 12, 2, f64s);
  std::vector<uint8_t> u64s(8, 0xff);  // UINT64_MAX does not fit an int64
  raw_array("u64s", 10, 1, u64s);
  auto r = parse(w.build());
  ASSERT_TRUE(r.ok()) << r.error();
  const GgufFile& f = **r;
  EXPECT_EQ(f.find("bools")->describe(), "array[bool; 3] [true, false, true]");
  EXPECT_EQ(f.get_int_array("bools"), std::nullopt);
  EXPECT_EQ(f.get_float_array("bools"), std::nullopt);
  EXPECT_EQ(f.get_int_array("i8s"), (std::vector<int64_t>{-1, 127}));
  EXPECT_EQ(f.get_int_array("u16s"), (std::vector<int64_t>{0x1234}));
  EXPECT_EQ(f.get_float_array("f64s"), (std::vector<float>{0.25f, -8.0f}));
  EXPECT_EQ(f.get_int_array("u64s"), std::nullopt);
  EXPECT_EQ(f.find("u64s")->describe(), "array[u64; 1] [18446744073709551615]");
  EXPECT_EQ(f.find("f64s")->float_at(1), -8.0);
  EXPECT_EQ(f.find("f64s")->float_at(2), std::nullopt);
}

TEST(GgufFile, OpenMapsAFileAndVersion2Loads) {
  GgufWriter w = full_writer();
  w.set_version(2);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kvscope_gguf_test_" + std::to_string(::getpid()) + ".gguf")).string();
  ASSERT_TRUE(w.write(path).ok());
  auto r = GgufFile::open(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)->path(), path);
  EXPECT_EQ((*r)->version(), 2u);
  EXPECT_EQ((*r)->alignment(), 32u);
  EXPECT_EQ((*r)->tensors().size(), 5u);
  EXPECT_EQ((*r)->find_tensor("q80")->data[0], pattern_bytes(1, 3)[0]);
}

TEST(GgufFile, NoTensorsAndNoPadding) {
  GgufWriter w;
  w.set_string("a", "b");
  auto r = parse(w.build());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE((*r)->tensors().empty());
}

TEST(GgufFile, OpenErrors) {
  auto missing = GgufFile::open("/nonexistent/x.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("/nonexistent/x.gguf: cannot open"));
  auto dir = GgufFile::open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.error(), HasSubstr("not a regular file"));
  EXPECT_THAT(parse_error({}), HasSubstr("the file is empty (0 bytes), not a GGUF model"));
  EXPECT_THAT(parse_error({'G', 'G', 'U'}), HasSubstr("truncated at offset 0 while reading the magic"));
}

// ---- Header -------------------------------------------------------------------

TEST(GgufFileMalformed, BadMagic) {
  GgufWriter w;
  w.set_magic(std::string("PK\x03\x04", 4));
  EXPECT_EQ(parse_error(w.build()), "t.gguf: not a GGUF file (magic is 'PK\\x03\\x04', expected 'GGUF')");
}

TEST(GgufFileMalformed, Versions) {
  GgufWriter w;
  w.set_version(1);
  EXPECT_EQ(parse_error(w.build()), "t.gguf: unsupported GGUF version 1 (kvscope reads version 2 and 3)");
  w.set_version(4);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("unsupported GGUF version 4"));
  w.set_version(0x03000000);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("big-endian"));
}

TEST(GgufFileMalformed, AbsurdCountsFailFast) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.override_counts(std::nullopt, uint64_t{1} << 60);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("metadata count 1152921504606846976 is impossible"));
  w.override_counts(uint64_t{1} << 60, std::nullopt);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("tensor count 1152921504606846976 is impossible"));
  w.override_counts(1, std::nullopt);  // fits the header check, not the one after metadata
  EXPECT_THAT(parse_error(w.build()), HasSubstr("tensor count 1 is impossible"));
  // A count the bytes cannot hold is what a cut-short download looks like: said so.
  EXPECT_THAT(parse_error(w.build()), HasSubstr("(the file is cut short, as by an incomplete download, or damaged)"));
}

// ---- Metadata -----------------------------------------------------------------

TEST(GgufFileMalformed, TruncatedValueNamesKey) {
  GgufWriter w;
  w.set_string("general.name", "SmolLM2");
  std::vector<uint8_t> bytes = w.build();
  bytes.resize(bytes.size() - 3);
  const std::string e = parse_error(bytes);
  EXPECT_THAT(e, HasSubstr("truncated at offset"));
  EXPECT_THAT(e, HasSubstr("while reading key 'general.name' (need 7 bytes, 4 left)"));
}

TEST(GgufFileMalformed, AbsurdArrayCounts) {
  for (uint32_t elem : {4u, 8u, 9u}) {  // u32, string, array
    GgufWriter w;
    std::vector<uint8_t> p;
    test::append_u32(p, elem);
    test::append_u64(p, uint64_t{1} << 60);
    test::append_u64(p, 0);
    w.raw_kv("tokenizer.ggml.tokens", 9, p);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = parse_error(w.build());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
    EXPECT_THAT(e, HasSubstr("key 'tokenizer.ggml.tokens': array of 1152921504606846976"));
    EXPECT_THAT(e, HasSubstr("does not fit"));
  }
}

TEST(GgufFileMalformed, AbsurdStringLength) {
  GgufWriter w;
  std::vector<uint8_t> p;
  test::append_u64(p, uint64_t{1} << 62);
  w.raw_kv("general.name", 8, p);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("while reading key 'general.name' (need 4611686018427387904 bytes"));
}

TEST(GgufFileMalformed, KeyLength) {
  GgufWriter ok;
  ok.set_u32(std::string(1000, 'k'), 1);
  EXPECT_TRUE(parse(ok.build()).ok());
  GgufWriter w;
  w.set_u32("first", 1);
  w.set_u32(std::string(70000, 'k'), 1);
  EXPECT_THAT(parse_error(w.build()),
              HasSubstr("the key of metadata entry 1: string length 70000 at offset"));
  GgufWriter e;
  e.set_u32("", 1);
  EXPECT_THAT(parse_error(e.build()), HasSubstr("metadata entry 0 has an empty key"));
}

TEST(GgufFileMalformed, DuplicateKey) {
  GgufWriter w;
  w.raw_kv("llama.block_count", 4, {30, 0, 0, 0});
  w.set_u8("x", 1);
  w.raw_kv("llama.block_count", 4, {30, 0, 0, 0});
  EXPECT_THAT(parse_error(w.build()), HasSubstr("duplicate metadata key 'llama.block_count' (entries 0 and 2)"));
}

TEST(GgufFileMalformed, UnknownValueTypes) {
  GgufWriter w;
  w.raw_kv("odd", 13, {0, 0, 0, 0});
  EXPECT_EQ(parse_error(w.build()), "t.gguf: key 'odd': unknown value type 13");
  GgufWriter a;
  std::vector<uint8_t> p;
  test::append_u32(p, 77);
  test::append_u64(p, 1);
  a.raw_kv("odd.array", 9, p);
  EXPECT_EQ(parse_error(a.build()), "t.gguf: key 'odd.array': unknown array element type 77");
}

TEST(GgufFileMalformed, NestingDepthLimit) {
  GgufWriter w;
  w.set_value("deep", nested(9));
  EXPECT_EQ(parse_error(w.build()), "t.gguf: key 'deep': arrays nested deeper than 8 levels");
}

TEST(GgufFileMalformed, Alignment) {
  GgufWriter w;
  w.set_u32("general.alignment", 24);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("key 'general.alignment': alignment 24 is not a power of two"));
  w.set_u32("general.alignment", 0);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("alignment 0 is not a power of two"));
  w.set_string("general.alignment", "32");
  EXPECT_THAT(parse_error(w.build()), HasSubstr("key 'general.alignment': expected an unsigned integer"));
  w.set_u64("general.alignment", 16);  // any integer width is accepted
  auto r = parse(w.build(16));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)->alignment(), 16u);
}

// ---- Tensors ------------------------------------------------------------------

std::string tensor_error(std::vector<uint64_t> dims, uint32_t type, size_t num_bytes,
                         std::optional<uint64_t> offset = std::nullopt) {
  GgufWriter w;
  w.raw_tensor("blk.3.attn_q.weight", type, std::move(dims), std::vector<uint8_t>(num_bytes), offset);
  return parse_error(w.build());
}

TEST(GgufFileMalformed, TensorType) {
  EXPECT_EQ(tensor_error({32}, 99, 128), "t.gguf: tensor 'blk.3.attn_q.weight': type 99 is not supported");
  EXPECT_THAT(tensor_error({32}, 4, 128), HasSubstr("type 4 is not supported"));  // removed Q4_2
}

TEST(GgufFileMalformed, TensorDims) {
  EXPECT_THAT(tensor_error({}, 0, 4), HasSubstr("tensor 'blk.3.attn_q.weight': 0 dimensions (expected 1 to 4)"));
  EXPECT_THAT(tensor_error({1, 1, 1, 1, 1}, 0, 4), HasSubstr("5 dimensions (expected 1 to 4)"));
  EXPECT_THAT(tensor_error({4, 0}, 0, 16), HasSubstr("dimension 1 is 0 (expected a positive size)"));
  EXPECT_THAT(tensor_error({4, ~uint64_t{0}}, 0, 16), HasSubstr("dimension 1 is -1"));
  EXPECT_THAT(tensor_error({uint64_t{1} << 40, uint64_t{1} << 40}, 0, 16),
              HasSubstr("tensor 'blk.3.attn_q.weight': element count of dims 1099511627776 x 1099511627776 overflows"));
  // 2^62 elements of F32 overflow the byte count though the element count fits.
  EXPECT_THAT(tensor_error({uint64_t{1} << 31, uint64_t{1} << 31}, 0, 16), HasSubstr("byte size overflows"));
  EXPECT_THAT(tensor_error({33}, 2, 18), HasSubstr("row length 33 is not a multiple of the Q4_0 block size 32"));
  EXPECT_THAT(tensor_error({576}, 12, 288), HasSubstr("row length 576 is not a multiple of the Q4_K block size 256"));
}

TEST(GgufFileMalformed, TensorPlacement) {
  EXPECT_THAT(tensor_error({8}, 0, 32, 16),
              HasSubstr("tensor 'blk.3.attn_q.weight': data offset 16 is not a multiple of the alignment 32"));
  EXPECT_THAT(tensor_error({8}, 0, 32, uint64_t{1} << 62), HasSubstr("tensor 'blk.3.attn_q.weight': 32 bytes at data offset 4611686018427387904 run past the end"));
  EXPECT_THAT(tensor_error({1024}, 0, 32), HasSubstr("tensor 'blk.3.attn_q.weight': 4096 bytes at data offset 0 run past the end"));
  // The likely cause in words, for a half-downloaded model.
  EXPECT_THAT(tensor_error({1024}, 0, 32), HasSubstr("the file is shorter than its tensor table says (cut short"));
  GgufWriter w;
  w.raw_tensor("a", 0, {16}, std::vector<uint8_t>(64));
  w.raw_tensor("b", 0, {8}, std::vector<uint8_t>(32), 32);
  EXPECT_THAT(parse_error(w.build()), HasSubstr("tensors 'a' and 'b' overlap"));
  // Data section start past the end: tensor infos, then the file stops.
  GgufWriter cut;
  cut.raw_tensor("c", 0, {8}, std::vector<uint8_t>(32));
  std::vector<uint8_t> bytes = cut.build();
  bytes.resize(cut.data_offset() - 1);
  EXPECT_THAT(parse_error(bytes), HasSubstr("data section would start at offset"));
}

TEST(GgufFileMalformed, TensorNames) {
  GgufWriter dup;
  dup.add_f32_tensor("x", {4}, std::vector<float>(4));
  dup.add_f32_tensor("y", {4}, std::vector<float>(4));
  dup.add_f32_tensor("x", {4}, std::vector<float>(4));
  EXPECT_THAT(parse_error(dup.build()), HasSubstr("duplicate tensor name 'x' (tensors 0 and 2)"));
  GgufWriter empty;
  empty.add_f32_tensor("", {4}, std::vector<float>(4));
  EXPECT_THAT(parse_error(empty.build()), HasSubstr("tensor 0 has an empty name"));
  GgufWriter huge;
  huge.add_f32_tensor(std::string(70000, 'n'), {4}, std::vector<float>(4));
  EXPECT_THAT(parse_error(huge.build()), HasSubstr("the name of tensor 0: string length 70000"));
  GgufWriter longish;  // accepted, with a warning
  longish.add_f32_tensor(std::string(100, 'n'), {4}, std::vector<float>(4));
  auto r = parse(longish.build());
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ((*r)->warnings().size(), 1u);
  EXPECT_THAT((*r)->warnings()[0], HasSubstr("tensor name of 100 bytes"));
}

// ---- Sweeps -------------------------------------------------------------------

// A file whose last tensor ends exactly at the end of the file (no trailing
// padding), so that every proper prefix is missing something.
std::vector<uint8_t> sweep_file() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>{"a", "bc", "<s>"});
  w.set_f32_array("tokenizer.ggml.scores", std::vector<float>{1, 2, 3});
  w.set_value("nested", nested(3));
  w.add_tensor("q", TensorType::Q4_0, {32, 2}, pattern_bytes(36, 9));
  w.add_f32_tensor("norm", {8}, std::vector<float>(8, 1.0f));
  return w.build();
}

TEST(GgufFileSweep, EveryTruncationFails) {
  const std::vector<uint8_t> bytes = sweep_file();
  ASSERT_TRUE(parse(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    auto r = parse(prefix);
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes loaded";
    if (!r.ok()) {
      EXPECT_FALSE(r.error().empty());
    }
  }
}

TEST(GgufFileSweep, RandomByteFlipsNeverCrash) {
  const std::vector<uint8_t> original = sweep_file();
  std::mt19937 rng(12345);
  int num_ok = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> bytes = original;
    const int num_flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < num_flips; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    auto r = parse(bytes);
    if (!r.ok()) {
      EXPECT_FALSE(r.error().empty());
      continue;
    }
    ++num_ok;
    uint32_t sum = 0;  // every tensor's bytes must be readable
    for (const GgufTensorInfo& t : (*r)->tensors()) {
      ASSERT_GE(t.data, bytes.data());
      ASSERT_LE(t.data + t.num_bytes, bytes.data() + bytes.size());
      for (size_t i = 0; i < t.num_bytes; ++i) sum += t.data[i];
    }
    (void)(*r)->describe_metadata();
    (void)sum;
  }
  EXPECT_GT(num_ok, 0);  // flips in tensor data or string bytes still load
}

// ---- Shared fixtures ----------------------------------------------------------

TEST(GgufFileFixture, StarcoderVocab) {
  const std::string dir = test::tokenizer_fixtures_dir();
  const std::string path = dir + "/ggml-vocab-starcoder.gguf";
  KVSCOPE_REQUIRE_DATA(!dir.empty() && std::filesystem::exists(path), test::TestData::kTokenizerFixtures);
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.error();
  const std::vector<std::string>* tokens = (*r)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_GT(tokens->size(), 1000u);
  EXPECT_EQ((*r)->find("tokenizer.ggml.tokens")->describe(),
            "array[string; " + std::to_string(tokens->size()) + "]");
}

}  // namespace
}  // namespace kvscope
