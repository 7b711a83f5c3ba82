#include "cuda/backend/step_upload.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

namespace inferdesk::cuda {

StepUploader::StepUploader(CudaContext& ctx)
    : ctx_(ctx),
      stream_(UniqueStream::create()),
      uploaded_(UniqueEvent::create()),
      forward_done_(UniqueEvent::create()) {}

void StepUploader::ensure_capacity(int32_t tokens, int32_t seqs, int32_t blocks) {
  if (tokens <= sb_.max_tokens && seqs <= sb_.max_seqs && blocks <= sb_.max_blocks) return;
  StepBuffers n;
  n.max_tokens = std::max({tokens, sb_.max_tokens, 256});
  n.max_seqs = std::max({seqs, sb_.max_seqs, 256});
  n.max_blocks = std::max({blocks * 2, sb_.max_blocks, 4096});
  DeviceBuffer d = ctx_.memory.alloc((n.head_ints() + n.max_blocks) * 4, MemKind::Other, "step metadata");
  int32_t* p = d.as<int32_t>();
  for (int32_t** a : {&n.token_ids, &n.positions, &n.slots, &n.logit_rows}) {
    *a = p;
    p += n.max_tokens;
  }
  for (int32_t** a : {&n.query_start, &n.query_len, &n.context_len, &n.block_table_start}) {
    *a = p;
    p += n.max_seqs;
  }
  n.block_tables = p;
  if (device_.get()) cudaStreamSynchronize(ctx_.stream);
  device_ = std::move(d);
  sb_ = n;
  ctx_.graphs.invalidate();
}

// The host copy in the device layout: per-token arrays, per-sequence arrays, then the tables.
int32_t* StepUploader::pack(const StepInput& step, int32_t rows, int32_t num_seqs) {
  const int32_t n = step.num_tokens();
  const auto S = static_cast<int32_t>(step.seqs.size());
  auto* h = static_cast<int32_t*>(host_.get((sb_.head_ints() + sb_.max_blocks) * 4));
  int32_t* tok = h;
  int32_t* pos = tok + sb_.max_tokens;
  int32_t* slot = pos + sb_.max_tokens;
  int32_t* lrow = slot + sb_.max_tokens;
  int32_t* qs = lrow + sb_.max_tokens;
  int32_t* ql = qs + sb_.max_seqs;
  int32_t* cl = ql + sb_.max_seqs;
  int32_t* bts = cl + sb_.max_seqs;
  std::copy(step.token_ids.begin(), step.token_ids.end(), tok);
  std::copy(step.positions.begin(), step.positions.end(), pos);
  std::copy(step.slot_mapping.begin(), step.slot_mapping.end(), slot);
  std::copy(step.logit_rows.begin(), step.logit_rows.end(), lrow);
  for (int32_t i = 0; i < S; ++i) {
    qs[i] = step.seqs[i].query_start;
    ql[i] = step.seqs[i].query_len;
    cl[i] = step.seqs[i].context_len;
    bts[i] = step.seqs[i].block_table_start;
  }
  for (int32_t i = n; i < rows; ++i) {
    tok[i] = 0;
    pos[i] = 0;
    slot[i] = -1;
    lrow[i] = i;
  }
  for (int32_t i = S; i < num_seqs; ++i) {
    qs[i] = i;
    ql[i] = 1;
    cl[i] = 0;
    bts[i] = 0;
  }
  std::copy(step.block_tables.begin(), step.block_tables.end(), h + sb_.head_ints());
  return h;
}

void StepUploader::upload(const StepInput& step, int32_t rows, int32_t num_seqs) {
  const auto nblocks = static_cast<int32_t>(step.block_tables.size());
  ensure_capacity(rows, num_seqs, nblocks);
  // The previous upload may still read host_ (a step that sampled nothing did not synchronise).
  if (upload_pending_) {
    check_cuda(cudaEventSynchronize(uploaded_.get()), "waiting for the previous step upload");
    upload_pending_ = false;
  }
  const int32_t* h = pack(step, rows, num_seqs);
  // Behind the previous forward on the upload stream, unless that step failed before its forward
  // was enqueued: its kernels may still read the buffers, so the compute stream's order instead.
  const cudaStream_t us = step_open_ ? ctx_.stream : stream_.get();
  if (us != ctx_.stream && forward_recorded_)
    check_cuda(cudaStreamWaitEvent(us, forward_done_.get(), 0), "ordering the step upload");
  check_cuda(cudaMemcpyAsync(sb_.token_ids, h, (sb_.head_ints() + static_cast<size_t>(nblocks)) * 4,
                             cudaMemcpyHostToDevice, us),
             "uploading the step");
  check_cuda(cudaEventRecord(uploaded_.get(), us), "recording the step upload");
  if (us != ctx_.stream)
    check_cuda(cudaStreamWaitEvent(ctx_.stream, uploaded_.get(), 0), "waiting for the step upload");
  upload_pending_ = true;
  step_open_ = true;
}

void StepUploader::take_tokens(const int32_t* device_ids, int32_t n) {
  check_cuda(cudaMemcpyAsync(sb_.token_ids, device_ids, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToDevice,
                             ctx_.stream),
             "chaining the sampled tokens");
}

void StepUploader::forward_enqueued() {
  check_cuda(cudaEventRecord(forward_done_.get(), ctx_.stream), "recording the forward");
  forward_recorded_ = true;
  step_open_ = false;
}

}  // namespace inferdesk::cuda
