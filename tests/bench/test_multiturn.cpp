// Multi-turn chats against a mock that replies "reply-<n>": each next turn is sent only after the
// previous reply arrived, and carries every earlier user turn and reply, in order.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/bench/workload_multiturn.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/bench/support/mock_server.h"

namespace inferdesk::test {
namespace {

TEST(MultiTurn, EachTurnFollowsItsPreviousReplyAndCarriesTheConversation) {
  const Tokenizer tok = Tokenizer::from_dir(std::string(INFERDESK_SHARED_DIR) + "/tokenizers/GPT-2");
  MockServer mock([](const MockRequest& r) {
    MockResponse m;
    const std::string reply = "reply-" + std::to_string(r.index);
    m.pieces = {{0.005, sse(R"({"choices":[{"index":0,"delta":{"content":")" + reply + R"("}}]})")}, {0, sse_done()}};
    return m;
  });
  bench::MultiTurnDataset d;
  d.num_conversations = 3;
  d.turns = 3;
  d.input_len = 8;
  d.output_len = 4;
  const auto reqs = bench::multiturn_requests(d, tok, {});
  ASSERT_EQ(reqs.size(), 9u);
  bench::LoadOptions o;
  o.base_url = mock.url();
  const auto run = bench::run_load(o, reqs);
  for (const auto& r : run.requests) ASSERT_TRUE(r.success) << r.error;
  const auto served = mock.served();
  ASSERT_EQ(served.size(), 9u);
  for (int32_t c = 0; c < d.num_conversations; ++c) {
    std::vector<std::string> users;
    for (int32_t t = 0; t < d.turns; ++t) {
      const size_t i = bench::turn_index(d, c, t);
      const bench::RequestResult& r = run.requests[i];
      // What the server received for this request: its body, as make_body built it from the replies.
      const std::string body = t == 0 ? reqs[i].body : reqs[i].make_body(run.requests);
      const Served* got = nullptr;
      for (const auto& s : served)
        if (s.request.body == body) got = &s;
      ASSERT_NE(got, nullptr) << c << "/" << t;
      const auto m = nlohmann::json::parse(got->request.body)["messages"];
      ASSERT_EQ(m.size(), static_cast<size_t>(2 * t + 1));
      for (size_t k = 0; k < users.size(); ++k) EXPECT_EQ(m[2 * k]["content"], users[k]);
      for (int32_t k = 0; k < t; ++k) {
        EXPECT_EQ(m[static_cast<size_t>(2 * k)]["role"], "user");
        EXPECT_EQ(m[static_cast<size_t>(2 * k + 1)]["role"], "assistant");
        EXPECT_EQ(m[static_cast<size_t>(2 * k + 1)]["content"], run.requests[bench::turn_index(d, c, k)].text);
      }
      if (t > 0) {  // sent after the previous turn had its whole reply
        const auto& prev = run.requests[bench::turn_index(d, c, t - 1)];
        EXPECT_GE(r.start_s, prev.start_s + prev.latency_s);
      }
      users.push_back(m[static_cast<size_t>(2 * t)]["content"].get<std::string>());
      EXPECT_EQ(tok.encode(users.back(), false).size(), 8u);
    }
  }
}

}  // namespace
}  // namespace inferdesk::test
