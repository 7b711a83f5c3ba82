#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/io/safetensors.h"
#include "core/util/error.h"
#include "tests/unit/io/st_writer.h"

namespace inferdesk {
namespace {

using test::expect_error;
using test::safetensors_bytes;
using test::TempDir;
using test::valid_safetensors;
using test::write_file;

class SafetensorsTest : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& bytes) {
    auto p = dir_.path() / "t.safetensors";
    write_file(p, bytes);
    return p;
  }
  // Header from a JSON text with a data section of `data_size` bytes.
  std::filesystem::path write_header(const std::string& header, size_t data_size) {
    return write(safetensors_bytes(header, std::string(data_size, '\x01')));
  }
  void expect_open_error(const std::string& header, size_t data_size, ErrorCode code,
                         const std::vector<std::string>& parts) {
    auto p = write_header(header, data_size);
    std::vector<std::string> all = parts;
    all.push_back(p.string());
    expect_error([&] { SafetensorsFile::open(p); }, code, all);
  }
  TempDir dir_;
};

TEST_F(SafetensorsTest, ValidFileLoadsDtypesShapesBytesAndData) {
  auto p = write(valid_safetensors({{"w", "F32", {2, 3}, 4},
                                    {"b", "BF16", {4}, 2},
                                    {"ids", "I64", {1}, 8},
                                    {"empty", "U8", {0, 5}, 1},
                                    {"h", "F16", {2}, 2},
                                    {"i", "I32", {}, 4}},
                                   {{"format", "pt"}}));
  SafetensorsFile f = SafetensorsFile::open(p);
  ASSERT_EQ(f.tensors().size(), 6u);
  const HostTensor* w = f.find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::F32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->nbytes, 24u);
  EXPECT_EQ(w->numel(), 6);
  // valid_safetensors fills data with its byte index; "w" is first so it starts at 0.
  EXPECT_EQ(static_cast<uint8_t>(w->data[0]), 0u);
  EXPECT_EQ(static_cast<uint8_t>(w->data[23]), 23u);
  const HostTensor* b = f.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::BF16);
  EXPECT_EQ(b->nbytes, 8u);
  EXPECT_EQ(static_cast<uint8_t>(b->data[0]), 24u);
  EXPECT_EQ(f.find("ids")->dtype, DType::I64);
  EXPECT_EQ(f.find("empty")->nbytes, 0u);
  EXPECT_EQ(f.find("h")->dtype, DType::F16);
  EXPECT_EQ(f.find("i")->shape.size(), 0u);
  EXPECT_EQ(f.find("i")->nbytes, 4u);
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  // Sorted by offset: w [0,24), b [24,32), ids [32,40), then the zero-size one at 40.
  EXPECT_EQ(f.tensors()[0].name, "w");
  EXPECT_EQ(f.tensors()[1].name, "b");
}

TEST_F(SafetensorsTest, PointersSurviveMove) {
  auto p = write(valid_safetensors({{"w", "F32", {4}, 4}}));
  SafetensorsFile a = SafetensorsFile::open(p);
  const std::byte* data = a.find("w")->data;
  SafetensorsFile b = std::move(a);
  EXPECT_EQ(b.find("w")->data, data);
  EXPECT_EQ(static_cast<uint8_t>(b.find("w")->data[3]), 3u);
}

TEST_F(SafetensorsTest, EmptyHeaderAndNoDataIsValid) {
  auto p = write(safetensors_bytes("{}", ""));
  EXPECT_TRUE(SafetensorsFile::open(p).tensors().empty());
  auto q = write(safetensors_bytes(R"({"__metadata__": null})", ""));
  EXPECT_TRUE(SafetensorsFile::open(q).metadata().empty());
}

TEST_F(SafetensorsTest, HeaderPaddedWithSpacesIsAccepted) {
  std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  header.append(8 - header.size() % 8, ' ');
  auto p = write(safetensors_bytes(header, "abcd"));
  EXPECT_EQ(SafetensorsFile::open(p).tensors().size(), 1u);
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  expect_error([&] { SafetensorsFile::open(dir_.path() / "absent.safetensors"); }, ErrorCode::NotFound,
               {"absent.safetensors"});
}

TEST_F(SafetensorsTest, TruncatedBelowEightBytes) {
  auto p = write(std::string("\x05\x00\x00", 3));
  expect_error([&] { SafetensorsFile::open(p); }, ErrorCode::Format, {p.string(), "too short"});
  auto empty = write("");
  expect_error([&] { SafetensorsFile::open(empty); }, ErrorCode::Format, {"0 bytes"});
}

TEST_F(SafetensorsTest, HeaderLengthLargerThanFile) {
  auto p = write(safetensors_bytes("{}", "", 1000));
  expect_error([&] { SafetensorsFile::open(p); }, ErrorCode::Format, {p.string(), "header length 1000", "truncated"});
}

TEST_F(SafetensorsTest, HeaderLengthOverLimit) {
  auto p = write(safetensors_bytes("{}", "", kSafetensorsMaxHeaderBytes + 1));
  expect_error([&] { SafetensorsFile::open(p); }, ErrorCode::Format, {"exceeds the limit"});
  auto huge = write(safetensors_bytes("{}", "", UINT64_MAX - 1));
  expect_error([&] { SafetensorsFile::open(huge); }, ErrorCode::Format, {"exceeds the limit"});
}

TEST_F(SafetensorsTest, HeaderNotJsonOrNotObject) {
  expect_open_error("{not json", 0, ErrorCode::Format, {"invalid JSON"});
  expect_open_error("[1, 2]", 0, ErrorCode::Format, {"not a JSON object"});
  expect_open_error(R"({"a": 5})", 0, ErrorCode::Format, {"\"a\"", "not a JSON object"});
  expect_open_error(R"({"__metadata__": {"k": 1}})", 0, ErrorCode::Format, {"__metadata__"});
}

TEST_F(SafetensorsTest, DeepNestingRejected) {
  std::string deep(64, '[');
  deep += std::string(64, ']');
  expect_open_error(R"({"a": )" + deep + "}", 0, ErrorCode::Format, {"nested deeper"});
}

TEST_F(SafetensorsTest, UnsupportedAndUnknownDtypes) {
  expect_open_error(R"({"q": {"dtype": "F8_E8M0", "shape": [2], "data_offsets": [0, 2]}})", 2, ErrorCode::Unsupported,
                    {"\"q\"", "F8_E8M0"});
  expect_open_error(R"({"q": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]}})", 4, ErrorCode::Unsupported,
                    {"I16"});
  expect_open_error(R"({"q": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8, ErrorCode::Unsupported,
                    {"F64"});
  expect_open_error(R"({"q": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}})", 2, ErrorCode::Format,
                    {"unknown dtype", "Q4_K"});
  expect_open_error(R"({"q": {"shape": [2], "data_offsets": [0, 2]}})", 2, ErrorCode::Format, {"dtype"});
}

TEST_F(SafetensorsTest, ShapeTimesSizeMustMatchSpan) {
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 20, ErrorCode::Format,
                    {"\"w\"", "need 24 bytes", "span 20"});
}

TEST_F(SafetensorsTest, BadShapes) {
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0, ErrorCode::Format,
                    {"non-negative"});
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 0]}})", 0, ErrorCode::Format,
                    {"non-negative integers"});
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 1]}})", 1,
                    ErrorCode::Format, {"rank 9"});
  // 2^32 * 2^32 overflows 64 bits.
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})", 0,
                    ErrorCode::Format, {"overflow"});
  // 2^62 elements of 4 bytes overflow the byte count.
  expect_open_error(R"({"w": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0]}})", 0,
                    ErrorCode::Format, {"overflow"});
  expect_open_error(R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", 16, ErrorCode::Format,
                    {"shape"});
}

TEST_F(SafetensorsTest, BadOffsets) {
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [4, 2]}})", 4, ErrorCode::Format,
                    {"begin 4 > end 2"});
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0]}})", 2, ErrorCode::Format,
                    {"data_offsets"});
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, -2]}})", 2, ErrorCode::Format,
                    {"data_offsets"});
}

TEST_F(SafetensorsTest, OffsetsPastTheEnd) {
  expect_open_error(R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]}})", 4, ErrorCode::Format,
                    {"\"w\"", "past the end", "4 bytes"});
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                        "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})",
                    6, ErrorCode::Format, {"\"b\"", "overlaps", "\"a\""});
}

TEST_F(SafetensorsTest, GapBetweenTensors) {
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                        "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})",
                    6, ErrorCode::Format, {"\"b\"", "gap", "[2, 4)"});
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})", 4, ErrorCode::Format, {"gap"});
}

TEST_F(SafetensorsTest, TrailingBytesAfterLastTensor) {
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})", 5, ErrorCode::Format,
                    {"trailing"});
}

TEST_F(SafetensorsTest, DuplicateTensorNames) {
  expect_open_error(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                        "a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})",
                    4, ErrorCode::Format, {"duplicate key \"a\""});
}

// Random byte flips, truncations and header-length edits of a valid file: every outcome is either
// a successful open or an inferdesk::Error (never another exception type or a crash).
TEST_F(SafetensorsTest, MutatedFilesFailCleanly) {
  const std::string valid = valid_safetensors({{"a", "F32", {2, 3}, 4}, {"b", "BF16", {4}, 2}, {"c", "I64", {1}, 8}},
                                              {{"k", "v"}});
  std::mt19937 gen(2024);
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string bytes = valid;
    const int kind = iter % 3;
    if (kind == 0) {  // flip a few bytes, mostly in the header
      for (int k = 0; k < 3; ++k) {
        const size_t pos = gen() % std::min<size_t>(bytes.size(), 120);
        bytes[pos] = static_cast<char>(gen() & 0xff);
      }
    } else if (kind == 1) {  // truncate
      bytes.resize(gen() % bytes.size());
    } else {  // replace a digit of the header with another
      for (size_t pos = 8 + gen() % 60; pos < bytes.size(); ++pos) {
        if (bytes[pos] >= '0' && bytes[pos] <= '9') {
          bytes[pos] = static_cast<char>('0' + gen() % 10);
          break;
        }
      }
    }
    auto p = write(bytes);
    try {
      SafetensorsFile f = SafetensorsFile::open(p);
      for (const auto& t : f.tensors()) {  // whatever loaded must lie inside the file
        ASSERT_LE(t.nbytes, f.file_size());
        if (t.nbytes > 0) {
          volatile std::byte last = t.data[t.nbytes - 1];
          (void)last;
        }
      }
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 250);
  EXPECT_GT(ok, 0);  // some mutations (e.g. in data bytes or metadata text) stay valid
}

TEST(SafetensorsHeader, ParsesFromMemory) {
  std::string data(6, '\0');
  auto h = parse_safetensors_header(R"({"x": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]}})",
                                    reinterpret_cast<const std::byte*>(data.data()), data.size(), "mem");
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].nbytes, 6u);
  EXPECT_EQ(h.tensors[0].data, reinterpret_cast<const std::byte*>(data.data()));
}

}  // namespace
}  // namespace inferdesk
