package holdfast

// Session holds (docs/sessions.md): a hold bound to the connection that took
// it. The daemon renews it while the connection lives, releases it when the
// connection closes, and reports one it could not keep in an unsolicited
// frame (Response id 0, code OK, result session_event). Each conn keeps the
// session holds taken on it here, by (namespace, partition, fence), so that
// those reports, and the end of the connection, reach the Hold values.

import (
	"sync"
	"sync/atomic"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

// isSessionEvent reports whether resp is an unsolicited report about the
// connection's session holds. Any other id-0 frame is the daemon's fatal
// answer to a frame it could not read.
func isSessionEvent(resp *pb.Response) bool {
	return resp.GetId() == 0 && resp.GetSessionEvent() != nil
}

type sessionKey struct {
	namespace string
	partition string
	fence     uint64
}

// earlyMax bounds the reports kept for holds not registered yet.
const earlyMax = 1024

// sessionHolds is the registry of one connection's session holds.
type sessionHolds struct {
	mu    sync.Mutex
	holds map[sessionKey]*holdState
	// Reports that came before their hold was registered: the reader may
	// see an event before the caller has taken the answer that granted the
	// hold. Oldest first, at most earlyMax.
	early      map[sessionKey]error
	earlyOrder []sessionKey
	ended      error // set once the connection has ended
}

func newSessionHolds() *sessionHolds {
	return &sessionHolds{holds: make(map[sessionKey]*holdState), early: make(map[sessionKey]error)}
}

// register adds a granted session hold; one already reported lost, or whose
// connection has already ended, is marked lost at once.
func (s *sessionHolds) register(st *holdState) {
	s.mu.Lock()
	err, ok := s.early[st.key]
	if ok {
		delete(s.early, st.key)
	} else {
		err = s.ended
	}
	if err == nil {
		st.sessions = s
		s.holds[st.key] = st
	}
	s.mu.Unlock()
	if err != nil {
		st.markLost(err)
	}
}

// active reports whether the connection has session holds to watch.
func (s *sessionHolds) active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.holds) > 0
}

// forget takes a hold out (released or confirmed through it): it is neither
// renewed by the daemon any more nor reported.
func (s *sessionHolds) forget(st *holdState) {
	s.mu.Lock()
	if s.holds[st.key] == st {
		delete(s.holds, st.key)
	}
	s.mu.Unlock()
}

// onEvent marks the holds an event names lost, keeping reports about holds
// not registered yet.
func (s *sessionHolds) onEvent(ev *pb.SessionEvent) {
	type found struct {
		st  *holdState
		err error
	}
	var lost []found
	s.mu.Lock()
	for _, l := range ev.GetLost() {
		key := sessionKey{l.GetNamespace(), l.GetPartition(), l.GetFence()}
		err := lostError(l)
		if st, ok := s.holds[key]; ok {
			delete(s.holds, key)
			lost = append(lost, found{st, err})
			continue
		}
		if _, dup := s.early[key]; !dup {
			s.earlyOrder = append(s.earlyOrder, key)
		}
		s.early[key] = err
		for len(s.earlyOrder) > earlyMax {
			delete(s.early, s.earlyOrder[0])
			s.earlyOrder = s.earlyOrder[1:]
		}
	}
	// Drop keys already taken by register, so earlyOrder stays bounded too.
	if len(s.earlyOrder) > 2*len(s.early)+64 {
		kept := s.earlyOrder[:0]
		for _, k := range s.earlyOrder {
			if _, ok := s.early[k]; ok {
				kept = append(kept, k)
			}
		}
		s.earlyOrder = kept
	}
	s.mu.Unlock()
	for _, f := range lost {
		f.st.markLost(f.err)
	}
}

// connectionEnded marks every session hold of the connection lost: the
// daemon released them when the connection closed (or, if the daemon died,
// they expire with their session TTL). why is the connection's failure.
func (s *sessionHolds) connectionEnded(why error) {
	err := &Error{Op: "session", Code: CodeUnavailable,
		Message: "session hold lost: its connection to holdfastd ended", cause: why}
	s.mu.Lock()
	if s.ended == nil {
		s.ended = err
	}
	holds := make([]*holdState, 0, len(s.holds))
	for _, st := range s.holds {
		holds = append(holds, st)
	}
	s.holds = make(map[sessionKey]*holdState)
	s.early = make(map[sessionKey]error)
	s.earlyOrder = nil
	s.mu.Unlock()
	for _, st := range holds {
		st.markLost(err)
	}
}

// lostError is the error a lost hold reports: its reason as the code
// (ErrNotHeld, ErrHeldByAnother, ErrConfirmed), the first id it is about.
func lostError(l *pb.SessionHoldLost) error {
	code := l.GetReason()
	if code == pb.Code_CODE_UNSPECIFIED || code == CodeOK {
		code = CodeNotHeld
	}
	return &Error{Op: "session", Code: code, Message: "session hold lost: " + l.GetMessage(),
		ResourceID: l.GetResourceId()}
}

// holdState is the mutable part of a Hold, behind a pointer so
// hold values copy: whether it was released or confirmed through the hold,
// and, for a session hold, whether and why it was lost.
type holdState struct {
	finished atomic.Bool // released or confirmed through this hold

	// Session holds only (session is false otherwise).
	session  bool
	key      sessionKey
	sessions *sessionHolds // the connection's registry, once registered
	lostOnce sync.Once
	lostErr  atomic.Pointer[error]
	lostCh   chan struct{}
	onLost   func(error) // runs on a goroutine of its own
}

func newHoldState() *holdState { return &holdState{} }

func newSessionState(key sessionKey, onLost func(error)) *holdState {
	return &holdState{session: true, key: key, lostCh: make(chan struct{}), onLost: onLost}
}

// finish records a successful Release or Confirm through the hold: it
// leaves its session and is not reported lost afterwards.
func (st *holdState) finish() {
	if st == nil {
		return
	}
	st.finished.Store(true)
	if st.sessions != nil {
		st.sessions.forget(st)
	}
}

func (st *holdState) isFinished() bool { return st != nil && st.finished.Load() }

// markLost records the first loss of a session hold that was not released
// or confirmed through it, wakes Done and runs the OnLost callback.
func (st *holdState) markLost(err error) {
	if st == nil || !st.session || st.finished.Load() {
		return
	}
	st.lostOnce.Do(func() {
		st.lostErr.Store(&err)
		close(st.lostCh)
		if st.onLost != nil {
			go st.onLost(err)
		}
	})
}

func (st *holdState) lost() error {
	if st == nil {
		return nil
	}
	if p := st.lostErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (st *holdState) done() <-chan struct{} {
	if st == nil || !st.session {
		return nil
	}
	return st.lostCh
}
