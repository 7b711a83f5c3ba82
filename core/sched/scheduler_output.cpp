#include "core/sched/scheduler_output.h"

#include "core/kv/kv_cache_manager.h"

namespace inferdesk {

int32_t SchedulerOutput::num_samples() const {
  int32_t n = 0;
  for (const ScheduledSeq& r : rows) n += r.sample ? 1 : 0;
  return n;
}

std::vector<TokenId> SchedulerOutput::token_ids() const {
  std::vector<TokenId> out;
  out.reserve(static_cast<size_t>(num_batched_tokens));
  // kPendingToken entries are copied as they are: only the device knows those tokens.
  for (const ScheduledSeq& r : rows) out.insert(out.end(), r.tokens.begin(), r.tokens.end());
  return out;
}

std::vector<int32_t> SchedulerOutput::positions() const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(num_batched_tokens));
  for (const ScheduledSeq& r : rows) {
    for (int32_t p = r.start; p < r.start + r.count; ++p) out.push_back(p);
  }
  return out;
}

std::vector<int64_t> SchedulerOutput::slot_mapping() const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_batched_tokens));
  for (const ScheduledSeq& r : rows) {
    for (int32_t p = r.start; p < r.start + r.count; ++p) {
      out.push_back(slot_of(r.block_table, block_size, p));
    }
  }
  return out;
}

std::vector<int32_t> SchedulerOutput::sample_indices() const {
  std::vector<int32_t> out;
  int32_t offset = 0;
  for (const ScheduledSeq& r : rows) {
    offset += r.count;
    if (r.sample) out.push_back(offset - 1);
  }
  return out;
}

}  // namespace inferdesk
