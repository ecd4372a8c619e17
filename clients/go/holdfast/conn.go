package holdfast

// One connection to the daemon: a writer lock, a reader goroutine and the
// table of requests in flight. A conn is never reused after it fails; the
// Client dials a new one.

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"google.golang.org/protobuf/proto"
)

type conn struct {
	nc      net.Conn
	maxRead int

	wmu sync.Mutex // one frame on the wire at a time

	mu      sync.Mutex
	pending map[uint64]chan *pb.Response // buffered(1); the reader never blocks
	err     error                        // why the conn died; set once, under mu
	done    chan struct{}                // closed when err is set

	sessions *sessionHolds // the session holds taken on this connection
}

func newConn(nc net.Conn, maxRead int) *conn {
	cn := &conn{
		nc:      nc,
		maxRead: maxRead,
		pending: make(map[uint64]chan *pb.Response),
		done:    make(chan struct{}),

		sessions: newSessionHolds(),
	}
	go cn.readLoop()
	return cn
}

// register reserves a slot for the response to request id.
func (cn *conn) register(id uint64) (chan *pb.Response, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return nil, cn.err
	}
	ch := make(chan *pb.Response, 1)
	cn.pending[id] = ch
	return ch, nil
}

// unregister forgets id; a response that still arrives for it is dropped.
func (cn *conn) unregister(id uint64) {
	cn.mu.Lock()
	delete(cn.pending, id)
	cn.mu.Unlock()
}

// write sends one complete frame. A write that does not finish by deadline
// fails the conn: a half-written frame would corrupt the stream.
func (cn *conn) write(frame []byte, deadline time.Time) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if err := cn.failed(); err != nil {
		return err
	}
	_ = cn.nc.SetWriteDeadline(deadline)
	_, err := cn.nc.Write(frame)
	if err != nil {
		err = fmt.Errorf("writing to holdfastd: %w", err)
		cn.fail(err)
	}
	return err
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

func (cn *conn) readLoop() {
	for {
		body, err := readFrame(cn.nc, cn.maxRead)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				err = errors.New("connection closed")
			}
			cn.fail(fmt.Errorf("reading from holdfastd: %w", err))
			return
		}
		resp := &pb.Response{}
		if err := proto.Unmarshal(body, resp); err != nil {
			cn.fail(fmt.Errorf("undecodable response from holdfastd: %w", err))
			return
		}
		if isSessionEvent(resp) && resp.GetCode() == CodeOK {
			// Unsolicited: session holds of this connection were lost.
			cn.sessions.onEvent(resp.GetSessionEvent())
			continue
		}
		if resp.GetId() == 0 {
			// Any other id-0 frame is fatal: the daemon could not tie its
			// answer to a request (it could not decode our frame); it
			// closes the connection after this.
			cn.fail(&Error{
				Code:          resp.GetCode(),
				Message:       "daemon rejected the connection: " + resp.GetMessage(),
				CorrelationID: resp.GetCorrelationId(),
			})
			return
		}
		cn.mu.Lock()
		ch, ok := cn.pending[resp.GetId()]
		if ok {
			delete(cn.pending, resp.GetId())
		}
		cn.mu.Unlock()
		if ok {
			ch <- resp
		}
		// else: the caller gave up (deadline or cancel); drop the late answer.
	}
}
