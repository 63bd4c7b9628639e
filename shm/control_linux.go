package shm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The control socket: a worker connects to a unix socket; the daemon checks
// the peer's credentials (SO_PEERCRED) against its allow-lists, makes the
// worker's region in a memfd (2 MB hugetlb pages when the kernel has them,
// 4 KB pages otherwise), resident in both processes (resident_linux.go), writes the header and the two rings' control
// blocks, and passes the memfd and the worker's wake-up eventfd with
// SCM_RIGHTS after a one-line greeting (see "Attaching" in doc.go).
// The connection then stays open and idle: when it closes — the worker
// exited or crashed — the session ends and its region is unmapped and
// closed.

// ServerConfig configures the control socket.
type ServerConfig struct {
	Path string // socket path; created with mode 0660
	// SocketGroup, when set, is the socket's group (a name or a numeric
	// gid): with mode 0660 its members may connect (the allow-lists
	// still decide who attaches). Empty: the daemon's own group.
	SocketGroup string
	AllowUIDs   []int  // uids allowed besides root
	AllowGIDs   []int  // gids allowed: a peer's primary gid or any supplementary one
	Params      Params // the region of each worker
	// Admit, when set, is asked after the allow-lists pass (root
	// included); false refuses the worker as they do ("refused\n",
	// counted in Server.Refused). It runs on the connection's goroutine.
	Admit func(uid, gid, pid int) bool
	// MaxSessionsPerUID bounds the sessions one uid holds at once, root's
	// too (0: no bound): each is a region of its own. A worker past it is
	// refused with "error session limit: ...\n" (ErrSessionLimit to Dial),
	// counted in Server.SessionLimitRefusals.
	MaxSessionsPerUID int
	// OnAttach runs for each accepted worker before its region is sent;
	// an error refuses the worker ("error <text>\n"), frees the region
	// and skips OnDetach. OnDetach runs when the connection of an
	// attached worker closes, before the region is freed. Both run on the
	// connection's goroutine, one after the other: a session's OnDetach
	// never starts before its OnAttach has returned.
	// Doorbell makes the regions carry FeatureDoorbell: the daemon's
	// loop may sleep, and each session has a doorbell of its own (a
	// non-blocking eventfd, Session.DoorbellFD) that the daemon watches
	// (Bells) and its worker, on asking ("doorbell\n"), gets a copy of
	// ("doorbell\n" with the descriptor), once (doorbell_linux.go).
	Doorbell bool
	// Host, when set, is written into every region's header: the host
	// this socket serves, its addresses and its port's link
	// (FeatureHostInfo, Layout.SetHost). Zero: the headers say nothing
	// of it. Listen refuses one with no address.
	Host     HostInfo
	OnAttach func(*Session) error
	OnDetach func(*Session)
	// OnRefuse, when set, hears of every worker refused before it
	// attached: its credentials (-1 when unreadable) and why, in words
	// that name the config key. It runs on the connection's goroutine;
	// anyone who can reach the socket can make it run, so it must be
	// cheap and bound its own output (the daemon's log is rate-limited).
	OnRefuse func(uid, gid, pid int, why string)
}

// Session is one attached worker: its credentials and its region.
type Session struct {
	UID, GID, PID int
	Data          any // the daemon's own state for the session (set in OnAttach)
	Layout        Layout
	Region        []byte // the daemon's mapping of the worker's region
	Hugetlb       bool   // the region is on 2 MB pages
	fd            int    // the region's memfd
	efd           int    // the worker's wake-up eventfd
	bell          int    // the session's doorbell eventfd, -1 without (ServerConfig.Doorbell)
	conn          *net.UnixConn
}

// EngineSide is the engine's working view of a session's region: its
// ends of the two rings, the limits entries are checked against, the
// arena and the pool entries refer to, and the account of the pool's
// pages. The engine (one goroutine) owns it.
type EngineSide struct {
	SQ     *Consumer
	CQ     *Producer
	Limits Limits
	Arena  []byte
	Pool   []byte
	Pages  *PagePool
}

// EngineSide attaches the engine's ends of the session's rings; messages
// are at most the region's MaxMessage bytes, or maxMessage if less (0:
// the region's).
func (s *Session) EngineSide(maxMessage uint32) (EngineSide, error) {
	l := &s.Layout
	sq, err := NewConsumer(l.SQ(s.Region), l.SQEntries)
	if err != nil {
		return EngineSide{}, err
	}
	cq, err := NewProducer(l.CQ(s.Region), l.CQEntries)
	if err != nil {
		return EngineSide{}, err
	}
	return EngineSide{SQ: sq, CQ: cq, Limits: l.Limits(maxMessage), Arena: l.Arena(s.Region),
		Pool: l.Pool(s.Region), Pages: NewPagePool(int(l.PoolPages))}, nil
}

// DoorbellFD is the session's doorbell, the eventfd its worker rings
// (ServerConfig.Doorbell), or -1. It stays open until the session is
// freed, after OnDetach (or a refusing OnAttach) has returned: the daemon
// watches it from OnAttach (Bells.Add) and stops in OnDetach
// (Bells.Remove), on both paths.
func (s *Session) DoorbellFD() int { return s.bell }

// Close ends the session from the daemon's side (a worker that broke the
// protocol): its connection closes, OnDetach runs, the region is freed.
func (s *Session) Close() { s.conn.Close() }

// Wake writes the worker's eventfd once (see "Waiting" in doc.go). A full
// counter (the worker never reads it) is not an error: it is already
// readable.
func (s *Session) Wake() {
	var one = [8]byte{1}
	unix.Write(s.efd, one[:])
}

// Server accepts workers on the control socket.
type Server struct {
	cfg      ServerConfig
	ln       *net.UnixListener
	mu       sync.Mutex            // guards sessions, perUID and closing
	sessions map[*Session]struct{} // regions made and not yet freed
	perUID   map[int]int           // sessions being made or held, by uid (MaxSessionsPerUID)
	closing  bool                  // Close has begun: no session is added
	wg       sync.WaitGroup        // the accept goroutine and one per connection
	refused  atomic.Uint64         // connections refused by the credential check
	limited  atomic.Uint64         // connections refused by MaxSessionsPerUID
}

// ErrRefused is what a worker sees (in the greeting) when its credentials
// are not allowed.
var ErrRefused = errors.New("shm: credentials not allowed by the daemon")

// ErrSessionLimit is what a worker sees when its uid holds as many
// sessions as the daemon allows one uid (ServerConfig.MaxSessionsPerUID).
var ErrSessionLimit = errors.New("shm: too many sessions for this uid")

// sessionLimitGreeting starts the greeting of a worker refused by
// MaxSessionsPerUID.
const sessionLimitGreeting = "error session limit: "

// Listen creates the control socket and starts accepting workers.
func Listen(cfg ServerConfig) (*Server, error) {
	l, err := NewLayout(cfg.Params)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", cfg.Path, err)
	}
	l.SetHost(cfg.Host)
	if err := l.Validate(l.RegionSize); err != nil {
		return nil, fmt.Errorf("control socket %s: host: %w", cfg.Path, err)
	}
	if c, err := net.Dial("unix", cfg.Path); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another daemon is listening there", cfg.Path)
	}
	os.Remove(cfg.Path) // a socket left by a previous daemon
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(cfg.Path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := chownGroup(cfg.Path, cfg.SocketGroup); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", cfg.Path, err)
	}
	s := &Server{cfg: cfg, ln: ln, sessions: map[*Session]struct{}{}, perUID: map[int]int{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *Server) serve(c *net.UnixConn) {
	defer s.wg.Done()
	defer c.Close()
	cred, err := peerCred(c)
	if why := s.refusal(c, cred, err); why != "" {
		s.refused.Add(1)
		c.Write([]byte("refused\n"))
		s.tellRefused(cred, why)
		return
	}
	uid := int(cred.Uid)
	if greeting := s.reserve(uid); greeting != "" {
		c.Write([]byte(greeting))
		s.tellRefused(cred, strings.TrimSuffix(strings.TrimPrefix(greeting, "error "), "\n")+" (workers.max_sessions_per_uid)")
		return
	}
	defer s.unreserve(uid) // last: after the region is freed
	sess, err := newSession(&s.cfg, cred, c)
	if err != nil {
		c.Write([]byte("error " + err.Error() + "\n"))
		return
	}
	if !s.add(sess) {
		sess.free()
		c.Write([]byte("error the daemon is closing its control socket\n"))
		return
	}
	defer s.remove(sess)
	if s.cfg.OnAttach != nil {
		if err := s.cfg.OnAttach(sess); err != nil {
			sess.free()
			c.Write([]byte("error " + err.Error() + "\n"))
			return
		}
	}
	rights := unix.UnixRights(sess.fd, sess.efd)
	if _, _, err := c.WriteMsgUnix([]byte("ok\n"), rights, nil); err == nil {
		s.requests(c, sess) // until the worker goes away
	}
	if s.cfg.OnDetach != nil {
		s.cfg.OnDetach(sess)
	}
	sess.free() // before the session leaves the table: Sessions() == 0 means freed
}

// reserve counts a session for uid before its region is made, so that
// workers connecting at once cannot pass MaxSessionsPerUID; it returns
// the refusal's greeting, or "".
// refusal says why a connection is refused before it attaches ("" when
// it is not): its credentials unreadable, not allowed, or not admitted.
func (s *Server) refusal(c *net.UnixConn, cred *unix.Ucred, credErr error) string {
	switch {
	case credErr != nil:
		return "its credentials could not be read: " + credErr.Error()
	case !s.allowed(c, cred):
		return fmt.Sprintf("uid %d, gid %d: not root, not in workers.allow_uids, and neither its gid nor a supplementary group is in workers.allow_gids", cred.Uid, cred.Gid)
	case !s.admitted(cred):
		return fmt.Sprintf("uid %d, gid %d: not admitted by the daemon", cred.Uid, cred.Gid)
	}
	return ""
}

// tellRefused passes a refusal to ServerConfig.OnRefuse.
func (s *Server) tellRefused(cred *unix.Ucred, why string) {
	if s.cfg.OnRefuse == nil {
		return
	}
	if cred == nil {
		s.cfg.OnRefuse(-1, -1, -1, why)
		return
	}
	s.cfg.OnRefuse(int(cred.Uid), int(cred.Gid), int(cred.Pid), why)
}

func (s *Server) reserve(uid int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "error the daemon is closing its control socket\n"
	}
	if max := s.cfg.MaxSessionsPerUID; max > 0 && s.perUID[uid] >= max {
		s.limited.Add(1)
		return fmt.Sprintf("%suid %d holds %d sessions, the most the daemon allows one uid\n", sessionLimitGreeting, uid, s.perUID[uid])
	}
	s.perUID[uid]++
	return ""
}

// unreserve gives back reserve's count.
func (s *Server) unreserve(uid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perUID[uid]--; s.perUID[uid] <= 0 {
		delete(s.perUID, uid)
	}
}

// add enters sess in the table, unless Close has begun (whose closing of
// every connection would miss it).
func (s *Server) add(sess *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.sessions[sess] = struct{}{}
	return true
}

// remove takes a freed session out of the table.
func (s *Server) remove(sess *Session) {
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
}

// newSession makes a worker's region for cfg: a memfd of the layout's
// size, on hugetlb pages when possible, mapped and resident, with header
// and rings initialised.
func newSession(cfg *ServerConfig, cred *unix.Ucred, c *net.UnixConn) (*Session, error) {
	p, doorbell := cfg.Params, cfg.Doorbell
	huge := p
	huge.RegionAlign = 2 << 20
	for _, try := range []struct {
		p     Params
		flags int
	}{{huge, unix.MFD_HUGETLB | unix.MFD_HUGE_2MB}, {p, 0}} {
		l, err := NewLayout(try.p)
		if err != nil {
			return nil, err
		}
		if doorbell {
			l.Features |= FeatureDoorbell
		}
		l.SetHost(cfg.Host)
		fd, err := unix.MemfdCreate("homa-worker", unix.MFD_CLOEXEC|try.flags)
		if err != nil {
			continue
		}
		if err := unix.Ftruncate(fd, int64(l.RegionSize)); err != nil {
			unix.Close(fd)
			continue
		}
		region, err := unix.Mmap(fd, 0, int(l.RegionSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			unix.Close(fd)
			continue
		}
		page := 4096
		if try.flags != 0 {
			page = 2 << 20
		}
		if err := makeResident(region, page); err != nil {
			unix.Munmap(region)
			unix.Close(fd)
			if try.flags != 0 {
				continue // hugepages ran short after all: ordinary pages
			}
			return nil, err
		}
		sess := &Session{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid), Layout: l, Region: region,
			Hugetlb: try.flags != 0, fd: fd, efd: -1, bell: -1, conn: c}
		if sess.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			sess.free()
			return nil, fmt.Errorf("eventfd: %w", err)
		}
		if doorbell {
			if sess.bell, err = newBellFD(); err != nil {
				sess.free()
				return nil, err
			}
		}
		if err := sess.init(); err != nil {
			sess.free()
			return nil, err
		}
		return sess, nil
	}
	return nil, errors.New("cannot make a shared region (memfd)")
}

func (s *Session) init() error {
	if err := s.Layout.WriteHeader(s.Region); err != nil {
		return err
	}
	if err := InitRing(s.Layout.SQ(s.Region), s.Layout.SQEntries, 0); err != nil {
		return err
	}
	return InitRing(s.Layout.CQ(s.Region), s.Layout.CQEntries, 0)
}

// free unmaps and closes the region.
func (s *Session) free() {
	if s.Region != nil {
		unix.Munmap(s.Region)
		s.Region = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.efd >= 0 {
		unix.Close(s.efd)
		s.efd = -1
	}
	if s.bell >= 0 {
		unix.Close(s.bell)
		s.bell = -1
	}
}

// Sessions is the number of attached workers.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Refused is the number of connections refused by the credential check.
func (s *Server) Refused() uint64 { return s.refused.Load() }

// SessionLimitRefusals is the number of connections refused by
// MaxSessionsPerUID.
func (s *Server) SessionLimitRefusals() uint64 { return s.limited.Load() }

// Close stops accepting, ends every session and removes the socket; it
// returns once every session's OnDetach has returned and its region is
// freed.
func (s *Server) Close() error { return s.CloseWithin(0) }

// ErrCloseTimeout is returned by CloseWithin when sessions were still
// held after its wait.
var ErrCloseTimeout = errors.New("shm: sessions still held when the wait ended")

// CloseWithin is Close with a bound on the wait (0: none). When sessions
// are still held after d (an OnDetach waits for something that does not
// come), it returns an error wrapping ErrCloseTimeout; their goroutines
// go on, and each frees its region when its OnDetach returns. The
// socket is removed either way.
func (s *Server) CloseWithin(d time.Duration) error {
	err := s.ln.Close()
	s.mu.Lock()
	s.closing = true
	for sess := range s.sessions {
		sess.conn.Close()
	}
	s.mu.Unlock()
	defer os.Remove(s.cfg.Path)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		if errors.Is(err, net.ErrClosed) {
			err = nil // closed before
		}
		return err
	case <-timeout:
		return fmt.Errorf("control socket %s: %d sessions after %v: %w", s.cfg.Path, s.Sessions(), d, ErrCloseTimeout)
	}
}

// Attach is the worker side of the control socket: it connects, receives
// the region's memfd, maps it (every page at once: MAP_POPULATE) and
// checks its header. Close (or the process ending) detaches.
type Attach struct {
	Layout  Layout
	Region  []byte
	EventFD int // the wake-up eventfd (non-blocking); Close closes it
	// Doorbell is the session's doorbell eventfd once AskDoorbell got it,
	// -1 before; Close closes it.
	Doorbell int
	conn     *net.UnixConn
}

// Dial attaches to the daemon's control socket at path.
func Dial(path string) (*Attach, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("attach to %s: %w", path, err)
	}
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("attach to %s: %w", path, err)
	}
	if msg := string(buf[:n]); msg != "ok\n" {
		c.Close()
		if msg == "refused\n" {
			return nil, fmt.Errorf("attach to %s: the daemon refused uid %d, gid %d (allowed: root, workers.allow_uids, "+
				"and members of workers.allow_gids; the daemon logs why): %w", path, os.Getuid(), os.Getgid(), ErrRefused)
		}
		if strings.HasPrefix(msg, sessionLimitGreeting) {
			return nil, fmt.Errorf("attach to %s: daemon says %q: %w", path, msg, ErrSessionLimit)
		}
		return nil, fmt.Errorf("attach to %s: daemon says %q", path, msg)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		c.Close()
		return nil, fmt.Errorf("attach to %s: no region descriptor", path)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		c.Close()
		return nil, fmt.Errorf("attach to %s: got %d descriptors, want 2 (region, eventfd)", path, len(fds))
	}
	efd := fds[1]
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		unix.Close(fds[0])
		unix.Close(efd)
		c.Close()
		return nil, err
	}
	region, err := unix.Mmap(fds[0], 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|mapPopulate)
	unix.Close(fds[0]) // the mapping keeps the memory
	if err != nil {
		unix.Close(efd)
		c.Close()
		return nil, fmt.Errorf("attach: map the region: %w", err)
	}
	l, err := ParseHeader(region)
	if err != nil {
		unix.Munmap(region)
		unix.Close(efd)
		c.Close()
		return nil, err
	}
	return &Attach{Layout: l, Region: region, EventFD: efd, Doorbell: -1, conn: c}, nil
}

// SyscallConn gives access to the control connection's descriptor, which
// the daemon never writes to after the greeting: it becomes readable, at
// end of file, when the daemon closes the connection (it exited, was
// killed, or ended the session). The descriptor is non-blocking and stays
// open until Close; a worker may poll it and read it, nothing else.
func (a *Attach) SyscallConn() (syscall.RawConn, error) { return a.conn.SyscallConn() }

// Close detaches: the daemon ends the session and frees its side.
func (a *Attach) Close() error {
	if a.Region != nil {
		unix.Munmap(a.Region)
		a.Region = nil
	}
	if a.EventFD >= 0 {
		unix.Close(a.EventFD)
		a.EventFD = -1
	}
	if a.Doorbell >= 0 {
		unix.Close(a.Doorbell)
		a.Doorbell = -1
	}
	return a.conn.Close()
}
