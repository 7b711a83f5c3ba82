// The CUDA backend's options as --cuda-option text (core/backend/cuda_option_table.h): every key
// sets the field it names, bad text is refused with the keys or the range, and the listing shows
// the defaults of CudaBackendOptions.
#include <gtest/gtest.h>

#include <string>

#include "core/backend/cuda_option_table.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

std::string value_of(const CudaBackendOptions& o, const std::string& key) {
  for (const CudaOptionInfo& i : cuda_option_list(o))
    if (i.key == key) return i.value;
  return "<missing>";
}

TEST(CudaOptions, ListingShowsTheStructDefaults) {
  const CudaBackendOptions d;
  EXPECT_EQ(value_of(d, "decode_waves"), std::to_string(d.tuning.decode_waves));
  EXPECT_EQ(value_of(d, "decode_mma"), d.tuning.decode_mma ? "1" : "0");
  EXPECT_EQ(value_of(d, "wide_min_rows"), std::to_string(d.tuning.wide_min_rows));
  EXPECT_EQ(value_of(d, "fused_norm"), d.fused_norm ? "1" : "0");
  EXPECT_EQ(value_of(d, "moe_grouped_max_pairs"), std::to_string(d.moe_grouped_max_pairs));
  EXPECT_EQ(value_of(d, "step_timing"), "0");
  const std::string help = cuda_option_help();
  EXPECT_NE(help.find("sampling_copy_stream=1"), std::string::npos) << help;
}

TEST(CudaOptions, EachKindOfValueSetsItsField) {
  CudaBackendOptions o;
  apply_cuda_option(o, "decode_waves=2");
  apply_cuda_option(o, "decode_mma=0");
  apply_cuda_option(o, "wide_swiglu=off");
  apply_cuda_option(o, "step_timing=true");
  apply_cuda_option(o, "fused_norm=false");
  apply_cuda_option(o, "moe_scratch_mb=512");
  EXPECT_EQ(o.tuning.decode_waves, 2);
  EXPECT_FALSE(o.tuning.decode_mma);
  EXPECT_FALSE(o.tuning.wide_swiglu);
  EXPECT_TRUE(o.tuning.step_timing);
  EXPECT_FALSE(o.fused_norm);
  EXPECT_EQ(o.moe_scratch_bytes, 512LL << 20);
  EXPECT_EQ(value_of(o, "moe_scratch_mb"), "512");
  EXPECT_TRUE(o.tuning.wide_ksplit);  // untouched
}

void expect_refused(const std::string& text, const std::string& says) {
  CudaBackendOptions o;
  try {
    apply_cuda_option(o, text);
    ADD_FAILURE() << text << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << text;
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(CudaOptions, BadTextIsRefusedWithWhatWouldDo) {
  expect_refused("no_such_key=1", "decode_waves");  // names the known keys
  expect_refused("decode_waves", "key=value");
  expect_refused("=3", "key=value");
  expect_refused("decode_waves=0", "1..64");
  expect_refused("decode_waves=4x", "not an integer");
  expect_refused("decode_waves=99999999999999999999", "not an integer");
  expect_refused("decode_mma=maybe", "1/0");
  expect_refused("moe_scratch_mb=-1", "0..");
}

}  // namespace
}  // namespace inferdesk
