// The in-process target: InferDesk's Engine driven directly with the same request list, arrival
// process, concurrency cap, cancel flag and callbacks as run_load, timed the same way (a "chunk"
// is one engine event carrying tokens, the analogue of an SSE chunk), with no HTTP in between:
// its figures beside the server's show the protocol's overhead. Takes /v1/completions bodies
// (prompt as token ids, or text with a tokenizer); chat bodies and make_body turns fail with the
// reason (no chat template is applied here).
#pragma once

#include "core/bench/benchmark.h"

namespace inferdesk {
class Engine;
class Tokenizer;
}  // namespace inferdesk

namespace inferdesk::bench {

// tok: encodes text prompts and decodes replies (RequestResult::text); may be null for
// token-id prompts (text stays empty).
LoadResult run_engine_load(Engine& engine, const Tokenizer* tok, const LoadOptions& o,
                           const std::vector<BenchRequest>& requests);
// run_engine_load as a run_benchmark driver; engine and tok must outlive it.
Driver engine_driver(Engine& engine, const Tokenizer* tok);

}  // namespace inferdesk::bench
