// The media fetcher against each kind of URL: data: (good, bad base64, too large), file://
// (inside, outside, `..`, a symbolic link out, missing), and http(s) against a server on
// 127.0.0.1 (200, 404, redirects, too large with and without a length, one that never
// answers or drips, refused hosts, and a certificate trusted or not).
#include "media/media_fetch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "media/data_url.hpp"
#include "media/web_url.hpp"
#include "tests/media/local_web_server.hpp"

namespace actorllm::media {
namespace {

namespace fs = std::filesystem;
using namespace web_fetch_testing;
using std::chrono::milliseconds;

std::string bytes_text(const fetched_media& m) {
  return std::string(m.bytes.begin(), m.bytes.end());
}

/// `m` failed with a 400 whose message holds `words`.
void expect_refused(const fetched_media& m, const std::string& words) {
  EXPECT_FALSE(m.ok()) << "fetched " << m.bytes.size() << " bytes";
  EXPECT_EQ(m.status, 400);
  EXPECT_NE(m.error.find(words), std::string::npos) << m.error;
}

TEST(media_fetch, data_urls_decode_strict_base64) {
  const media_policy policy;
  auto m = fetch_media("data:image/png;base64,aGVsbG8=", policy);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(bytes_text(m), "hello");
  EXPECT_EQ(m.content_type, "image/png");
  EXPECT_EQ(bytes_text(fetch_media("DATA:image/webp;charset=x;BASE64,aGk=", policy)), "hi");

  for (const char* bad :
       {"aGVsbG8", "aGVs bG8=", "aGVsbG8=\n", "aGV=bG8=", "a===", "aGVsbG8-", "aGVsbG8_"})
    expect_refused(fetch_media(std::string("data:image/png;base64,") + bad, policy),
                   "not valid base64");
  expect_refused(fetch_media("data:image/png,rawbytes", policy), "only base64 data: URLs");
  expect_refused(fetch_media("data:image/png;base64", policy), "data:<media type>;base64");
  expect_refused(fetch_media("data:image/png;base64,", policy), "holds no bytes");
  EXPECT_EQ(decode_base64("AAECAw==").value(), (std::vector<uint8_t>{0, 1, 2, 3}));
}

TEST(media_fetch, a_data_url_past_the_limit_is_refused_before_it_is_decoded) {
  media_policy policy;
  policy.max_bytes = 6;
  EXPECT_TRUE(fetch_media("data:image/png;base64,AAAAAAAA", policy).ok());  // 6 bytes
  // 9 bytes of which the last group is not even base64: the size alone refuses it.
  expect_refused(fetch_media("data:image/png;base64,AAAAAAAA!!!!", policy),
                 "more than --max-image-bytes (6)");
  expect_refused(fetch_media("data:image/png;base64,AAAAAAAAAA==", policy), "7 bytes");
  const std::string huge = "data:image/png;base64," + std::string(policy.max_url_bytes(), 'A');
  expect_refused(fetch_media(huge, policy), "longer than an image of --max-image-bytes");
}

class media_fetch_files : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("media_fetch_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "allowed" / "sub");
    fs::create_directories(root_ / "allowed-other");
    write(root_ / "allowed" / "sub" / "cat image.png", "meow");
    write(root_ / "allowed-other" / "x.png", "secret");
    write(root_ / "outside.png", "secret");
    policy_.allowed_local_path = root_ / "allowed";
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string url_of(const fs::path& path) const { return "file://" + path.string(); }

  fs::path root_;
  media_policy policy_;
};

TEST_F(media_fetch_files, a_file_beneath_the_allowed_folder_is_read) {
  auto m =
      fetch_media("file://" + (root_ / "allowed" / "sub" / "cat%20image.png").string(), policy_);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(bytes_text(m), "meow");
  EXPECT_TRUE(
      fetch_media("file://localhost" + (root_ / "allowed/sub/cat image.png").string(), policy_)
          .ok());
}

TEST_F(media_fetch_files, files_outside_or_not_there_are_refused) {
  expect_refused(fetch_media(url_of(root_ / "outside.png"), policy_),
                 "not beneath --allowed-local-media-path");
  // A sibling whose name starts with the allowed folder's is not beneath it.
  expect_refused(fetch_media(url_of(root_ / "allowed-other" / "x.png"), policy_),
                 "not beneath --allowed-local-media-path");
  expect_refused(fetch_media(url_of(root_ / "allowed" / ".." / "outside.png"), policy_),
                 "'..' is not allowed");
  expect_refused(fetch_media(url_of(root_ / "allowed" / "sub" / "missing.png"), policy_),
                 "no such file");
  expect_refused(fetch_media(url_of(root_ / "allowed" / "sub"), policy_), "not a regular file");
  expect_refused(fetch_media("file://otherhost" + (root_ / "allowed/sub/x.png").string(), policy_),
                 "file:///absolute/path");

  fs::create_symlink(root_ / "outside.png", root_ / "allowed" / "link.png");
  expect_refused(fetch_media(url_of(root_ / "allowed" / "link.png"), policy_),
                 "not beneath --allowed-local-media-path");
  fs::create_directory_symlink(root_, root_ / "allowed" / "up");
  expect_refused(fetch_media(url_of(root_ / "allowed" / "up" / "outside.png"), policy_),
                 "not beneath --allowed-local-media-path");
  // A link that stays inside is followed.
  fs::create_symlink(root_ / "allowed" / "sub" / "cat image.png", root_ / "allowed" / "in.png");
  EXPECT_TRUE(fetch_media(url_of(root_ / "allowed" / "in.png"), policy_).ok());

  media_policy none;  // no --allowed-local-media-path: no file is read
  expect_refused(fetch_media(url_of(root_ / "allowed" / "sub" / "cat image.png"), none),
                 "without --allowed-local-media-path");
}

TEST_F(media_fetch_files, a_file_over_the_limit_is_refused_from_its_size) {
  policy_.max_bytes = 3;
  expect_refused(fetch_media(url_of(root_ / "allowed" / "sub" / "cat image.png"), policy_),
                 "4 bytes, more than --max-image-bytes (3)");
}

TEST(media_fetch_web, a_200_is_the_body_and_a_404_an_error) {
  local_web_server server([](const std::string& target) {
    if (target == "/cat.png?size=2") return ok_answer("PNGDATA");
    return web_answer{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"};
  });
  const media_policy policy;
  auto m = fetch_media(server.url("/cat.png?size=2#frag"), policy);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(bytes_text(m), "PNGDATA");
  EXPECT_EQ(m.content_type, "image/png");
  expect_refused(fetch_media(server.url("/gone.png"), policy), "answered 404 Not Found");
}

TEST(media_fetch_web, redirects_are_followed_and_checked_again) {
  local_web_server server([](const std::string& target) {
    if (target == "/a") return redirect_answer("/b");     // absolute path
    if (target == "/b") return redirect_answer("c.png");  // relative to the folder
    if (target == "/c.png") return ok_answer("C");
    if (target == "/loop") return redirect_answer("/loop");
    if (target == "/to-file") return redirect_answer("file:///etc/passwd");
    return web_answer{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"};
  });
  media_policy policy;
  auto m = fetch_media(server.url("/a"), policy);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(bytes_text(m), "C");
  expect_refused(fetch_media(server.url("/loop"), policy), "more than 3 redirects");
  expect_refused(fetch_media(server.url("/to-file"), policy), "not an http:// or https:// URL");

  // The first URL's host is allowed; the redirect's is not.
  local_web_server away(
      [&](const std::string&) { return redirect_answer(server.url("/c.png", "localhost")); });
  policy.allowed_domains = {"127.0.0.1"};
  EXPECT_TRUE(fetch_media(server.url("/a"), policy).ok());
  const int before = server.num_requests();
  expect_refused(fetch_media(away.url("/x"), policy),
                 "the host 'localhost' is not in --allowed-media-domains");
  EXPECT_EQ(server.num_requests(), before);  // refused before it was asked
}

TEST(media_fetch_web, a_refused_host_is_never_contacted) {
  local_web_server server([](const std::string&) { return ok_answer("x"); });
  media_policy policy;
  policy.allowed_domains = {"images.example.com"};
  expect_refused(fetch_media(server.url("/x.png"), policy),
                 "the host '127.0.0.1' is not in --allowed-media-domains");
  EXPECT_EQ(server.num_requests(), 0);
  expect_refused(fetch_media("http://user:pw@images.example.com/x.png", policy),
                 "user name or password");
  expect_refused(fetch_media("ftp://images.example.com/x.png", policy),
                 "only data:, http://, https:// and file:// URLs");
}

TEST(media_fetch_web, a_body_past_the_limit_is_refused_with_or_without_a_length) {
  const std::string big(5000, 'x');
  local_web_server server([&](const std::string& target) {
    if (target == "/length") return ok_answer(big);
    if (target == "/until-close")
      return web_answer{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big};
    std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 50; ++i) chunked += "64\r\n" + std::string(100, 'y') + "\r\n";
    return web_answer{chunked + "0\r\n\r\n"};
  });
  media_policy policy;
  policy.max_bytes = 4096;
  for (const char* target : {"/length", "/until-close", "/chunked"})
    expect_refused(fetch_media(server.url(target), policy), "larger than --max-image-bytes (4096)");
  policy.max_bytes = 5000;
  for (const char* target : {"/length", "/until-close", "/chunked"}) {
    auto m = fetch_media(server.url(target), policy);
    ASSERT_TRUE(m.ok()) << target << ": " << m.error;
    EXPECT_EQ(m.bytes.size(), 5000u) << target;
  }
}

TEST(media_fetch_web, the_timeout_bounds_the_whole_fetch) {
  local_web_server server([](const std::string& target) {
    if (target == "/silent") return web_answer{"", true};
    return web_answer{ok_answer(std::string(100, 'z')).bytes, false, milliseconds(20)};
  });
  media_policy policy;
  policy.timeout = milliseconds(400);
  for (const char* target : {"/silent", "/drip"}) {
    const auto start = std::chrono::steady_clock::now();
    expect_refused(fetch_media(server.url(target), policy), "timed out after 0.4 s");
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_GE(took, milliseconds(390)) << target;
    EXPECT_LT(took, milliseconds(800)) << target;  // within twice the timeout
  }
}

TEST(media_fetch_web, https_verifies_the_certificate_against_the_systems_authorities) {
  const test_certificate pki = make_test_certificate();
  asio::ssl::context tls(asio::ssl::context::tls_server);
  tls.use_certificate_chain(asio::buffer(pki.certificate_pem));
  tls.use_private_key(asio::buffer(pki.key_pem), asio::ssl::context::pem);
  local_web_server server([](const std::string&) { return ok_answer("TLSDATA"); }, &tls);
  const media_policy policy;

  // Not among the system's authorities: refused.
  expect_refused(fetch_media(server.url("/x.png"), policy), "TLS handshake failed");

  // OpenSSL's default paths follow SSL_CERT_FILE: made to trust the test's certificate.
  const fs::path ca = fs::temp_directory_path() / ("media_fetch_ca_" + std::to_string(getpid()));
  std::ofstream(ca) << pki.certificate_pem;
  ::setenv("SSL_CERT_FILE", ca.c_str(), 1);
  auto m = fetch_media(server.url("/x.png"), policy);
  auto by_name = fetch_media(server.url("/x.png", "localhost"), policy);
  ::unsetenv("SSL_CERT_FILE");
  fs::remove(ca);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(bytes_text(m), "TLSDATA");
  ASSERT_TRUE(by_name.ok()) << by_name.error;
}

TEST(web_url, urls_and_redirect_locations) {
  std::string error;
  auto url = parse_web_url("HTTPS://Example.COM:8443/a/b.png?x=1 2#top", error);
  ASSERT_TRUE(url) << error;
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->host, "example.com");
  EXPECT_EQ(url->port, "8443");
  EXPECT_EQ(url->target, "/a/b.png?x=1%202");
  EXPECT_EQ(resolve_location(*url, "c.png", error)->text(), "https://example.com:8443/a/c.png");
  EXPECT_EQ(resolve_location(*url, "/d", error)->text(), "https://example.com:8443/d");
  EXPECT_EQ(resolve_location(*url, "//cdn.example.com/e", error)->text(),
            "https://cdn.example.com/e");
  EXPECT_EQ(parse_web_url("http://[::1]:8080", error)->text(), "http://[::1]:8080/");
  for (const char* bad : {"http://", "http://h:0/", "http://h:99999/", "http://a b/", "mailto:x"})
    EXPECT_FALSE(parse_web_url(bad, error)) << bad;
}

}  // namespace
}  // namespace actorllm::media
