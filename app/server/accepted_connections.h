// The connections a server in this process accepted on a TCP port, found
// where the kernel lists them: ended so that stopping the server does not
// wait for idle keep-alive clients, and probed so that a handler holding a
// whole response notices a client that has gone.
//
// Why: httplib 0.11 (Debian 12's) waits on each kept-alive connection for
// its next request for up to the keep-alive timeout (5 s), and its stop()
// does not cut that wait short (it checks a copy of the listening socket
// taken when the connection began). An OpenAI SDK client keeps a pooled
// connection open, so stopping the server (Ctrl+C, or the desktop app
// applying settings on its GUI thread) took 5 s whenever one was connected.
// httplib hands out no handle on the sockets it accepts, so they are found
// where the kernel lists them: this process's descriptors (/proc/self/fd).
#pragma once

#include <string>

namespace kvscope::server {

// Shuts down (both ways) every connected TCP socket of this process whose
// local port is `port`: the connections accepted by the server listening
// there, not this process's own client sockets (their local port is their
// own). A thread blocked on one wakes with end of file. Returns how many.
int shut_down_accepted_connections(int port);

// The descriptor of the connection accepted on `port` from
// peer_address:peer_port, the peer as httplib gives it to a handler
// (Request::remote_addr, numeric, and remote_port); -1 when there is none.
// While that connection's request is being handled the descriptor stays
// open (httplib closes it after the handler and the response), so a handler
// may probe it with peer_has_gone.
int find_accepted_connection(int port, const std::string& peer_address, int peer_port);

// Whether the peer of connected socket `fd` has closed its side of the
// connection, or the connection failed. Does not block; a request that the
// peer sent behind the one in hand is not a hang-up.
bool peer_has_gone(int fd);

}  // namespace kvscope::server
