// Result files of other tools as dashboard runs: core/bench's load_result_file reads vLLM's
// --save-result files, GenAI-Perf's profile export, guidellm's benchmarks.json and our own
// (`inferdesk-cli bench-serve`); a file's results become one run with a point each. Per-request
// records come from our raw timestamps or vLLM's per-request lists (start_times, ttfts, itls,
// latencies, output_lens), so plots and the other tools' metrics work for them too. The
// dashboard's own JSON export (import_json) is read as well. Untrusted input: anything
// malformed is Error(Format / NotFound / Io) with the reason.
#pragma once

#include <QString>

#include "gui/dashboard/dashboard_run.h"

namespace inferdesk::gui {

DashboardRun run_from_result_file(const QString& path);

}  // namespace inferdesk::gui
