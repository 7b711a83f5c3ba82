#include "core/remote/key_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace inferdesk::remote {

std::map<std::string, std::string> KeyFile::read() const {
  std::map<std::string, std::string> out;
  std::ifstream in(path_);
  if (!in) return out;
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

void KeyFile::write(const std::map<std::string, std::string>& keys) const {
  const std::string text = nlohmann::json(keys).dump();
  const std::string tmp = path_.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);  // never world-readable
  if (fd < 0) throw std::runtime_error("could not write the API key file " + path_.string());
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("could not write the API key file " + path_.string());
  }
}

std::string KeyFile::get(const std::string& name) const {
  const auto keys = read();
  const auto it = keys.find(name);
  return it == keys.end() ? "" : it->second;
}

void KeyFile::set(const std::string& name, const std::string& key) {
  auto keys = read();
  if (key.empty()) {
    if (keys.erase(name) == 0) return;
  } else {
    keys[name] = key;
  }
  write(keys);
}

void KeyFile::rename(const std::string& from, const std::string& to) {
  auto keys = read();
  const auto it = keys.find(from);
  if (it == keys.end() || from == to) return;
  keys[to] = it->second;
  keys.erase(from);
  write(keys);
}

}  // namespace inferdesk::remote
