// See accepted_connections.h.
#include "accepted_connections.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
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
// port is `port`; `peer`, when given, gets its peer's address.
bool is_accepted_connection(int fd, int port, sockaddr_storage* peer_out = nullptr, socklen_t* peer_size_out = nullptr) {
  int type = 0, listening = 0;
  socklen_t size = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) return false;
  size = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening) return false;
  sockaddr_storage local{}, peer{};
  socklen_t local_size = sizeof(local), peer_size = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) return false;
  if (port_of(local) != port) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) return false;
  if (peer_out) *peer_out = peer;
  if (peer_size_out) *peer_size_out = peer_size;
  return true;
}

// Calls fn(fd) for each descriptor this process has open, by number.
template <typename Fn>
void for_each_open_descriptor(Fn&& fn) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    char* end = nullptr;
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0') continue;
    if (fn(static_cast<int>(fd))) return;
  }
}

}  // namespace

int shut_down_accepted_connections(int port) {
  if (port <= 0) return 0;
  int count = 0;
  for_each_open_descriptor([&](int fd) {
    // The listing is a moment old: a descriptor may have been closed and its
    // number reused since, so it is checked here, just before the shutdown.
    // Not excluded: a connection closed between the check and the shutdown,
    // microseconds apart, whose number another thread's new socket takes in
    // between; that socket would be shut down. It needs that timing, while
    // the server stops.
    if (is_accepted_connection(fd, port) && ::shutdown(fd, SHUT_RDWR) == 0) ++count;
    return false;
  });
  return count;
}

int find_accepted_connection(int port, const std::string& peer_address, int peer_port) {
  if (port <= 0 || peer_port <= 0 || peer_address.empty()) return -1;
  int found = -1;
  for_each_open_descriptor([&](int fd) {
    sockaddr_storage peer{};
    socklen_t peer_size = sizeof(peer);
    if (!is_accepted_connection(fd, port, &peer, &peer_size) || port_of(peer) != peer_port) return false;
    // Numeric, as httplib writes Request::remote_addr.
    char host[NI_MAXHOST] = {};
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&peer), peer_size, host, sizeof(host), nullptr, 0,
                      NI_NUMERICHOST) != 0 ||
        peer_address != host) {
      return false;
    }
    found = fd;
    return true;
  });
  return found;
}

bool peer_has_gone(int fd) {
  pollfd p{};
  p.fd = fd;
  p.events = POLLRDHUP;
  if (::poll(&p, 1, 0) < 0) return false;  // interrupted: ask again at the next poll
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace kvscope::server
