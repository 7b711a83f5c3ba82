// The libcurl easy-handle options every HTTP client of core sets the same way (core/hub's Hub
// client, core/remote's endpoint client): the URL and headers, no signals (worker threads: no
// SIGALRM for DNS timeouts), the user agent, http/https only, and the body / header / progress
// callbacks with their shared user pointer (progress on, so a cancel flag is seen mid-transfer).
// Header-only, so core/util itself does not link libcurl; its users do.
#pragma once

#include <curl/curl.h>

namespace inferdesk::curl_easy {

inline void set_request(CURL* c, const char* url, curl_slist* headers, const char* user_agent) {
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, user_agent);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
}

inline void set_callbacks(CURL* c, void* user, curl_write_callback on_body, curl_write_callback on_header,
                          curl_xferinfo_callback on_progress) {
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, user);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, user);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, user);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
}

}  // namespace inferdesk::curl_easy
