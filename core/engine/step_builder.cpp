#include "core/engine/step_builder.h"

#include <limits>

#include "core/util/error.h"

namespace inferdesk {

StepInput build_step_input(const SchedulerOutput& out) {
  StepInput in;
  in.block_size = out.block_size;
  in.token_ids = out.token_ids();
  in.positions = out.positions();
  const std::vector<int64_t> slots = out.slot_mapping();
  in.slot_mapping.reserve(slots.size());
  for (int64_t s : slots) {
    if (s < 0 || s > std::numeric_limits<int32_t>::max())
      throw Error(ErrorCode::Internal, "KV slot index out of range");
    in.slot_mapping.push_back(static_cast<int32_t>(s));
  }
  int32_t row = 0;
  for (const ScheduledSeq& r : out.rows) {
    StepSeq s;
    s.query_start = row;
    s.query_len = r.count;
    s.context_len = r.start + r.count;
    s.block_table_start = static_cast<int32_t>(in.block_tables.size());
    s.num_blocks = static_cast<int32_t>(r.block_table.size());
    in.block_tables.insert(in.block_tables.end(), r.block_table.begin(), r.block_table.end());
    in.seqs.push_back(s);
    row += r.count;
  }
  in.logit_rows = out.sample_indices();
  return in;
}

}  // namespace inferdesk
