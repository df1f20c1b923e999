// The WebSocket's key in its offered subprotocols (api/access.hpp). The suite keeps the name
// it had beside the playground's tests, which the browser's use of it came with.
#include "api/access.hpp"

#include <gtest/gtest.h>

namespace actorllm::api {
namespace {

TEST(web_assets, a_websocket_key_travels_as_a_subprotocol) {
  EXPECT_EQ(websocket_authorization("actorllm, bearer.s3cret"), "Bearer s3cret");
  EXPECT_EQ(websocket_authorization("bearer.a,bearer.b"), "Bearer a");
  EXPECT_EQ(websocket_authorization("actorllm"), "");
  EXPECT_EQ(websocket_authorization("bearer."), "");
  EXPECT_EQ(websocket_authorization(""), "");
  EXPECT_TRUE(offers_actorllm_protocol(" chat , actorllm"));
  EXPECT_FALSE(offers_actorllm_protocol("actorllm2, xactorllm"));
}

}  // namespace
}  // namespace actorllm::api
