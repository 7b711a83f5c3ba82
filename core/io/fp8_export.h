// Saving a BF16/F16/F32 model folder quantized to FP8 as a compressed-tensors folder, the layout
// llm-compressor's FP8_DYNAMIC scheme writes and vLLM loads: every projection (is_projection_module)
// as `<module>.weight` F8_E4M3 [N, K] + `<module>.weight_scale` [N, 1] in the model's dtype; the
// other tensors as they are; config.json with the quantization_config (per-channel weights,
// dynamic per-token activations, the Linear modules left unquantized in "ignore"). InferDesk loads
// it back without quantizing again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "core/io/model_folder.h"

namespace inferdesk {

struct Fp8ExportOptions {
  // Largest shard (safetensors file); bigger models get model-0000i-of-0000n.safetensors and an
  // index, as save_pretrained writes them.
  int64_t max_shard_bytes = int64_t{5} << 30;
  // (bytes written, total); return false to cancel (the partial folder is removed, Cancelled thrown).
  std::function<bool(int64_t, int64_t)> progress;
};

struct Fp8ExportResult {
  int64_t bytes = 0;      // weights written
  int32_t quantized = 0;  // projections quantized
  int32_t shards = 0;
};

// Writes `out` (which must not exist yet) from `src`; nothing is left under `out` on failure: the
// folder is built beside it and renamed into place at the end. Copies the folder's other small
// files (tokenizer, generation_config.json, chat templates). Throws Error (InvalidArgument for a
// folder already quantized or an existing `out`, Io for write failures, Cancelled).
Fp8ExportResult export_fp8_compressed_tensors(const ModelFolder& src, const std::filesystem::path& out,
                                              const Fp8ExportOptions& options = {});

}  // namespace inferdesk
