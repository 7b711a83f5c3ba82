// Scheduler: continuous batching over a paged KV cache (after vLLM v1's unified scheduler).
//
// Each schedule() is one engine step within a token budget:
//  1. RUNNING sequences, in admission order, each get their remaining prefill chunk or one decode
//     token. When the KV cache has no block for one, the most recently admitted running sequence
//     is preempted (blocks freed, num_computed_tokens = 0, back at the FRONT of the waiting
//     queue) and the allocation retried; if that victim is the sequence itself, the pass stops.
//  2. If nothing was preempted, WAITING sequences are admitted first-come-first-served while the
//     budget, max_num_seqs and the KV cache allow, starting after their cached prefix. With
//     chunked prefill a long prompt is split across steps; without it a prompt runs whole or waits.
// Sequences that can never run (more blocks than the whole cache, or more tokens than one step
// when chunked prefill is off) are finished with FinishReason::Error and listed in the output.
//
// Protocol: out = schedule(); the engine runs the step; update(out, sampled) exactly once; then
// the next schedule(). cancel()/finish() may be called at any time, also between schedule() and
// update() (the row is then ignored by update(); the engine may still write that row's KV, which
// is harmless: such a row writes only uncached slots past its sequence's computed tokens, and a
// block freed meanwhile goes only to a later step, which runs after it on the device and writes
// its slots before reading them).
//
// Overlap ("async scheduling", as vLLM's async scheduler / SGLang's overlap scheduler): while a
// pure-decode step runs on the device, the engine may schedule the next one for the same
// sequences, assuming each gets its token, and launch it before the first is updated:
//   prev = schedule(); launch(prev);
//   ahead = schedule_ahead(prev); launch(ahead);  // its tokens are kPendingToken: the device
//                                                  // feeds prev's sampled tokens into it
//   update(prev, sampled_prev); update(ahead, sampled_ahead); next schedule() ...
// or, pipelined: after update(prev), `ahead` is the only pending step, so schedule_ahead(ahead)
// may follow before update(ahead), and so on. At most two steps are pending at once; update()
// takes them oldest first. schedule_ahead() declines (nullopt) whenever anything besides "one
// more token each" has to happen (admissions, preemption, a sequence reaching max_tokens), and
// the engine then drains the pending steps and falls back to schedule(). If a launched step
// fails, abort_steps() forgets every pending step so that scheduling can resume.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/kv/kv_cache_manager.h"
#include "core/sched/scheduler_output.h"
#include "core/sched/sequence.h"

namespace inferdesk {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;             // running sequences at most
  int32_t max_num_batched_tokens = 2048;  // tokens per step at most
  bool enable_chunked_prefill = true;
  int32_t long_prefill_token_threshold = 0;  // >0: at most this many prefill tokens per sequence
                                             // per step (only with chunked prefill)
};

struct SchedulerStats {
  uint64_t steps = 0;
  uint64_t steps_ahead = 0;  // of `steps`, those launched by schedule_ahead (overlapped)
  uint64_t preemptions = 0;
  uint64_t scheduled_tokens = 0;
};

class Scheduler {
 public:
  // Throws Error(InvalidArgument) for max_num_seqs < 1, max_num_batched_tokens < 1 or a negative
  // long_prefill_token_threshold. `kv` must outlive the scheduler.
  Scheduler(SchedulerConfig config, KvCacheManager& kv);

  // Queues a sequence (its status, counters and arrival are reset). Throws Error(InvalidArgument)
  // if the id is in use. A prompt that can never run is finished with FinishReason::Error at once
  // and reported in the next schedule()'s `finished`.
  void add(Sequence seq);
  // finish(id, Cancelled); false if the id is unknown.
  bool cancel(SeqId id);
  // Removes the sequence wherever it is and frees its blocks. Returns its final record (status
  // Finished, the reason set), or nullopt if the id is unknown.
  std::optional<Sequence> finish(SeqId id, FinishReason reason);

  // Throws Error(Internal) while any step is pending (not yet update()d nor aborted). A step
  // with rows becomes pending.
  SchedulerOutput schedule();
  // Schedules the decode step after `prev` before prev's results are known: one row per prev row,
  // in the same order, at position prev.start + 1 with token kPendingToken (the device takes it
  // from prev's sampling; tokens_from_previous is set). The returned step is pending too.
  // Returns nullopt when that is not the right next step: prev has no rows, preempted or finished
  // sequences; sequences are waiting (schedule() should admit them); a row is not a 1-token
  // sampling row; a row's sequence was finished or cancelled meanwhile; prev's token is a
  // sequence's last one (max_tokens); or the KV cache lacks a block (no preemption here). Nothing
  // observable changes then, except that the block tables of some rows may have grown already:
  // those slots are needed by the next step anyway and are freed with the sequence.
  // Throws Error(Internal) unless `prev` (having rows) is the only pending step.
  std::optional<SchedulerOutput> schedule_ahead(const SchedulerOutput& prev);
  // Applies a step's results. `sampled` holds one token per row with sample == true, in row
  // order. Advances num_computed_tokens, appends the sampled tokens, publishes newly full blocks
  // to the prefix cache, and finishes the sequences whose token ends them (finish_policy.h:
  // reason Stop for a stop token, else Length at max_tokens), returning them.
  // Rows whose sequence was finished or cancelled since scheduling are skipped.
  // Throws Error(InvalidArgument) if `sampled` does not match, Error(Internal) if `out` is not
  // the oldest pending step.
  std::vector<FinishedSeq> update(const SchedulerOutput& out, std::span<const TokenId> sampled);
  // Forgets every pending step without applying anything; for the engine when a launched step
  // failed. The sequences stay as they are (running, blocks kept, possibly grown by
  // schedule_ahead()); their num_computed_tokens was not advanced by the forgotten steps, so the
  // next schedule() re-runs those positions and recomputes their KV.
  void abort_steps();
  // True while a step is scheduled but neither update()d nor aborted.
  bool has_pending_step() const { return !pending_steps_.empty(); }

  const Sequence* find(SeqId id) const;
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
  const std::deque<SeqId>& waiting() const { return waiting_; }
  const std::vector<SeqId>& running() const { return running_; }
  const SchedulerConfig& config() const { return config_; }
  const SchedulerStats& stats() const { return stats_; }

 private:
  void schedule_running(SchedulerOutput& out, int32_t& budget);
  void schedule_waiting(SchedulerOutput& out, int32_t& budget);
  int32_t chunk_size(int32_t remaining, int32_t budget) const;
  std::optional<std::string> never_fits(const Sequence& s, int32_t uncached_tokens) const;
  void preempt_last(SchedulerOutput& out);
  void fail(SeqId id, std::string message, std::vector<FinishedSeq>& into);
  void add_row(const Sequence& s, int32_t count, SchedulerOutput& out) const;
  // A step handed out: pending until its update() (when it has rows), and counted in the stats.
  void record_step(const SchedulerOutput& out);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::unordered_map<SeqId, Sequence> seqs_;
  std::deque<SeqId> waiting_;
  std::vector<SeqId> running_;               // admission order
  std::vector<FinishedSeq> pending_failed_;  // failed in add(), reported by the next schedule()
  uint64_t next_arrival_ = 0;
  uint64_t step_ = 0;
  // Steps scheduled but not yet update()d, oldest first: at most one from schedule() (or a
  // previous schedule_ahead()) plus one from schedule_ahead().
  std::deque<uint64_t> pending_steps_;
  SchedulerStats stats_;
};

}  // namespace inferdesk
