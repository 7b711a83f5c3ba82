// API keys of saved endpoints, kept out of the SQLite database (which users copy, back up and
// attach to bug reports): one small JSON file {"endpoint name": "key"} with mode 0600 beside it,
// replaced atomically (write to a temporary file, fsync, rename). Keys never appear in errors.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace inferdesk::remote {

class KeyFile {
 public:
  explicit KeyFile(std::filesystem::path path) : path_(std::move(path)) {}
  // "" when none is stored. An unreadable or malformed file counts as empty.
  std::string get(const std::string& name) const;
  // Throws std::runtime_error (naming the file, not the key) when it cannot be written.
  void set(const std::string& name, const std::string& key);  // "" removes it
  void rename(const std::string& from, const std::string& to);

 private:
  std::map<std::string, std::string> read() const;
  void write(const std::map<std::string, std::string>& keys) const;
  std::filesystem::path path_;
};

}  // namespace inferdesk::remote
