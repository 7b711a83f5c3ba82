// The on-disk packings of integer weights (AWQ, GPTQ, compressed-tensors), each read with strict
// validation into the canonical layout (int_weights.h describes both).
#include <cmath>
#include <cstring>

#include "core/io/int_weights.h"
#include "core/io/model_folder.h"
#include "core/util/error.h"

namespace inferdesk {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& reason) {
  throw Error(ErrorCode::Format, "tensor '" + name + "': " + reason);
}

std::string dims(std::initializer_list<int64_t> d) { return shape_to_string(std::vector<int64_t>(d)); }

// A tensor that must be there with this dtype and shape.
const HostTensor& need(const TensorLookup& find, const std::string& name, std::initializer_list<DType> dtypes,
                       const std::vector<int64_t>& shape, const std::string& why) {
  const HostTensor* t = find(name);
  if (!t) throw Error(ErrorCode::Format, "integer weight: missing tensor '" + name + "' (" + why + ")");
  bool ok = false;
  std::string names;
  for (DType d : dtypes) {
    ok = ok || t->dtype == d;
    names += (names.empty() ? "" : " or ") + std::string(dtype_name(d));
  }
  if (!ok) bad(name, "dtype must be " + names + ", not " + dtype_name(t->dtype));
  if (t->shape != shape)
    bad(name, "shape must be " + shape_to_string(shape) + " (" + why + "), not " + shape_to_string(t->shape));
  if (static_cast<int64_t>(t->nbytes) != t->numel() * static_cast<int64_t>(dtype_size(t->dtype)))
    bad(name, "holds the wrong number of bytes for its shape");
  return *t;
}

uint32_t word(const HostTensor& t, int64_t i) {
  uint32_t w;
  std::memcpy(&w, t.data + i * 4, 4);
  return w;
}

constexpr std::initializer_list<DType> kFloat = {DType::F16, DType::BF16, DType::F32};

// The geometry every format shares: bits, K, groups (K divisible by the group size).
HostIntWeight start(const QuantInfo& scheme, const std::string& name, int64_t n, int64_t k) {
  if (n <= 0 || k <= 0) bad(name, "an integer weight needs a positive shape");
  HostIntWeight h;
  h.scheme = scheme;
  h.scheme.in_features = k;
  h.scheme.scales = h.scheme.zeros = nullptr;
  h.scheme.g_idx = nullptr;
  h.rows = n;
  int64_t groups = 1;
  if (scheme.granularity == ScaleGranularity::Group) {
    if (k % scheme.group_size != 0)
      bad(name, "group_size " + std::to_string(scheme.group_size) + " does not divide its " + std::to_string(k) +
                    " input features");
    groups = k / scheme.group_size;
  }
  h.codes.assign(static_cast<size_t>(n * h.code_cols()), 0);
  h.scales = HostScales{std::vector<float>(static_cast<size_t>(n * groups)), n, groups};
  if (scheme.has_zero_point) h.zeros.assign(static_cast<size_t>(n * groups), 0.0f);
  return h;
}

// Scales stored [G, N] (transposed = true: AWQ, GPTQ) or [N, G] (compressed-tensors).
void read_scales(const HostTensor& t, HostIntWeight& h, bool transposed) {
  const int64_t N = h.rows, G = h.scales.cols;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      const float v = float_at(t, transposed ? g * N + n : n * G + g);
      if (!std::isfinite(v))
        bad(t.name, "scale [" + std::to_string(transposed ? g : n) + ", " + std::to_string(transposed ? n : g) +
                        "] is " + std::to_string(v) + " (scales must be finite)");
      h.scales.values[static_cast<size_t>(n * G + g)] = v;
    }
  }
}

// A g_idx [K]: each value a group in [0, G). Kept only when it is not the plain k / group_size.
void read_g_idx(const HostTensor& t, HostIntWeight& h, int64_t groups) {
  const int64_t K = h.scheme.in_features;
  h.g_idx.resize(static_cast<size_t>(K));
  bool plain = true;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t g = static_cast<int32_t>(word(t, k));
    if (g < 0 || g >= groups)
      bad(t.name, "g_idx[" + std::to_string(k) + "] = " + std::to_string(g) + " is not a group in [0, " +
                      std::to_string(groups) + ")");
    h.g_idx[static_cast<size_t>(k)] = static_cast<int32_t>(g);
    plain = plain && g == (h.scheme.granularity == ScaleGranularity::Group ? k / h.scheme.group_size : 0);
  }
  h.scheme.act_order = !plain;
  if (plain) h.g_idx.clear();
}

HostIntWeight read_awq(const QuantInfo& scheme, const std::string& m, int64_t N, int64_t K, const TensorLookup& find) {
  HostIntWeight h = start(scheme, m + ".qweight", N, K);
  if (N % 8 != 0)
    bad(m + ".qweight", "AWQ packs 8 output features per int32; " + std::to_string(N) + " is not a multiple");
  const int64_t G = h.scales.cols;
  const HostTensor& qw = need(find, m + ".qweight", {DType::I32}, {K, N / 8}, "[in, out/8] for 4-bit AWQ");
  const HostTensor& qz = need(find, m + ".qzeros", {DType::I32}, {G, N / 8}, "[groups, out/8]");
  read_scales(need(find, m + ".scales", kFloat, {G, N}, "[groups, out]"), h, true);
  // Slot j of a word holds column 8c + kOrder[j] (AutoAWQ's interleaving for its GEMM kernel).
  constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < N / 8; ++c) {
      const uint32_t w = word(qw, k * (N / 8) + c);
      for (int j = 0; j < 8; ++j) h.set_code(8 * c + kOrder[j], k, static_cast<int32_t>((w >> (4 * j)) & 0xf) - 8);
    }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t c = 0; c < N / 8; ++c) {
      const uint32_t w = word(qz, g * (N / 8) + c);
      for (int j = 0; j < 8; ++j)
        h.zeros[static_cast<size_t>((8 * c + kOrder[j]) * G + g)] = static_cast<float>((w >> (4 * j)) & 0xf) - 8.0f;
    }
  return h;
}

HostIntWeight read_gptq(const QuantInfo& scheme, bool v2, const std::string& m, int64_t N, int64_t K,
                        const TensorLookup& find) {
  HostIntWeight h = start(scheme, m + ".qweight", N, K);
  const int bits = scheme.bits, pf = 32 / bits, mid = 1 << (bits - 1);
  const uint32_t mask = (1u << bits) - 1;
  if (K % pf != 0 || N % pf != 0)
    bad(m + ".qweight", std::to_string(bits) + "-bit GPTQ packs " + std::to_string(pf) +
                            " values per int32; in and out features (" + std::to_string(K) + ", " + std::to_string(N) +
                            ") must be multiples");
  const int64_t G = h.scales.cols;
  const HostTensor& qw = need(find, m + ".qweight", {DType::I32}, {K / pf, N}, "[in*bits/32, out]");
  read_scales(need(find, m + ".scales", kFloat, {G, N}, "[groups, out]"), h, true);
  for (int64_t r = 0; r < K / pf; ++r)
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t w = word(qw, r * N + n);
      for (int j = 0; j < pf; ++j) h.set_code(n, r * pf + j, static_cast<int32_t>((w >> (bits * j)) & mask) - mid);
    }
  if (find(m + ".g_idx")) {
    read_g_idx(need(find, m + ".g_idx", {DType::I32}, {K}, "[in]"), h, G);
  } else if (scheme.act_order) {
    need(find, m + ".g_idx", {DType::I32}, {K}, "desc_act checkpoints give each input column's group");
  }
  if (!scheme.has_zero_point) return h;
  const HostTensor& qz = need(find, m + ".qzeros", {DType::I32}, {G, N / pf}, "[groups, out*bits/32]");
  for (int64_t g = 0; g < G; ++g)
    for (int64_t c = 0; c < N / pf; ++c) {
      const uint32_t w = word(qz, g * (N / pf) + c);
      for (int j = 0; j < pf; ++j) {
        // The original format stores zero - 1 (its kernels add the 1 back), so 0..2^bits.
        const int64_t z = static_cast<int64_t>((w >> (bits * j)) & mask) + (v2 ? 0 : 1);
        h.zeros[static_cast<size_t>((c * pf + j) * G + g)] = static_cast<float>(z - mid);
      }
    }
  return h;
}

HostIntWeight read_ct_packed(const QuantInfo& scheme, const std::string& m, int64_t N, int64_t K,
                             const TensorLookup& find) {
  HostIntWeight h = start(scheme, m + ".weight_packed", N, K);
  const int bits = scheme.bits, pf = 32 / bits, mid = 1 << (bits - 1);
  const uint32_t mask = (1u << bits) - 1;
  const int64_t words = (K + pf - 1) / pf, G = h.scales.cols;
  const HostTensor& qw = need(find, m + ".weight_packed", {DType::I32}, {N, words}, "[out, ceil(in*bits/32)]");
  const HostTensor& shape = need(find, m + ".weight_shape", {DType::I32, DType::I64}, {2}, "[out, in]");
  auto dim = [&](int i) {
    if (shape.dtype == DType::I32) return static_cast<int64_t>(static_cast<int32_t>(word(shape, i)));
    int64_t v;
    std::memcpy(&v, shape.data + i * 8, 8);
    return v;
  };
  if (dim(0) != N || dim(1) != K)
    bad(m + ".weight_shape",
        "says [" + std::to_string(dim(0)) + ", " + std::to_string(dim(1)) + "] but the model expects " + dims({N, K}));
  read_scales(need(find, m + ".weight_scale", kFloat, {N, G}, "[out, groups]"), h, false);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < words; ++c) {
      const uint32_t w = word(qw, n * words + c);
      for (int j = 0; j < pf && c * pf + j < K; ++j)
        h.set_code(n, c * pf + j, static_cast<int32_t>((w >> (bits * j)) & mask) - mid);
    }
  return h;
}

HostIntWeight read_ct_int8(const QuantInfo& scheme, const std::string& m, int64_t N, int64_t K,
                           const TensorLookup& find) {
  HostIntWeight h = start(scheme, m + ".weight", N, K);
  const HostTensor& w = need(find, m + ".weight", {DType::I8}, {N, K}, "[out, in] int8");
  std::memcpy(h.codes.data(), w.data, static_cast<size_t>(N * K));
  read_scales(need(find, m + ".weight_scale", kFloat, {N, 1}, "[out, 1] per channel"), h, false);
  return h;
}

}  // namespace

bool has_int_weight(IntPacking packing, const std::string& module, const TensorLookup& find) {
  switch (packing) {
    case IntPacking::None: return false;
    case IntPacking::Awq:
    case IntPacking::Gptq:
    case IntPacking::GptqV2: return find(module + ".qweight") != nullptr;
    case IntPacking::CtPacked: return find(module + ".weight_packed") != nullptr;
    case IntPacking::CtInt8: {
      const HostTensor* t = find(module + ".weight");
      return t && t->dtype == DType::I8;
    }
  }
  return false;
}

HostIntWeight read_int_weight(IntPacking packing, const QuantInfo& scheme, const std::string& module, int64_t n,
                              int64_t k, const TensorLookup& find) {
  if (scheme.scheme != QuantScheme::Int || (scheme.bits != 4 && scheme.bits != 8))
    throw Error(ErrorCode::Internal, "read_int_weight: not an integer scheme");
  switch (packing) {
    case IntPacking::Awq: return read_awq(scheme, module, n, k, find);
    case IntPacking::Gptq: return read_gptq(scheme, false, module, n, k, find);
    case IntPacking::GptqV2: return read_gptq(scheme, true, module, n, k, find);
    case IntPacking::CtPacked: return read_ct_packed(scheme, module, n, k, find);
    case IntPacking::CtInt8: return read_ct_int8(scheme, module, n, k, find);
    case IntPacking::None: break;
  }
  throw Error(ErrorCode::Internal, "read_int_weight: no packing");
}

}  // namespace inferdesk
