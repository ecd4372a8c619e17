package holdfast

// One connection to the daemon. A conn is never reused after it fails; the
// Client dials a new one.
//
// Writes: a caller appends its frame to the write queue; if no write is in
// progress it becomes the writer and writes the queue, again and again until
// it is empty, so frames queued by concurrent callers while a write is on
// the wire go out together in the next one. A caller never waits for
// another's write: its answer cannot come before its frame is written, and if
// the write fails the connection fails and with it every call on it.
//
// Reads (leader/followers): at most one goroutine holds the read role. A
// caller whose answer has not come takes the role when nobody holds it and
// reads the socket itself (the common, sequential case costs no goroutine
// hand-off); the others wait for the reader to hand them their answers. The
// reader dispatches every answer it reads to its caller and session events
// to the session registry, and when its own answer has come (or its deadline
// passed) hands the role to a caller still waiting, if any. While the
// connection has session holds and nobody waits for an answer, a background
// goroutine keeps reading, so that session events and the end of the
// connection are seen at once.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"google.golang.org/protobuf/proto"
)

const (
	readBufSize = 16 << 10 // the read buffer; grown for a larger frame, then shrunk back
)

// aLongTimeAgo is a read deadline in the past: it wakes a blocked reader.
var aLongTimeAgo = time.Unix(1, 0)

// call is one request waiting for its answer.
type call struct {
	id   uint64
	wake chan struct{} // buffered(1): resp set, or the read role granted
	// Under conn.mu:
	resp *pb.Response
	lead bool // granted the read role
	// Set when the connection failed before the call's frame was wholly
	// written: the daemon never acted on it, so it may be sent again.
	unsent atomic.Bool
}

var callPool = sync.Pool{New: func() any { return &call{wake: make(chan struct{}, 1)} }}

func getCall(id uint64) *call {
	c := callPool.Get().(*call)
	c.id = id
	return c
}

// putCall recycles c once no reader can reach it (it left pending).
func putCall(c *call) {
	select {
	case <-c.wake:
	default:
	}
	c.resp, c.lead = nil, false
	c.unsent.Store(false)
	callPool.Put(c)
}

type conn struct {
	nc      net.Conn
	maxRead int

	mu      sync.Mutex
	pending map[uint64]*call // calls waiting for their answer
	reading bool             // the read role is held (by a caller or the background reader)
	err     error            // why the conn died; set once, under mu
	done    chan struct{}    // closed when err is set

	// The write queue (under wmu): frames not yet handed to the socket, the
	// ids of the calls they belong to (not the calls: a call that gave up
	// is recycled while its frame may still be queued) and where each ends
	// in wq.
	wmu     sync.Mutex
	writing bool // a caller is writing the queue
	werr    error
	wq      []byte
	wids    []uint64
	wends   []int
	wspare  []byte // the previous write's buffer, reused

	// The read buffer: only the holder of the read role touches it. Bytes
	// rbuf[r:w] are read and not yet consumed; a frame cut by a deadline
	// stays here for the next reader.
	rbuf []byte
	r, w int

	sessions *sessionHolds // the session holds taken on this connection
}

func newConn(nc net.Conn, maxRead int) *conn {
	return &conn{
		nc:      nc,
		maxRead: maxRead,
		pending: make(map[uint64]*call),
		done:    make(chan struct{}),
		rbuf:    make([]byte, readBufSize),

		sessions: newSessionHolds(),
	}
}

// register adds c to the calls waiting for an answer.
func (cn *conn) register(c *call) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return cn.err
	}
	cn.pending[c.id] = c
	return nil
}

// send queues frame (c's request) and, if no write is in progress, writes
// the queue until it is empty. The frame is copied: the caller may reuse it.
// A write that does not finish by deadline fails the conn: a half-written
// frame would corrupt the stream. The calls whose frames did not wholly
// reach the socket are marked unsent.
func (cn *conn) send(c *call, frame []byte, deadline time.Time) {
	if cn.isDead() {
		c.unsent.Store(true) // nothing goes out on a failed connection
		return
	}
	cn.wmu.Lock()
	if cn.werr != nil {
		cn.wmu.Unlock()
		c.unsent.Store(true)
		return
	}
	cn.wq = append(cn.wq, frame...)
	cn.wids = append(cn.wids, c.id)
	cn.wends = append(cn.wends, len(cn.wq))
	if cn.writing {
		cn.wmu.Unlock()
		return
	}
	cn.writing = true
	var ids []uint64
	var ends []int
	for {
		buf := cn.wq
		ids, cn.wids = cn.wids, ids[:0]
		ends, cn.wends = cn.wends, ends[:0]
		cn.wq = cn.wspare[:0]
		cn.wmu.Unlock()

		err := cn.failed()
		n := 0
		if err == nil {
			_ = cn.nc.SetWriteDeadline(deadline)
			n, err = cn.nc.Write(buf)
			if err != nil {
				err = fmt.Errorf("writing to holdfastd: %w", err)
			}
		}

		cn.wmu.Lock()
		if err != nil {
			cn.werr = err
			var unsent []uint64
			for i, id := range ids {
				if ends[i] > n {
					unsent = append(unsent, id)
					if id == c.id {
						c.unsent.Store(true) // ours: c is live whatever pending says
					}
				}
			}
			unsent = append(unsent, cn.wids...)
			cn.markUnsent(unsent)
			cn.wq, cn.wids, cn.wends = nil, nil, nil
			cn.writing = false
			cn.wmu.Unlock()
			cn.fail(err)
			return
		}
		if cap(buf) <= 64<<10 {
			cn.wspare = buf[:0]
		} else {
			cn.wspare = nil
		}
		if len(cn.wq) == 0 {
			// Keep the slices for the next write.
			cn.wids, cn.wends = ids[:0], ends[:0]
			cn.writing = false
			cn.wmu.Unlock()
			return
		}
	}
}

// markUnsent marks the calls still waiting among ids as never wholly sent,
// before the connection is failed.
func (cn *conn) markUnsent(ids []uint64) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	for _, id := range ids {
		if c, ok := cn.pending[id]; ok {
			c.unsent.Store(true)
		}
	}
}

func (cn *conn) failed() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

func (cn *conn) isDead() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

// fail records why the conn died (first reason wins), closes the socket,
// wakes every caller waiting on it and marks its session holds lost (the
// daemon releases them when it sees the connection close).
func (cn *conn) fail(err error) {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.err = err
	cn.pending = nil
	close(cn.done)
	cn.mu.Unlock()
	_ = cn.nc.Close()
	cn.sessions.connectionEnded(err)
}

// waitOutcome says how a wait for an answer ended.
type waitOutcome int

const (
	answered waitOutcome = iota
	timedOut             // the call's deadline passed or its context was cancelled
	connLost             // the connection failed after the frame was sent
	notSent              // the connection failed before the frame was wholly sent
)

// await waits for c's answer until deadline (and ctx): as a follower while
// another goroutine reads, as the reader otherwise. hasDeadline says ctx
// carries deadline itself (else the wait needs a timer of its own). On
// return c has left pending and may be recycled. err is the connection's
// failure for connLost and notSent.
func (cn *conn) await(ctx context.Context, c *call, deadline time.Time, hasDeadline bool) (*pb.Response, waitOutcome, error) {
	cn.mu.Lock()
	if c.resp != nil {
		resp := c.resp
		cn.mu.Unlock()
		return resp, answered, nil
	}
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		return cn.lostOutcome(c, err)
	}
	if !cn.reading {
		cn.reading = true
		cn.mu.Unlock()
		return cn.lead(ctx, c, deadline)
	}
	cn.mu.Unlock()

	var timer *time.Timer
	var timeout <-chan time.Time
	if !hasDeadline {
		timer = getTimer(time.Until(deadline))
		timeout = timer.C
		defer putTimer(timer)
	}
	for {
		select {
		case <-c.wake:
			cn.mu.Lock()
			if c.resp != nil {
				resp := c.resp
				cn.mu.Unlock()
				return resp, answered, nil
			}
			if c.lead {
				cn.mu.Unlock()
				return cn.lead(ctx, c, deadline)
			}
			cn.mu.Unlock()
		case <-cn.done:
			cn.mu.Lock()
			resp := c.resp // an answer that beat the failure still counts
			err := cn.err
			cn.mu.Unlock()
			if resp != nil {
				return resp, answered, nil
			}
			return cn.lostOutcome(c, err)
		case <-ctx.Done():
			return cn.giveUp(c)
		case <-timeout:
			return cn.giveUp(c)
		}
	}
}

func (cn *conn) lostOutcome(c *call, err error) (*pb.Response, waitOutcome, error) {
	if c.unsent.Load() {
		return nil, notSent, err
	}
	return nil, connLost, err
}

// giveUp takes a follower whose time is up out of pending, passing the read
// role on if it had just been granted it. An answer that came meanwhile
// still counts.
func (cn *conn) giveUp(c *call) (*pb.Response, waitOutcome, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if c.resp != nil {
		return c.resp, answered, nil
	}
	if cn.err != nil {
		err := cn.err
		if c.unsent.Load() {
			return nil, notSent, err
		}
		return nil, connLost, err
	}
	delete(cn.pending, c.id)
	if c.lead {
		cn.handOffLocked()
	}
	return nil, timedOut, nil
}

// lead reads as the holder of the read role until c's answer comes,
// dispatching the others' answers and session events, then hands the role
// on.
func (cn *conn) lead(ctx context.Context, c *call, deadline time.Time) (*pb.Response, waitOutcome, error) {
	_ = cn.nc.SetReadDeadline(deadline)
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, cn.interruptRead)
		defer stop()
	}
	for {
		resp, err := cn.readResponse()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && cn.failed() == nil {
				if ctx.Err() != nil || !time.Now().Before(deadline) {
					cn.mu.Lock()
					delete(cn.pending, c.id)
					cn.handOffLocked()
					cn.mu.Unlock()
					return nil, timedOut, nil
				}
				// A stale wake-up meant for an earlier reader.
				_ = cn.nc.SetReadDeadline(deadline)
				continue
			}
			cn.fail(err)
			cn.mu.Lock()
			err = cn.err
			cn.mu.Unlock()
			return cn.lostOutcome(c, err)
		}
		if resp == nil { // a session event
			continue
		}
		cn.mu.Lock()
		if resp.GetId() == c.id {
			delete(cn.pending, c.id)
			cn.handOffLocked()
			cn.mu.Unlock()
			return resp, answered, nil
		}
		cn.deliverLocked(resp)
		cn.mu.Unlock()
	}
}

// interruptRead wakes the reader blocked on the socket (a leader whose
// context was cancelled).
func (cn *conn) interruptRead() { _ = cn.nc.SetReadDeadline(aLongTimeAgo) }

// deliverLocked hands resp to its caller; an answer nobody waits for (the
// caller gave up) is dropped.
func (cn *conn) deliverLocked(resp *pb.Response) {
	w, ok := cn.pending[resp.GetId()]
	if !ok {
		return
	}
	delete(cn.pending, resp.GetId())
	w.resp = resp
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// handOffLocked releases the read role: to a caller still waiting for its
// answer, else to the background reader while the connection has session
// holds, else to nobody.
func (cn *conn) handOffLocked() {
	cn.reading = false
	if cn.err != nil {
		return
	}
	for _, w := range cn.pending {
		w.lead = true
		cn.reading = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	if cn.sessions.active() {
		cn.reading = true
		go cn.readInBackground()
	}
}

// watchSessions starts the background reader if nobody reads: called when a
// session hold was registered on the connection.
func (cn *conn) watchSessions() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.reading || cn.err != nil {
		return
	}
	cn.reading = true
	go cn.readInBackground()
}

// readInBackground holds the read role while the connection has session
// holds and no caller waits, then hands it on.
func (cn *conn) readInBackground() {
	_ = cn.nc.SetReadDeadline(time.Time{})
	for {
		resp, err := cn.readResponse()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && cn.failed() == nil {
				_ = cn.nc.SetReadDeadline(time.Time{}) // a stale wake-up
				continue
			}
			cn.fail(err)
			return
		}
		cn.mu.Lock()
		if resp != nil {
			cn.deliverLocked(resp)
		}
		if len(cn.pending) > 0 || !cn.sessions.active() {
			// A caller waits (it reads from now on), or no session hold
			// is left to watch.
			cn.handOffLocked()
			cn.mu.Unlock()
			return
		}
		cn.mu.Unlock()
	}
}

// readResponse reads the next frame: a response for a caller, or nil after
// dispatching a session event. The errors it returns are fatal to the
// connection, except a read deadline (os.ErrDeadlineExceeded).
func (cn *conn) readResponse() (*pb.Response, error) {
	body, err := cn.readFrame()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, err
		}
		if errors.Is(err, net.ErrClosed) {
			err = errors.New("connection closed")
		}
		return nil, fmt.Errorf("reading from holdfastd: %w", err)
	}
	resp := &pb.Response{}
	if err := proto.Unmarshal(body, resp); err != nil {
		return nil, fmt.Errorf("undecodable response from holdfastd: %w", err)
	}
	if isSessionEvent(resp) && resp.GetCode() == CodeOK {
		// Unsolicited: session holds of this connection were lost.
		cn.sessions.onEvent(resp.GetSessionEvent())
		return nil, nil
	}
	if resp.GetId() == 0 {
		// Any other id-0 frame is fatal: the daemon could not tie its
		// answer to a request (it could not decode our frame); it closes
		// the connection after this.
		return nil, &Error{
			Code:          resp.GetCode(),
			Message:       "daemon rejected the connection: " + resp.GetMessage(),
			CorrelationID: resp.GetCorrelationId(),
		}
	}
	return resp, nil
}

// readFrame returns the next frame's body from the read buffer, reading the
// socket as needed. The body is valid until the next readFrame. A read cut
// by a deadline keeps what it read.
func (cn *conn) readFrame() ([]byte, error) {
	if cn.r == cn.w {
		cn.r, cn.w = 0, 0
		if len(cn.rbuf) > readBufSize {
			cn.rbuf = make([]byte, readBufSize) // let a large frame's buffer go
		}
	}
	for {
		if avail := cn.w - cn.r; avail >= frameHeaderLen {
			n := binary.BigEndian.Uint32(cn.rbuf[cn.r:])
			if cn.maxRead > 0 && int64(n) > int64(cn.maxRead) {
				return nil, fmt.Errorf("daemon sent a %d-byte frame, above the %d-byte read limit", n, cn.maxRead)
			}
			need := frameHeaderLen + int(n)
			if avail >= need {
				body := cn.rbuf[cn.r+frameHeaderLen : cn.r+need]
				cn.r += need
				return body, nil
			}
			if cn.r+need > len(cn.rbuf) {
				cn.makeRoom(need)
			}
		} else if cn.r+frameHeaderLen > len(cn.rbuf) {
			cn.makeRoom(frameHeaderLen)
		}
		m, err := cn.nc.Read(cn.rbuf[cn.w:])
		cn.w += m
		if err != nil {
			if m > 0 && !errors.Is(err, os.ErrDeadlineExceeded) {
				continue // use what came; the error comes again
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, err
			}
			if errors.Is(err, io.EOF) && cn.w > cn.r {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// makeRoom moves the unread bytes to the front of the buffer, growing it
// when need bytes would not fit.
func (cn *conn) makeRoom(need int) {
	buf := cn.rbuf
	if need > len(buf) {
		buf = make([]byte, need)
	}
	cn.w = copy(buf, cn.rbuf[cn.r:cn.w])
	cn.r = 0
	cn.rbuf = buf
}

var timerPool sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop() // Go >= 1.23: no stale value is left in the channel
	timerPool.Put(t)
}
