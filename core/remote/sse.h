// A Server-Sent Events line parser for streamed OpenAI responses: bytes in any split, one call
// per complete "data:" field (CRLF or LF line ends, comments and other fields skipped).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace inferdesk::remote {

class SseParser {
 public:
  explicit SseParser(std::function<void(std::string_view data)> on_data) : on_data_(std::move(on_data)) {}
  void feed(std::string_view bytes);
  // A last line without its newline (a server that closes without one).
  void finish();

 private:
  void line(std::string_view l);
  std::function<void(std::string_view)> on_data_;
  std::string pending_;
};

}  // namespace inferdesk::remote
