package client

// Message is a received request, the response of a client RPC, or the
// failure of one.
type Message struct {
	ID      uint64 // RPC id: odd for a request (server id), even for a client RPC's result
	Peer    Addr   // the other end: a request's client, a response's server
	Port    uint16 // a request: the local server port it came to
	Request bool   // a request, to answer with Reply
	// Data is the message, a view of the receive pool, valid until
	// Release (or the Client's Close); nil for a failed RPC.
	Data []byte
	// Err is why the client RPC failed (errors.Is it with ErrTimeout,
	// ErrAborted, ...), or why the daemon refused a ReplyAsync to request
	// ID (an odd ID; ErrNoRPC when the RPC had ended); nil for a request
	// or a response. Receive returns failures as Messages; Wait and Call
	// return Err itself.
	Err error

	c     *Client
	page  uint32 // first pool page held; pages 0: none (or released)
	pages uint32
}

// Release gives the message's receive-pool pages back to the daemon: on
// the client's next Send or Reply where the daemon takes pages there
// (FeatureReturnOnSubmit), or at the latest when a wait of its finds
// nothing (before it sleeps, or as it returns empty-handed); at once
// when 16 runs or a quarter of the pool would wait so (a long message's
// pages are what the next one needs), and with older daemons
// (ReturnPages). After it, Data is nil and must not be used through any
// earlier copy of the slice. Releasing twice, releasing a failure, or
// releasing after the Client's Close or the daemon's end (ErrDaemonGone)
// does nothing. Like the Client, it must not run concurrently with the
// Client's other calls.
func (m *Message) Release() {
	if m.c == nil || m.pages == 0 {
		return
	}
	c, run := m.c, pageRun{m.page, m.pages}
	m.Data, m.pages = nil, 0
	c.stats.PagesHeld -= uint64(run.pages)
	if c.closed || c.gone {
		return
	}
	if c.keepBack(run) {
		c.toReturn = append(c.toReturn, run) // on the next Send or Reply, or before the client sleeps
		return
	}
	c.returnPages(run)
	c.flush()
}
