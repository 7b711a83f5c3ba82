#include "core/remote/machine_info.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace inferdesk::remote {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// nvidia-smi's first GPU as "name, driver" ("" when the tool is missing or fails).
std::string nvidia_smi() {
  FILE* p = ::popen("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null", "r");
  if (!p) return "";
  char buf[512];
  std::string line;
  if (std::fgets(buf, sizeof buf, p)) line = buf;
  const int rc = ::pclose(p);
  return rc == 0 ? trim(line) : "";
}

}  // namespace

std::string cpu_model_of(const std::string& cpuinfo, int* threads) {
  std::istringstream in(cpuinfo);
  std::string line, model;
  int n = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    if (key == "processor") ++n;
    if (model.empty() && (key == "model name" || key == "Model" || key == "cpu model"))
      model = trim(line.substr(colon + 1));
  }
  if (threads) *threads = n;
  return model.empty() ? "unknown CPU" : model;
}

int64_t ram_bytes_of(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string key;
  int64_t kb = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

MachineInfo machine_info() {
  MachineInfo m;
  const std::string gpu = nvidia_smi();
  if (const auto comma = gpu.rfind(','); !gpu.empty() && comma != std::string::npos) {
    m.gpu = trim(gpu.substr(0, comma));
    m.driver = trim(gpu.substr(comma + 1));
  }
  m.cpu = cpu_model_of(read_file("/proc/cpuinfo"), &m.cpu_threads);
  m.ram_bytes = ram_bytes_of(read_file("/proc/meminfo"));
  return m;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"gpu", m.gpu}, {"driver", m.driver}, {"cpu", m.cpu}, {"cpu_threads", m.cpu_threads},
          {"ram_bytes", m.ram_bytes}};
}

}  // namespace inferdesk::remote
