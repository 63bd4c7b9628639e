// Package tcppeer is how the perf harness runs kernel TCP beside Homa: a
// request/response peer over TCP_NODELAY sockets, on loopback or across a
// veth pair between two network namespaces that it makes and removes.
package tcppeer
