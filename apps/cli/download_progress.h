// The download command's progress: one line per file (state, bytes, speed, ETA). On a terminal the
// block of lines is redrawn in place; otherwise (a log, CI) a line is printed when a file changes
// state and every few seconds while it downloads, so logs stay short and readable.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/hub/download_types.h"

namespace inferdesk::cli {

// "[downloading] model.safetensors  0.42 MB / 0.84 MB  50%  1.20 MB/s  ETA 0.35 s"
std::string progress_line(const hub::FileProgress& p);

class DownloadProgressPrinter {
 public:
  DownloadProgressPrinter(FILE* out, bool terminal) : out_(out), terminal_(terminal) {}
  // Called from one thread (the command's), with every file's progress.
  void show(const std::vector<hub::FileProgress>& files, bool last);

 private:
  struct Seen {
    hub::FileState state = hub::FileState::Queued;
    std::string message;
    double printed_at = -1e9;
  };
  FILE* out_;
  bool terminal_;
  int drawn_lines_ = 0;
  std::map<std::string, Seen> seen_;
};

}  // namespace inferdesk::cli
