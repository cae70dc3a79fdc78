// Ends the connections a server in this process accepted on a TCP port, so
// that stopping it does not wait for idle keep-alive clients.
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

namespace kvscope::server {

// Shuts down (both ways) every connected TCP socket of this process whose
// local port is `port`: the connections accepted by the server listening
// there, not this process's own client sockets (their local port is their
// own). A thread blocked on one wakes with end of file. Returns how many.
int shut_down_accepted_connections(int port);

}  // namespace kvscope::server
