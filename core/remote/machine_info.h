// The machine a benchmark ran on, for the results store: GPU name and driver from nvidia-smi
// (when present; "none" otherwise), the CPU model from /proc/cpuinfo, total RAM from /proc/meminfo.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace inferdesk::remote {

struct MachineInfo {
  std::string gpu = "none";
  std::string driver;
  std::string cpu;
  int cpu_threads = 0;
  int64_t ram_bytes = 0;
};

MachineInfo machine_info();
nlohmann::json to_json(const MachineInfo& m);
// Parsers over the files' text (tests feed them samples).
std::string cpu_model_of(const std::string& cpuinfo, int* threads);
int64_t ram_bytes_of(const std::string& meminfo);

}  // namespace inferdesk::remote
