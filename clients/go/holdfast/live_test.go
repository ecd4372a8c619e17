package holdfast

// Live tests against a real holdfastd (with Redis, and PostgreSQL for
// Confirm). They only ever talk to a stack made for tests (the client
// contract, protos/contract/client-contract.md): they stop and restart its
// daemon and confirm into its `seat` namespace, so HOLDFAST_SOCKET, which
// points at a user's real daemon, is ignored. The stack is the directory in
// HOLDFAST_TEST_STACK (where `tools/devstack.sh up DIR` runs; the client test
// scripts start one and set it), else a private stack started with
// tools/devstack.sh (or the script named by HOLDFAST_DEVSTACK) in a temp dir
// and stopped when the package's tests end; the tests are skipped when
// holdfastd is not built.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const testStackEnv = "HOLDFAST_TEST_STACK"

var live struct {
	once    sync.Once
	socket  string
	dir     string // the stack's devstack dir
	owned   bool   // this process started the stack (and stops it)
	script  string
	skip    string
	failure string
}

// stackChoice says where the live tests' daemon comes from: "given" (the
// HOLDFAST_TEST_STACK dir), "own" (start one), or "skip" with the reason.
// Never from HOLDFAST_SOCKET.
func stackChoice(getenv func(string) string, repo string) (kind, arg string) {
	if dir := getenv(testStackEnv); dir != "" {
		return "given", dir
	}
	holdfastd := getenv("HOLDFASTD")
	if holdfastd == "" {
		holdfastd = filepath.Join(repo, "build", "daemon", "holdfastd")
	}
	if st, err := os.Stat(holdfastd); err != nil || st.Mode()&0o111 == 0 {
		return "skip", fmt.Sprintf("live tests start their own stack, but %s is not built (tools/build.sh), and %s is unset", holdfastd, testStackEnv)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "skip", "live tests start their own stack, but redis-server is not installed"
	}
	return "own", ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	if live.owned {
		if out, err := devstack("down", live.dir); err != nil {
			fmt.Fprintf(os.Stderr, "devstack down %s: %v\n%s\n", live.dir, err, out)
		}
		_ = os.RemoveAll(live.dir)
	}
	os.Exit(code)
}

func devstack(cmd, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", live.script, cmd, dir).CombinedOutput()
	return string(out), err
}

// testNamespace is the confirmable namespace the dev stack configures.
func testNamespace() string {
	if ns := os.Getenv("HOLDFAST_TEST_NAMESPACE"); ns != "" {
		return ns
	}
	return "seat"
}

// liveSocket returns the socket of a running daemon, starting the dev stack
// on first use.
func liveSocket(t *testing.T) string {
	t.Helper()
	live.once.Do(func() {
		live.script = os.Getenv("HOLDFAST_DEVSTACK") // an alternative stack script
		if live.script == "" {
			live.script = filepath.Join(repoRoot(t), "tools", "devstack.sh")
		}
		kind, arg := stackChoice(os.Getenv, repoRoot(t))
		switch kind {
		case "skip":
			live.skip = arg
			return
		case "given":
			live.dir = arg
			live.socket = filepath.Join(arg, "holdfast.sock")
			if err := waitReady(live.socket, 60*time.Second); err != nil {
				live.failure = fmt.Sprintf("%s=%s: daemon at %s not ready: %v", testStackEnv, arg, live.socket, err)
			}
			return
		}
		if _, err := os.Stat(live.script); err != nil {
			live.skip = "no stack script: " + live.script + " does not exist"
			return
		}
		dir, err := os.MkdirTemp("", "hf-go-live-")
		if err != nil {
			live.failure = err.Error()
			return
		}
		live.dir = dir
		live.owned = true
		if out, err := devstack("up", dir); err != nil {
			live.failure = fmt.Sprintf("tools/devstack.sh up %s: %v\n%s\n%s", dir, err, out, logTail(dir))
			return
		}
		live.socket = filepath.Join(dir, "holdfast.sock")
		if err := waitReady(live.socket, 60*time.Second); err != nil {
			live.failure = fmt.Sprintf("daemon at %s never became ready: %v\n%s", live.socket, err, logTail(dir))
		}
	})
	if live.skip != "" {
		t.Skip(live.skip)
	}
	if live.failure != "" {
		t.Fatal(live.failure)
	}
	return live.socket
}

func logTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "holdfastd.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "holdfastd.log (tail):\n" + strings.Join(lines, "\n")
}

// waitReady polls Health until the daemon says ready or the time is up.
func waitReady(socket string, within time.Duration) error {
	c := New(socket)
	defer c.Close()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		h, err := c.Health(ctx)
		cancel()
		if err == nil && h.GetReady() {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("health: ready=false redis=%s postgres=%s", h.GetRedis(), h.GetPostgres())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// managed skips tests that must stop or restart the daemon unless the stack
// has a directory to do it in (always true now: the live tests never use a
// daemon that is not a test stack).
func managed(t *testing.T) {
	t.Helper()
	if live.dir == "" {
		t.Skip("needs a test stack's directory")
	}
}

func liveClient(t *testing.T) *Client {
	t.Helper()
	socket := liveSocket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var partitionUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// partitionFor gives each test (and each run) its own partition, so runs
// against a shared daemon never see each other's holds.
func partitionFor(t *testing.T) string {
	return fmt.Sprintf("go-%s-%d", partitionUnsafe.ReplaceAllString(t.Name(), "-"), time.Now().UnixNano())
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestLiveHealth(t *testing.T) {
	c := liveClient(t)
	h, err := c.Health(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !h.GetLive() || !h.GetReady() || h.GetRedis() != "up" || h.GetVersion() == "" {
		t.Fatalf("unexpected health: %v", h)
	}
}

func TestLiveHoldExtendRelease(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	ids := Seats{"E7", "E8", "E9"}

	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, ids, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token() == "" || h.Fence == 0 || h.TTL != 30*time.Second || h.Degraded {
		t.Fatalf("unexpected grant: %v (token empty: %v)", h, h.Token() == "")
	}
	if strings.Contains(h.String(), h.Token()) {
		t.Fatal("Hold.String leaks the token")
	}
	// Fence travels inside the token: "<fence>.<random>".
	if !strings.HasPrefix(h.Token(), fmt.Sprintf("%d.", h.Fence)) {
		t.Fatalf("token does not start with the fence %d", h.Fence)
	}

	st, err := h.Status(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 3 {
		t.Fatalf("status: want 3 resources, got %v", st)
	}
	for _, r := range st.Resources {
		if r.State != StateHeld || !r.Owned || r.TTL <= 0 || r.TTL > 30*time.Second {
			t.Fatalf("status of %s: %+v", r.ID, r)
		}
	}

	ttl, err := h.Extend(ctxT(t, 5*time.Second), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ttl != 2*time.Minute {
		t.Fatalf("extend applied %v, want 2m", ttl)
	}
	st, err = c.Status(ctxT(t, 5*time.Second), ns, part, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.TTL <= 30*time.Second || r.Owned { // Owned needs the token
			t.Fatalf("after extend, status of %s: %+v", r.ID, r)
		}
	}

	n, err := h.Release(ctxT(t, 5*time.Second))
	if err != nil || n != 3 {
		t.Fatalf("release: n=%d err=%v", n, err)
	}
	if _, err := h.Release(ctxT(t, 5*time.Second)); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second release: want ErrNotHeld, got %v", err)
	}
	if _, err := h.Extend(ctxT(t, 5*time.Second), time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend after release: want ErrNotHeld, got %v", err)
	}
	st, err = c.Status(ctxT(t, 5*time.Second), ns, part, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.State != StateFree {
			t.Fatalf("after release, %s is %v", r.ID, r.State)
		}
	}
}

func TestLiveInvalidArgument(t *testing.T) {
	c := liveClient(t)
	_, err := c.Hold(ctxT(t, 5*time.Second), testNamespace(), partitionFor(t), Seats{"E7", "bad id"}, 0)
	var he *Error
	if !errors.As(err, &he) || he.Code != CodeInvalidArgument || he.Field == "" {
		t.Fatalf("want INVALID_ARGUMENT naming a field, got %v", err)
	}
	if _, err := c.Hold(ctxT(t, 5*time.Second), "no-such-namespace", partitionFor(t), Seats{"E7"}, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown namespace: want ErrNotFound, got %v", err)
	}
}

func TestLiveContention(t *testing.T) {
	a, b := liveClient(t), liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	ids := Seats{"E7", "E8", "E9"}

	// Two holders race for the same seats: exactly one wins.
	type result struct {
		h   *Hold
		err error
	}
	results := make(chan result, 2)
	for _, c := range []*Client{a, b} {
		go func(c *Client) {
			h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, ids, 30*time.Second)
			results <- result{h, err}
		}(c)
	}
	r1, r2 := <-results, <-results
	if (r1.err == nil) == (r2.err == nil) {
		t.Fatalf("want exactly one winner, got %v and %v", r1.err, r2.err)
	}
	winner, loser := r1, r2
	if r1.err != nil {
		winner, loser = r2, r1
	}
	if !IsHeldByAnother(loser.err) {
		t.Fatalf("loser: want ErrHeldByAnother, got %v", loser.err)
	}
	if rid := ResourceOf(loser.err); rid != "E7" && rid != "E8" && rid != "E9" {
		t.Fatalf("loser's error names resource %q", rid)
	}
	if _, err := winner.h.Release(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}

	// All or nothing: a hold overlapping a held seat takes none of them.
	e8, err := a.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"E8"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithCorrelationID(ctxT(t, 5*time.Second), "go-contention-check")
	_, err = b.Hold(ctx, ns, part, ids, 30*time.Second)
	var he *Error
	if !errors.As(err, &he) || he.Code != CodeHeldByAnother || he.ResourceID != "E8" {
		t.Fatalf("want HELD_BY_ANOTHER on E8, got %v", err)
	}
	if he.CorrelationID != "go-contention-check" {
		t.Fatalf("correlation id not echoed: %q", he.CorrelationID)
	}
	st, err := b.Status(ctxT(t, 5*time.Second), ns, part, Seats{"E7", "E9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.State != StateFree {
			t.Fatalf("failed all-or-nothing hold left %s %v", r.ID, r.State)
		}
	}
	// Another token cannot release or extend it.
	stranger := b.Resume(ns, part, Seats{"E8"}, "1.AAAAAAAAAAAAAAAAAAAAAA")
	if _, err := stranger.Release(ctxT(t, 5*time.Second)); err == nil {
		t.Fatal("a stranger's token released the hold")
	}
	if _, err := e8.Release(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("owner release after stranger attempt: %v", err)
	}
	h, err := b.Hold(ctxT(t, 5*time.Second), ns, part, ids, 30*time.Second)
	if err != nil {
		t.Fatalf("hold after release: %v", err)
	}
	if h.Fence <= e8.Fence {
		t.Fatalf("fence did not rise: %d then %d", e8.Fence, h.Fence)
	}
	_, _ = h.Release(ctxT(t, 5*time.Second))
}

func TestLiveExpiry(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"A1"}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // well past the TTL
	if _, err := h.Extend(ctxT(t, 5*time.Second), time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend of an expired hold: want ErrNotHeld, got %v", err)
	}
	h2, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"A1"}, time.Minute)
	if err != nil {
		t.Fatalf("hold after expiry: %v", err)
	}
	_, _ = h2.Release(ctxT(t, 5*time.Second))
}

func TestLiveManyInFlightOnOneConnection(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	fences := make(chan uint64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h, err := c.Hold(ctxT(t, 10*time.Second), ns, part, Seats{fmt.Sprintf("S%d", i)}, 30*time.Second)
			if err != nil {
				errs <- err
				return
			}
			fences <- h.Fence
			if n, err := h.Release(ctxT(t, 10*time.Second)); err != nil || n != 1 {
				errs <- fmt.Errorf("release S%d: n=%d err=%v", i, n, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	close(fences)
	for err := range errs {
		t.Error(err)
	}
	seen := map[uint64]bool{}
	for f := range fences {
		if seen[f] {
			t.Fatalf("fence %d granted twice in one partition", f)
		}
		seen[f] = true
	}
}

// skipIfConfirmUnavailable skips when this daemon build has no Confirm yet
// (the confirm issue has not landed, or PostgreSQL is not configured).
func skipIfConfirmUnavailable(t *testing.T, err error) {
	t.Helper()
	switch CodeOf(err) {
	case CodeUnimplemented, CodeFailedPrecondition:
		t.Skipf("daemon does not support Confirm here yet: %v", err)
	}
}

func TestLiveConfirmAndIdempotentRetry(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	ids := Seats{"E7", "E8", "E9"}
	key := "order-" + part

	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, ids, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	opts := ConfirmOptions{IdempotencyKey: key, Reference: "customer-42", Payload: []byte{0, 1, 2, 0xff}}
	conf, err := h.Confirm(ctxT(t, 10*time.Second), opts)
	skipIfConfirmUnavailable(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if conf.Replayed || conf.Fence != h.Fence || len(conf.Claims) != 3 {
		t.Fatalf("first confirm: %+v (hold fence %d)", conf, h.Fence)
	}
	var claimed []string
	for _, cl := range conf.Claims {
		claimed = append(claimed, cl.ResourceID)
		if cl.Fence != h.Fence || cl.Reference != "customer-42" || cl.ConfirmedAt.IsZero() {
			t.Fatalf("claim %+v", cl)
		}
	}
	sort.Strings(claimed)
	if strings.Join(claimed, ",") != "E7,E8,E9" {
		t.Fatalf("claimed %v", claimed)
	}

	// The caller lost the answer and retries with the same key: same result,
	// marked as a replay, no second claim.
	again, err := h.Confirm(ctxT(t, 10*time.Second), opts)
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if !again.Replayed || again.Fence != conf.Fence || len(again.Claims) != 3 {
		t.Fatalf("retry: %+v", again)
	}

	// Sold seats cannot be held.
	if _, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"E8"}, 0); !errors.Is(err, ErrConfirmed) {
		t.Fatalf("hold on a confirmed seat: want ErrConfirmed, got %v", err)
	}

	// Cancel frees them again (also idempotent by key).
	cancelKey := "refund-" + part
	res, err := c.Cancel(ctxT(t, 10*time.Second), ns, part, ids, CancelOptions{IdempotencyKey: cancelKey, Reference: "customer-42"})
	skipIfConfirmUnavailable(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cancelled != 3 || res.Replayed {
		t.Fatalf("cancel: %+v", res)
	}
	res, err = c.Cancel(ctxT(t, 10*time.Second), ns, part, ids, CancelOptions{IdempotencyKey: cancelKey, Reference: "customer-42"})
	if err != nil || !res.Replayed {
		t.Fatalf("cancel retry: %+v %v", res, err)
	}
	h2, err := c.Hold(ctxT(t, 5*time.Second), ns, part, ids, 0)
	if err != nil {
		t.Fatalf("hold after cancel: %v", err)
	}
	_, _ = h2.Release(ctxT(t, 5*time.Second))
}

func TestLiveConfirmAfterReleaseIsHoldLost(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)
	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"B1"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Release(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = h.Confirm(ctxT(t, 10*time.Second), ConfirmOptions{IdempotencyKey: "lost-" + part})
	skipIfConfirmUnavailable(t, err)
	if !errors.Is(err, ErrHoldLost) {
		t.Fatalf("confirm of a released hold: want ErrHoldLost, got %v", err)
	}
}

func TestLiveDeadlineExceeded(t *testing.T) {
	c := liveClient(t)
	ns, part := testNamespace(), partitionFor(t)

	t.Run("expired before sending", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		defer cancel()
		_, err := c.Hold(ctx, ns, part, Seats{"D1"}, 0)
		if !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want ErrDeadlineExceeded, got %v", err)
		}
		st, err := c.Status(ctxT(t, 5*time.Second), ns, part, Seats{"D1"})
		if err != nil || st.Resources[0].State != StateFree {
			t.Fatalf("a request that missed its deadline before sending took a hold: %v %v", st, err)
		}
	})

	t.Run("daemon stalls", func(t *testing.T) {
		managed(t)
		if _, err := c.Health(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		pid := daemonPID(t, c)
		// Freeze the daemon so the answer cannot come in time; always thaw.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", pid, err)
		}
		thawed := false
		thaw := func() {
			if !thawed {
				thawed = true
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
		defer thaw()
		_, err := c.Hold(ctxT(t, 300*time.Millisecond), ns, part, Seats{"D2"}, 30*time.Second)
		if !errors.Is(err, ErrDeadlineExceeded) {
			t.Fatalf("want ErrDeadlineExceeded from a frozen daemon, got %v", err)
		}
		thaw()
		// The daemon now answers (or drops) the late request; whatever it
		// says must not reach the next caller, and the connection stays usable.
		h, err := c.Health(ctxT(t, 10*time.Second))
		if err != nil || !h.GetLive() {
			t.Fatalf("health after the stall: %v %v", h, err)
		}
	})
}

// daemonPID asks the kernel which process is on the other end of the
// client's socket.
func daemonPID(t *testing.T, c *Client) int {
	t.Helper()
	cn, err := c.current()
	if err != nil || cn == nil {
		t.Fatalf("no live connection: %v", err)
	}
	uc, ok := cn.nc.(*net.UnixConn)
	if !ok {
		t.Fatalf("connection is %T", cn.nc)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		t.Fatal(err)
	}
	if credErr != nil {
		t.Fatal(credErr)
	}
	return int(cred.Pid)
}

func TestLiveDaemonRestart(t *testing.T) {
	c := liveClient(t)
	managed(t)
	ns, part := testNamespace(), partitionFor(t)

	h, err := c.Hold(ctxT(t, 5*time.Second), ns, part, Seats{"R1"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = h

	if out, err := devstack("down", live.dir); err != nil {
		t.Fatalf("devstack down: %v\n%s", err, out)
	}
	_, err = c.Health(ctxT(t, 500*time.Millisecond))
	if !IsUnavailable(err) && !IsDeadlineExceeded(err) {
		t.Fatalf("with the daemon down: want unavailable, got %v", err)
	}
	if out, err := devstack("up", live.dir); err != nil {
		t.Fatalf("devstack up: %v\n%s\n%s", err, out, logTail(live.dir))
	}
	if err := waitReady(live.socket, 60*time.Second); err != nil {
		t.Fatalf("daemon not ready after restart: %v", err)
	}
	// Same Client, new connection under the hood.
	h2, err := c.Hold(ctxT(t, 10*time.Second), ns, part, Seats{"R2"}, 30*time.Second)
	if err != nil {
		t.Fatalf("hold after restart: %v", err)
	}
	if _, err := h2.Release(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestLiveClosedClient(t *testing.T) {
	c := liveClient(t)
	if _, err := c.Health(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err := c.Hold(ctxT(t, 5*time.Second), testNamespace(), partitionFor(t), Seats{"C1"}, 0)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("want ErrClosed, got %v", err)
	}
}
