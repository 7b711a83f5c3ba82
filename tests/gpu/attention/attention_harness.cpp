#include "tests/gpu/attention/attention_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "core/backend/backend.h"
#include "core/util/fp8.h"
#include "cuda/kernels/attention.h"

namespace inferdesk::gputest::attn {

namespace {

constexpr int32_t kPoisonBlockId = 0x3fffffff;  // far outside any cache: reading it faults
constexpr uint16_t kPoisonBits = 0xFFFF;        // DeviceBuffer's poison as bf16 bits (NaN)

uint16_t bits_of(bf16 v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

int64_t cache_index(const AttnCase& c, int64_t block, int64_t head, int64_t slot) {
  return ((block * c.num_kv_heads + head) * c.block_size + slot) * c.head_dim;
}

// The CPU backend's attention over the same cache contents and queries; rows of padding sequences
// (and gap rows) stay zero.
void cpu_reference(AttnData& d) {
  const AttnCase& c = d.c;
  const int32_t H = c.num_heads, Hk = c.num_kv_heads, D = c.head_dim, bs = c.block_size;
  std::unique_ptr<Backend> cpu = make_cpu_backend(0);
  KvCacheShape shape;
  shape.num_layers = 1;
  shape.num_blocks = d.num_blocks;
  shape.block_size = bs;
  shape.num_kv_heads = Hk;
  shape.head_dim = D;
  if (c.kv.fp8()) {
    shape.dtype = KvCacheDtype::Fp8;
    shape.k_scales = {c.kv.k_scale};
    shape.v_scales = {c.kv.v_scale};
  }
  cpu->init_kv_cache(shape);

  // Step 1: write every cached token of every sequence through write_kv.
  StepInput fill;
  fill.block_size = bs;
  std::vector<std::pair<int32_t, int32_t>> owned;  // (block id, slot in block) per written row
  for (size_t s = 0; s < d.query_len.size(); ++s)
    for (int32_t i = 0; i < d.context_len[s]; ++i) {
      const int32_t blk = d.block_tables[d.block_table_start[s] + i / bs];
      fill.token_ids.push_back(0);
      fill.positions.push_back(i);
      fill.slot_mapping.push_back(blk * bs + i % bs);
      owned.emplace_back(blk, i % bs);
    }
  const int64_t tf = static_cast<int64_t>(owned.size());
  if (tf > 0) {
    Buffer kb = cpu->alloc(DType::F32, tf, int64_t{Hk} * D), vb = cpu->alloc(DType::F32, tf, int64_t{Hk} * D);
    float* kp = static_cast<float*>(kb.tensor().data);
    float* vp = static_cast<float*>(vb.tensor().data);
    for (int64_t t = 0; t < tf; ++t)
      for (int32_t h = 0; h < Hk; ++h) {
        const int64_t src = cache_index(c, owned[t].first, h, owned[t].second);
        std::copy_n(d.k_cache.data() + src, D, kp + (t * Hk + h) * D);
        std::copy_n(d.v_cache.data() + src, D, vp + (t * Hk + h) * D);
      }
    cpu->begin_step(fill);
    cpu->write_kv(0, kb.tensor(), vb.tensor());
  }

  // Step 2: attention of the non-padding sequences' rows (renumbered without gaps and padding).
  StepInput st;
  st.block_size = bs;
  st.block_tables = d.block_tables;
  std::vector<int32_t> cpu_row_of;  // device row of each CPU row
  for (size_t s = 0; s < d.query_len.size(); ++s) {
    if (d.context_len[s] == 0) continue;
    StepSeq q;
    q.query_start = static_cast<int32_t>(cpu_row_of.size());
    q.query_len = d.query_len[s];
    q.context_len = d.context_len[s];
    q.block_table_start = d.block_table_start[s];
    q.num_blocks = (d.context_len[s] + bs - 1) / bs;
    st.seqs.push_back(q);
    for (int32_t j = 0; j < d.query_len[s]; ++j) {
      const int32_t pos = d.context_len[s] - d.query_len[s] + j;
      cpu_row_of.push_back(d.query_start[s] + j);
      st.token_ids.push_back(0);
      st.positions.push_back(pos);
      st.slot_mapping.push_back(d.block_tables[d.block_table_start[s] + pos / bs] * bs + pos % bs);
    }
  }
  const int64_t W = int64_t{H} * D;
  d.want.assign(static_cast<size_t>(d.rows * W), 0.0f);
  const int64_t tc = static_cast<int64_t>(cpu_row_of.size());
  if (tc == 0) return;
  Buffer qb = cpu->alloc(DType::F32, tc, W), ob = cpu->alloc(DType::F32, tc, W);
  float* qp = static_cast<float*>(qb.tensor().data);
  for (int64_t r = 0; r < tc; ++r) std::copy_n(d.q.data() + cpu_row_of[r] * d.q_stride, W, qp + r * W);
  AttentionParams p;
  p.num_heads = H;
  p.num_kv_heads = Hk;
  p.head_dim = D;
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.sliding_window = c.sliding_window;
  cpu->begin_step(st);
  cpu->attention(0, qb.tensor(), p, ob.tensor());
  std::vector<float> out(static_cast<size_t>(tc * W));
  cpu->to_host(ob.tensor(), out.data());
  for (int64_t r = 0; r < tc; ++r) std::copy_n(out.data() + r * W, W, d.want.data() + cpu_row_of[r] * W);
}

std::vector<bf16> with_offset(const std::vector<float>& v, int32_t offset) {
  std::vector<bf16> h(static_cast<size_t>(offset) + v.size(), float_to_bf16(NAN));
  for (size_t i = 0; i < v.size(); ++i) h[offset + i] = float_to_bf16(v[i]);
  return h;
}

}  // namespace

std::vector<uint8_t> encode_cache(const std::vector<float>& v, int32_t offset, const cuda::KvFormat& kv, bool is_v) {
  if (!kv.fp8()) {
    const std::vector<bf16> b = with_offset(v, offset);
    std::vector<uint8_t> out(b.size() * 2);
    std::memcpy(out.data(), b.data(), out.size());
    return out;
  }
  const float inv = 1.0f / (is_v ? kv.v_scale : kv.k_scale);
  std::vector<uint8_t> out(static_cast<size_t>(offset) + v.size(), f32_to_fp8_e4m3(NAN));
  for (size_t i = 0; i < v.size(); ++i) out[offset + i] = f32_to_fp8_e4m3(v[i] * inv);
  return out;
}

AttnCase with_fp8(AttnCase c, float k_scale, float v_scale) {
  c.kv.dtype = cuda::KvDtype::Fp8E4M3;
  c.kv.k_scale = k_scale;
  c.kv.v_scale = v_scale;
  return c;
}

std::string AttnCase::describe() const {
  std::ostringstream o;
  o << "H " << num_heads << " Hk " << num_kv_heads << " D " << head_dim << " bs " << block_size << " window "
    << sliding_window << " seed " << seed;
  if (kv.fp8()) o << " e4m3 k_scale " << kv.k_scale << " v_scale " << kv.v_scale;
  if (q_pad || out_pad || q_offset || cache_offset || row_gap)
    o << " q_pad " << q_pad << " out_pad " << out_pad << " q_offset " << q_offset << " cache_offset " << cache_offset
      << " row_gap " << row_gap;
  o << " seqs (q,ctx):";
  for (const SeqSpec& s : seqs) o << " (" << s.query_len << "," << s.context_len << ")";
  return o.str();
}

AttnCase make_case(std::vector<SeqSpec> seqs, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim,
                   int32_t block_size, uint64_t seed) {
  AttnCase c;
  c.seqs = std::move(seqs);
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.head_dim = head_dim;
  c.block_size = block_size;
  c.seed = seed;
  return c;
}

AttnData make_layout(const AttnCase& c) {
  AttnData d;
  d.c = c;
  const int32_t bs = c.block_size;
  int32_t needed = 0;
  for (const SeqSpec& s : c.seqs) needed += (s.context_len + bs - 1) / bs;
  d.num_blocks = std::max(needed + 3, c.min_blocks);
  std::vector<int32_t> ids(static_cast<size_t>(d.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937_64 rng(c.seed * 7919 + 17);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  int32_t row = 0;
  for (const SeqSpec& s : c.seqs) {
    d.query_start.push_back(row);
    d.query_len.push_back(s.query_len);
    d.context_len.push_back(s.context_len);
    d.block_table_start.push_back(static_cast<int32_t>(d.block_tables.size()));
    for (int32_t b = 0; b < (s.context_len + bs - 1) / bs; ++b) d.block_tables.push_back(ids[next++]);
    d.block_tables.push_back(kPoisonBlockId);
    row += s.query_len + c.row_gap;
    d.max_query_len = std::max(d.max_query_len, s.query_len);
  }
  d.rows = row;
  d.q_stride = int64_t{c.num_heads} * c.head_dim + c.q_pad;
  d.out_stride = int64_t{c.num_heads} * c.head_dim + c.out_pad;
  return d;
}

AttnData make_data(const AttnCase& c) {
  AttnData d = make_layout(c);
  const int32_t bs = c.block_size, D = c.head_dim;
  // q: random rows of the sequences, NaN in gap rows and pad columns (a kernel must not read them).
  d.q.assign(static_cast<size_t>(d.rows * d.q_stride), NAN);
  const std::vector<float> qv = round_bf16(random_vector(d.q.size(), c.seed * 31 + 1, -c.q_range, c.q_range));
  for (size_t s = 0; s < c.seqs.size(); ++s)
    for (int32_t j = 0; j < c.seqs[s].query_len; ++j) {
      const int64_t r = d.query_start[s] + j;
      std::copy_n(qv.data() + r * d.q_stride, int64_t{c.num_heads} * D, d.q.data() + r * d.q_stride);
    }
  // Cache: random values in the slots the sequences own, NaN everywhere else.
  const size_t cache_elems = static_cast<size_t>(d.num_blocks) * c.num_kv_heads * bs * D;
  d.k_cache.assign(cache_elems, NAN);
  d.v_cache.assign(cache_elems, NAN);
  const std::vector<float> kv = round_bf16(random_vector(cache_elems, c.seed * 31 + 2));
  const std::vector<float> vv = round_bf16(random_vector(cache_elems, c.seed * 31 + 3));
  for (size_t s = 0; s < c.seqs.size(); ++s)
    for (int32_t i = 0; i < c.seqs[s].context_len; ++i) {
      const int32_t blk = d.block_tables[d.block_table_start[s] + i / bs];
      for (int32_t h = 0; h < c.num_kv_heads; ++h) {
        const int64_t o = cache_index(c, blk, h, i % bs);
        std::copy_n(kv.data() + o, D, d.k_cache.data() + o);
        std::copy_n(vv.data() + o, D, d.v_cache.data() + o);
      }
    }
  cpu_reference(d);
  return d;
}

void make_device(const AttnData& d, DeviceAttn& dev, size_t table_capacity) {
  const AttnCase& c = d.c;
  const size_t cache_elems = static_cast<size_t>(c.cache_offset) +
                             static_cast<size_t>(d.num_blocks) * c.num_kv_heads * c.block_size * c.head_dim;
  dev.q = DeviceBuffer<bf16>(static_cast<size_t>(c.q_offset + d.rows * d.q_stride));
  dev.out = DeviceBuffer<bf16>(static_cast<size_t>(d.rows * d.out_stride));
  dev.k_cache = DeviceBuffer<uint8_t>(cache_elems * c.kv.elem_bytes());
  dev.v_cache = DeviceBuffer<uint8_t>(cache_elems * c.kv.elem_bytes());
  const size_t n = std::max<size_t>(d.query_len.size(), 1);
  dev.query_start = DeviceBuffer<int32_t>(n);
  dev.query_len = DeviceBuffer<int32_t>(n);
  dev.context_len = DeviceBuffer<int32_t>(n);
  dev.block_table_start = DeviceBuffer<int32_t>(n);
  dev.block_tables = DeviceBuffer<int32_t>(std::max(table_capacity, d.block_tables.size()));
  refill_device(d, dev);
}

void upload_caches(const AttnData& d, const std::vector<float>& k, const std::vector<float>& v, DeviceAttn& dev) {
  if (k.empty()) return;
  dev.k_cache.upload(encode_cache(k, d.c.cache_offset, d.c.kv, false));
  dev.v_cache.upload(encode_cache(v, d.c.cache_offset, d.c.kv, true));
}

PendingKv make_pending(const AttnData& d) {
  const AttnCase& c = d.c;
  const int32_t bs = c.block_size, D = c.head_dim, Hk = c.num_kv_heads;
  PendingKv p;
  p.k.assign(static_cast<size_t>(d.rows) * Hk * D, 0.0f);
  p.v = p.k;
  p.positions.assign(static_cast<size_t>(d.rows), 0);
  p.slots.assign(static_cast<size_t>(d.rows), -1);
  p.k_cache = d.k_cache;
  p.v_cache = d.v_cache;
  for (size_t s = 0; s < d.query_len.size(); ++s) {
    if (d.context_len[s] == 0) continue;
    for (int32_t j = 0; j < d.query_len[s]; ++j) {
      const int32_t r = d.query_start[s] + j;
      const int32_t pos = d.context_len[s] - d.query_len[s] + j;
      const int32_t blk = d.block_tables[d.block_table_start[s] + pos / bs];
      p.positions[r] = pos;
      p.slots[r] = blk * bs + pos % bs;
      for (int32_t h = 0; h < Hk; ++h) {
        const int64_t o = cache_index(c, blk, h, pos % bs);
        const int64_t dst = (int64_t{r} * Hk + h) * D;
        std::copy_n(d.k_cache.data() + o, D, p.k.data() + dst);
        std::copy_n(d.v_cache.data() + o, D, p.v.data() + dst);
        std::fill_n(p.k_cache.data() + o, D, NAN);
        std::fill_n(p.v_cache.data() + o, D, NAN);
      }
    }
  }
  return p;
}

void refill_device(const AttnData& d, DeviceAttn& dev) {
  const AttnCase& c = d.c;
  if (!d.q.empty()) dev.q.upload(with_offset(d.q, c.q_offset));
  upload_caches(d, d.k_cache, d.v_cache, dev);
  dev.out.poison();
  dev.workspace.poison();
  dev.query_start.upload(d.query_start);
  dev.query_len.upload(d.query_len);
  dev.context_len.upload(d.context_len);
  dev.block_table_start.upload(d.block_table_start);
  dev.block_tables.upload(d.block_tables);
  cuda::PagedAttentionArgs& a = dev.args;
  a.q = dev.q.get() + c.q_offset;
  a.q_stride = d.q_stride;
  a.out = dev.out.get();
  a.out_stride = d.out_stride;
  a.k_cache = dev.k_cache.get() + int64_t{c.cache_offset} * c.kv.elem_bytes();
  a.v_cache = dev.v_cache.get() + int64_t{c.cache_offset} * c.kv.elem_bytes();
  a.kv = c.kv;
  a.query_start = dev.query_start.get();
  a.query_len = dev.query_len.get();
  a.context_len = dev.context_len.get();
  a.block_table_start = dev.block_table_start.get();
  a.block_tables = dev.block_tables.get();
  a.num_seqs = static_cast<int32_t>(d.query_len.size());
  a.max_query_len = d.max_query_len;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.block_size = c.block_size;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.sliding_window = c.sliding_window;
}

void set_splits(DeviceAttn& dev, int32_t num_splits) {
  const cuda::PagedAttentionArgs& a = dev.args;
  const size_t bytes = cuda::decode_workspace_bytes(a.num_seqs, a.num_heads, a.head_dim, num_splits);
  dev.workspace = DeviceBuffer<char>(bytes);
  dev.split_counters = DeviceBuffer<int32_t>(std::vector<int32_t>(static_cast<size_t>(a.num_seqs) * a.num_heads, 0));
  dev.args.num_splits = num_splits;
  dev.args.workspace = dev.workspace.get();
  dev.args.split_counters = dev.split_counters.get();
}

::testing::AssertionResult counters_are_zero(const DeviceAttn& dev) {
  const std::vector<int32_t> c = dev.split_counters.download();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] != 0)
      return ::testing::AssertionFailure() << "split counter " << i << " is " << c[i] << " after the launch";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult output_matches(const AttnData& d, const DeviceAttn& dev, double tol) {
  const AttnCase& c = d.c;
  const int64_t W = int64_t{c.num_heads} * c.head_dim;
  const std::vector<bf16> out = dev.out.download();
  std::vector<bool> row_owned(static_cast<size_t>(d.rows), false);
  std::ostringstream bad;
  for (size_t s = 0; s < d.query_len.size(); ++s) {
    const int32_t q0 = d.query_start[s], ql = d.query_len[s];
    std::vector<float> got, want;
    for (int32_t r = q0; r < q0 + ql; ++r) {
      row_owned[r] = true;
      for (int64_t i = 0; i < W; ++i) {
        got.push_back(bf16_to_float(out[r * d.out_stride + i]));
        want.push_back(d.want[r * W + i]);
      }
    }
    if (ql == 0) continue;
    if (d.context_len[s] == 0) {
      const auto nz = std::find_if(got.begin(), got.end(), [](float v) { return v != 0.0f; });
      if (nz != got.end())
        bad << "\n  padding seq " << s << ": element " << (nz - got.begin()) << " is " << *nz << ", not 0";
      continue;
    }
    const double err = normalised_error(got, want);
    if (!(err < tol)) {
      bad << "\n  seq " << s << " (query_len " << ql << ", context_len " << d.context_len[s] << "): normalised error "
          << err;
      for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i)
        if (!std::isfinite(got[i]) || std::fabs(got[i] - want[i]) > 0.05 + 0.05 * std::fabs(want[i])) {
          bad << "; first bad: row +" << i / W << " head " << (i % W) / c.head_dim << " dim " << i % c.head_dim
              << " got " << got[i] << " want " << want[i];
          break;
        }
    }
  }
  int64_t damaged = 0;
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t i = row_owned[r] ? W : 0; i < d.out_stride; ++i)
      damaged += bits_of(out[r * d.out_stride + i]) != kPoisonBits;
  if (damaged) bad << "\n  " << damaged << " elements outside the sequences' rows/heads were written";
  if (bad.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.describe() << bad.str();
}

}  // namespace inferdesk::gputest::attn

namespace inferdesk::gputest::attn {

std::string param_name(std::initializer_list<std::pair<const char*, int>> parts) {
  std::ostringstream o;
  for (const auto& [prefix, value] : parts) o << (o.tellp() > 0 ? "_" : "") << prefix << value;
  return o.str();
}

void run_and_check(const AttnCase& c, Kernel kernel, int32_t num_splits, int32_t min_keys_per_split) {
  SCOPED_TRACE(c.describe() + (kernel == Kernel::Decode ? " decode, splits " + std::to_string(num_splits) +
                                                              ", min keys " + std::to_string(min_keys_per_split)
                                                        : std::string(" prefill")));
  const AttnData d = make_data(c);
  // Decode: every way of loading K/V, and Auto (which picks one by grid size and serves a
  // few-block grid 2 heads per block: small_grid_heads_per_block) with either load for grids of
  // many blocks (large_grid_load), each on a freshly poisoned output. Pairs (decode_load,
  // large_grid_load).
  using Load = cuda::DecodeLoad;
  std::vector<std::pair<Load, Load>> loads = {{Load::Auto, Load::Pipelined}};
  if (kernel == Kernel::Decode)
    loads = {{Load::Registers, Load::Pipelined},
             {Load::Pipelined, Load::Pipelined},
             {Load::Mma, Load::Pipelined},
             {Load::Auto, Load::Pipelined},
             {Load::Auto, Load::Mma}};
  // A kv group is also served in chunks of 4, 2 and 1 query heads per block where it has more
  // (each chunk's block reads the group's K/V again).
  const int32_t group = c.num_heads / c.num_kv_heads;
  std::vector<int32_t> head_caps = {8};
  if (kernel == Kernel::Decode)
    for (int32_t h : {4, 2, 1})
      if (group > h) head_caps.push_back(h);
  for (int32_t heads : head_caps)
    for (const auto& [load, large_load] : loads) {
      SCOPED_TRACE(std::string("K/V ") + load_name(load) +
                   (load == Load::Auto ? std::string(" (many blocks: ") + load_name(large_load) + ")" : "") +
                   ", at most " + std::to_string(heads) + " heads per block");
      DeviceAttn dev;
      make_device(d, dev);
      set_splits(dev, num_splits);
      dev.args.min_keys_per_split = min_keys_per_split;
      dev.args.decode_load = load;
      dev.args.large_grid_load = large_load;
      dev.args.max_heads_per_block = heads;
      if (kernel == Kernel::Decode)
        cuda::paged_attention_decode(dev.args, test_launch());
      else
        cuda::paged_attention_prefill(dev.args, test_launch());
      const cudaError_t sync = cudaDeviceSynchronize();
      ASSERT_EQ(sync, cudaSuccess) << cudaGetErrorString(sync);
      const cudaError_t last = cudaGetLastError();
      ASSERT_EQ(last, cudaSuccess) << cudaGetErrorString(last);
      EXPECT_TRUE(output_matches(d, dev, kTol));
      if (kernel == Kernel::Decode) {
        EXPECT_TRUE(counters_are_zero(dev));
      }
    }
}

}  // namespace inferdesk::gputest::attn
