// file:// URLs: the path decoded, checked against the allowed folder, then read with its size
// checked first.
#include "media/local_media.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace actorllm::media {
namespace {

namespace fs = std::filesystem;

/// The path of a file:// URL with its %XX escapes decoded; empty when it is malformed (a bad
/// escape, an escaped NUL, a host other than localhost, a relative path).
std::string local_path_of(std::string_view url) {
  std::string_view rest = url.substr(7);  // after "file://"
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  const std::string_view host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return {};
  rest = rest.substr(slash);
  rest = rest.substr(0, std::min(rest.find_first_of("?#"), rest.size()));
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path += rest[i];
      continue;
    }
    if (i + 2 >= rest.size() || !std::isxdigit(static_cast<unsigned char>(rest[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(rest[i + 2])))
      return {};
    const char byte = static_cast<char>(std::stoi(std::string(rest.substr(i + 1, 2)), nullptr, 16));
    if (byte == '\0') return {};
    path += byte;
    i += 2;
  }
  return path;
}

/// Whether `path` is `folder` or lies beneath it (both canonical), component by component, so
/// that /media-other is not beneath /media.
bool is_beneath(const fs::path& path, const fs::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
    if (f->empty()) continue;  // a trailing separator's empty last component
    if (p == path.end() || *p != *f) return false;
  }
  return true;
}

/// Closes a descriptor on every path out.
struct descriptor {
  int fd = -1;
  ~descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

fetched_media read_local_media(std::string_view url, const media_policy& policy) {
  if (policy.allowed_local_path.empty())
    return media_error(url,
                       "file:// URLs are refused: the server was started without "
                       "--allowed-local-media-path");
  const fs::path given = local_path_of(url);
  if (given.empty() || !given.is_absolute())
    return media_error(url, "a file URL must be file:///absolute/path");
  for (const auto& part : given)
    if (part == "..") return media_error(url, "'..' is not allowed in a file URL");
  std::error_code ec;
  const fs::path folder = fs::canonical(policy.allowed_local_path, ec);
  if (ec) return media_error(url, "the allowed media folder cannot be read: " + ec.message(), 500);
  const fs::path real = fs::canonical(given, ec);
  if (ec) return media_error(url, "no such file");
  if (!is_beneath(real, folder))
    return media_error(url, "the file is not beneath --allowed-local-media-path");
  if (!fs::is_regular_file(real, ec)) return media_error(url, "not a regular file");

  // Open what was checked, without following a link put there since, nor waiting on a FIFO;
  // then check what was opened: its kind, its real place and its size.
  descriptor file{::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  struct stat info {};
  if (file.fd < 0 || ::fstat(file.fd, &info) != 0) return media_error(url, "cannot open the file");
  if (!S_ISREG(info.st_mode)) return media_error(url, "not a regular file");
  const fs::path opened = fs::read_symlink("/proc/self/fd/" + std::to_string(file.fd), ec);
  if (!ec && !is_beneath(opened, folder))
    return media_error(url, "the file is not beneath --allowed-local-media-path");
  if (static_cast<uint64_t>(info.st_size) > policy.max_bytes)
    return media_error(url, "the file is " + std::to_string(info.st_size) +
                                " bytes, more than --max-image-bytes (" +
                                std::to_string(policy.max_bytes) + ")");

  fetched_media out;
  out.bytes.resize(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < out.bytes.size()) {
    const ssize_t n = ::read(file.fd, out.bytes.data() + done, out.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done != out.bytes.size()) return media_error(url, "the file changed while it was read");
  if (out.bytes.empty()) return media_error(url, "the file is empty");
  return out;
}

}  // namespace actorllm::media
