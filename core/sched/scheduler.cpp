#include "core/sched/scheduler.h"

#include <algorithm>
#include <string>

#include "core/sched/finish_policy.h"
#include "core/util/error.h"

namespace inferdesk {

namespace {

void check_config(const SchedulerConfig& c) {
  auto bad = [](const std::string& what) { throw Error(ErrorCode::InvalidArgument, "scheduler config: " + what); };
  if (c.max_num_seqs < 1) bad("max_num_seqs must be >= 1, got " + std::to_string(c.max_num_seqs));
  if (c.max_num_batched_tokens < 1) {
    bad("max_num_batched_tokens must be >= 1, got " + std::to_string(c.max_num_batched_tokens));
  }
  if (c.long_prefill_token_threshold < 0) {
    bad("long_prefill_token_threshold must be >= 0, got " + std::to_string(c.long_prefill_token_threshold));
  }
}

}  // namespace

Scheduler::Scheduler(SchedulerConfig config, KvCacheManager& kv) : config_(config), kv_(kv) { check_config(config_); }

void Scheduler::add(Sequence seq) {
  if (seqs_.contains(seq.id)) {
    throw Error(ErrorCode::InvalidArgument, "scheduler: sequence id " + std::to_string(seq.id) + " is already in use");
  }
  seq.status = SeqStatus::Waiting;
  seq.finish_reason = FinishReason::None;
  seq.num_computed_tokens = 0;
  seq.num_preemptions = 0;
  seq.arrival = next_arrival_++;
  const SeqId id = seq.id;
  const int32_t n = seq.num_tokens();
  auto it = seqs_.emplace(id, std::move(seq)).first;
  waiting_.push_back(id);
  if (auto why = never_fits(it->second, n)) fail(id, std::move(*why), pending_failed_);
}

bool Scheduler::cancel(SeqId id) { return finish(id, FinishReason::Cancelled).has_value(); }

std::optional<Sequence> Scheduler::finish(SeqId id, FinishReason reason) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return std::nullopt;
  if (auto w = std::ranges::find(waiting_, id); w != waiting_.end()) waiting_.erase(w);
  if (auto r = std::ranges::find(running_, id); r != running_.end()) running_.erase(r);
  kv_.free(id);
  Sequence s = std::move(it->second);
  seqs_.erase(it);
  s.status = SeqStatus::Finished;
  s.finish_reason = reason;
  return s;
}

const Sequence* Scheduler::find(SeqId id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : &it->second;
}

std::optional<std::string> Scheduler::never_fits(const Sequence& s, int32_t uncached) const {
  const int64_t need = kv_.blocks_for(s.num_tokens());
  if (need > kv_.num_blocks()) {
    std::string what = s.num_output_tokens() == 0
                           ? "prompt of " + std::to_string(s.num_tokens()) + " tokens"
                           : "sequence of " + std::to_string(s.num_tokens()) + " tokens (prompt + generated)";
    return what + " needs " + std::to_string(need) + " blocks but the cache has " + std::to_string(kv_.num_blocks()) +
           " (block size " + std::to_string(kv_.block_size()) + ")";
  }
  if (!config_.enable_chunked_prefill && uncached > config_.max_num_batched_tokens) {
    return std::to_string(uncached) + " tokens to prefill exceed max_num_batched_tokens " +
           std::to_string(config_.max_num_batched_tokens) + " and chunked prefill is off";
  }
  return std::nullopt;
}

void Scheduler::fail(SeqId id, std::string message, std::vector<FinishedSeq>& into) {
  finish(id, FinishReason::Error);
  into.push_back(FinishedSeq{id, FinishReason::Error, std::move(message)});
}

int32_t Scheduler::chunk_size(int32_t remaining, int32_t budget) const {
  if (remaining <= 0 || budget <= 0) return 0;
  if (!config_.enable_chunked_prefill) return remaining <= budget ? remaining : 0;
  int32_t n = remaining;
  if (config_.long_prefill_token_threshold > 0) {
    n = std::min(n, config_.long_prefill_token_threshold);
  }
  return std::min(n, budget);
}

void Scheduler::add_row(const Sequence& s, int32_t count, SchedulerOutput& out) const {
  ScheduledSeq row;
  row.id = s.id;
  row.start = s.num_computed_tokens;
  row.count = count;
  auto first = s.tokens.begin() + row.start;
  row.tokens.assign(first, first + count);
  row.sample = row.start + count == s.num_tokens();
  std::span<const BlockId> table = kv_.block_table(s.id);
  row.block_table.assign(table.begin(), table.end());
  out.num_batched_tokens += count;
  out.rows.push_back(std::move(row));
}

void Scheduler::preempt_last(SchedulerOutput& out) {
  const SeqId victim = running_.back();
  running_.pop_back();
  kv_.free(victim);
  Sequence& v = seqs_.at(victim);
  v.num_computed_tokens = 0;
  v.status = SeqStatus::Preempted;
  ++v.num_preemptions;
  waiting_.push_front(victim);
  out.preempted.push_back(victim);
  ++stats_.preemptions;
}

void Scheduler::schedule_running(SchedulerOutput& out, int32_t& budget) {
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const SeqId id = running_[i];
    Sequence& s = seqs_.at(id);
    if (auto why = never_fits(s, 0)) {  // grew past the whole cache while generating
      fail(id, std::move(*why), out.finished);
      continue;  // running_[i] is now the next sequence
    }
    const int32_t n = chunk_size(s.num_tokens() - s.num_computed_tokens, budget);
    if (n == 0) {
      ++i;
      continue;
    }
    bool allocated = kv_.allocate_slots(id, s.num_computed_tokens + n);
    while (!allocated) {
      const bool self = running_.back() == id;
      preempt_last(out);
      if (self) break;
      allocated = kv_.allocate_slots(id, s.num_computed_tokens + n);
    }
    if (!allocated) break;  // it was the last running sequence and is now waiting again
    add_row(s, n, out);
    budget -= n;
    ++i;
  }
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int32_t& budget) {
  while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    const SeqId id = waiting_.front();
    Sequence& s = seqs_.at(id);
    PrefixHit hit = kv_.find_cached_prefix(s.tokens);
    const int32_t uncached = s.num_tokens() - hit.num_tokens;
    if (auto why = never_fits(s, uncached)) {
      fail(id, std::move(*why), out.finished);
      continue;
    }
    const int32_t n = chunk_size(uncached, budget);
    if (n == 0) break;  // without chunked prefill the whole prompt must fit this step's budget
    if (!kv_.allocate_slots(id, hit.num_tokens + n, &hit)) break;  // FCFS: nobody overtakes
    waiting_.pop_front();
    running_.push_back(id);
    s.status = SeqStatus::Running;
    s.num_computed_tokens = hit.num_tokens;
    add_row(s, n, out);
    budget -= n;
  }
}

SchedulerOutput Scheduler::schedule() {
  if (!pending_steps_.empty()) {
    throw Error(ErrorCode::Internal,
                "scheduler: schedule() called before update() of step " + std::to_string(pending_steps_.front()));
  }
  SchedulerOutput out;
  out.step = ++step_;
  out.block_size = kv_.block_size();
  out.finished = std::move(pending_failed_);
  pending_failed_.clear();
  int32_t budget = config_.max_num_batched_tokens;
  schedule_running(out, budget);
  if (out.preempted.empty()) schedule_waiting(out, budget);
  if (out.rows.empty() && has_unfinished()) {
    out.stalled = true;
    out.stall_reason = "no sequence could be scheduled: " + std::to_string(waiting_.size()) + " waiting, " +
                       std::to_string(running_.size()) + " running, " + std::to_string(kv_.num_free_blocks()) + " of " +
                       std::to_string(kv_.num_blocks()) + " KV blocks free";
  }
  record_step(out);
  return out;
}

void Scheduler::record_step(const SchedulerOutput& out) {
  if (!out.rows.empty()) pending_steps_.push_back(out.step);  // an empty step needs no update()
  ++stats_.steps;
  stats_.scheduled_tokens += static_cast<uint64_t>(out.num_batched_tokens);
}

std::optional<SchedulerOutput> Scheduler::schedule_ahead(const SchedulerOutput& prev) {
  // An empty step is never pending (as in update()); there is nothing to follow up on either.
  if (prev.rows.empty()) return std::nullopt;
  if (pending_steps_.size() != 1 || pending_steps_.front() != prev.step) {
    throw Error(ErrorCode::Internal, "scheduler: schedule_ahead() for step " + std::to_string(prev.step) +
                                         " which is not the only pending step");
  }
  // Anything other than "one more token for each of the same sequences" needs the full
  // schedule(), which can only run once prev's results are in.
  // (pending_failed_: a request that can never run gets its error from the next schedule(), not
  // after however many steps a chain would run.)
  if (!waiting_.empty() || !pending_failed_.empty() || !prev.preempted.empty() || !prev.finished.empty())
    return std::nullopt;
  for (const ScheduledSeq& row : prev.rows) {
    if (row.count != 1 || !row.sample) return std::nullopt;
    auto it = seqs_.find(row.id);
    if (it == seqs_.end()) return std::nullopt;
    const Sequence& s = it->second;
    if (s.status != SeqStatus::Running || s.num_computed_tokens != row.start) return std::nullopt;
    // prev's token is its last one: update(prev) finishes it, a further token is not wanted.
    if (reaches_length(s, 1)) return std::nullopt;
  }
  // Allocation last, so that declining for the reasons above leaves the KV cache untouched. A
  // failure here keeps the blocks already taken for earlier rows: the next schedule() needs them
  // for the same positions, and they are freed with their sequences.
  for (const ScheduledSeq& row : prev.rows) {
    if (!kv_.allocate_slots(row.id, row.start + 2)) return std::nullopt;
  }

  SchedulerOutput out;
  out.step = ++step_;
  out.block_size = kv_.block_size();
  out.tokens_from_previous = true;
  out.rows.reserve(prev.rows.size());
  for (const ScheduledSeq& p : prev.rows) {
    ScheduledSeq row;
    row.id = p.id;
    row.start = p.start + 1;
    row.count = 1;
    row.sample = true;
    row.tokens = {kPendingToken};
    std::span<const BlockId> table = kv_.block_table(p.id);
    row.block_table.assign(table.begin(), table.end());
    out.rows.push_back(std::move(row));
  }
  out.num_batched_tokens = static_cast<int32_t>(out.rows.size());
  record_step(out);
  ++stats_.steps_ahead;
  return out;
}

void Scheduler::abort_steps() { pending_steps_.clear(); }

std::vector<FinishedSeq> Scheduler::update(const SchedulerOutput& out, std::span<const TokenId> sampled) {
  std::vector<FinishedSeq> finished;
  if (out.rows.empty()) return finished;
  // Steps complete in launch order; an ahead step's rows start where the previous step's end,
  // so applying them out of order would skip every row.
  if (pending_steps_.empty() || out.step != pending_steps_.front()) {
    throw Error(ErrorCode::Internal,
                "scheduler: update() for step " + std::to_string(out.step) + " which is not the oldest pending step");
  }
  if (static_cast<int32_t>(sampled.size()) != out.num_samples()) {
    throw Error(ErrorCode::InvalidArgument, "scheduler: update() got " + std::to_string(sampled.size()) +
                                                " sampled tokens for " + std::to_string(out.num_samples()) +
                                                " sampling rows");
  }
  pending_steps_.pop_front();
  size_t k = 0;
  for (const ScheduledSeq& row : out.rows) {
    const TokenId token = row.sample ? sampled[k++] : -1;
    auto it = seqs_.find(row.id);
    // Cancelled or finished since schedule() / schedule_ahead(): nothing to apply.
    if (it == seqs_.end() || it->second.status != SeqStatus::Running || it->second.num_computed_tokens != row.start) {
      continue;
    }
    Sequence& s = it->second;
    if (row.sample && token < 0) {
      throw Error(ErrorCode::InvalidArgument, "scheduler: negative sampled token " + std::to_string(token) +
                                                  " for sequence " + std::to_string(s.id));
    }
    s.num_computed_tokens += row.count;
    if (row.sample) s.tokens.push_back(token);
    kv_.cache_full_blocks(s.id, s.tokens, s.num_computed_tokens);
    const FinishReason why = row.sample ? finish_reason(s, token) : FinishReason::None;
    if (why != FinishReason::None) {
      finish(row.id, why);
      finished.push_back(FinishedSeq{row.id, why, {}});
    }
  }
  return finished;
}

}  // namespace inferdesk
