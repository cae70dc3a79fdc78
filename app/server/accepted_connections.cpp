// See accepted_connections.h.
#include "accepted_connections.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace kvscope::server {
namespace {

// The port of an IPv4 or IPv6 socket address; -1 for any other family.
int port_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return -1;
}

// Whether `fd` is a connected TCP socket (not a listening one) whose local
// port is `port`.
bool is_accepted_connection(int fd, int port) {
  int type = 0, listening = 0;
  socklen_t size = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) return false;
  size = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening) return false;
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof(local), peer_size = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) return false;
  if (port_of(local) != port) return false;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) == 0;
}

}  // namespace

int shut_down_accepted_connections(int port) {
  if (port <= 0) return 0;
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    char* end = nullptr;
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0') continue;
    // The listing is a moment old: a descriptor may have been closed and its
    // number reused since, so it is checked here, just before the shutdown.
    // Not excluded: a connection closed between the check and the shutdown,
    // microseconds apart, whose number another thread's new socket takes in
    // between; that socket would be shut down. It needs that timing, while
    // the server stops.
    if (is_accepted_connection(static_cast<int>(fd), port) && ::shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) {
      ++count;
    }
  }
  return count;
}

}  // namespace kvscope::server
