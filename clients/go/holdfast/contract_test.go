package holdfast

// The client contract (protos/contract/contract.json): this client's
// constants and behaviour, checked against the file every client reads.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
)

type contract struct {
	Socket struct {
		DefaultPath string `json:"default_path"`
		Env         string `json:"env"`
	} `json:"socket"`
	Timeout struct {
		DefaultMs         int64 `json:"default_ms"`
		TimeoutMsExamples []struct {
			LeftUs    int64  `json:"left_us"`
			TimeoutMs uint32 `json:"timeout_ms"`
		} `json:"timeout_ms_examples"`
	} `json:"timeout"`
	ReconnectBackoff struct {
		InitialMs       int64   `json:"initial_ms"`
		Multiplier      int64   `json:"multiplier"`
		MaxMs           int64   `json:"max_ms"`
		Jitter          float64 `json:"jitter"`
		NominalExamples []struct {
			Attempt int   `json:"attempt"`
			Ms      int64 `json:"ms"`
		} `json:"nominal_examples"`
	} `json:"reconnect_backoff"`
	Codes []struct {
		Value     int32  `json:"value"`
		Name      string `json:"name"`
		Retryable bool   `json:"retryable"`
	} `json:"codes"`
	RetryableCodes []string `json:"retryable_codes"`
	CodeName       struct {
		UnknownExamples []struct {
			Value int32  `json:"value"`
			Name  string `json:"name"`
		} `json:"unknown_examples"`
	} `json:"code_name"`
	ScopeExit struct {
		SendsReleaseUnless         []string `json:"sends_release_unless"`
		QuietReleaseCodes          []string `json:"quiet_release_codes"`
		QuietWhenClientClosed      bool     `json:"quiet_when_client_closed"`
		FailedConfirmStillReleases bool     `json:"failed_confirm_still_releases"`
	} `json:"scope_exit"`
	Tests struct {
		IgnoredEnv []string `json:"ignored_env"`
		StackEnv   string   `json:"stack_env"`
	} `json:"tests"`
}

func loadContract(t *testing.T) contract {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "protos", "contract", "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c contract
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("contract.json: %v", err)
	}
	if len(c.Codes) == 0 || c.Timeout.DefaultMs == 0 {
		t.Fatal("contract.json: codes or timeout missing")
	}
	return c
}

func TestContractSocket(t *testing.T) {
	k := loadContract(t)
	if DefaultSocketPath != k.Socket.DefaultPath || SocketEnv != k.Socket.Env {
		t.Fatalf("DefaultSocketPath %q, SocketEnv %q; contract %q, %q", DefaultSocketPath, SocketEnv, k.Socket.DefaultPath, k.Socket.Env)
	}
	t.Setenv(k.Socket.Env, "")
	if got := New("").SocketPath(); got != k.Socket.DefaultPath {
		t.Fatalf("New(\"\") with %s empty: %q", k.Socket.Env, got)
	}
	t.Setenv(k.Socket.Env, "/tmp/from-env.sock")
	if got := New("").SocketPath(); got != "/tmp/from-env.sock" {
		t.Fatalf("New(\"\") with %s set: %q", k.Socket.Env, got)
	}
	if got := DefaultSocket(); got != "/tmp/from-env.sock" {
		t.Fatalf("DefaultSocket(): %q", got)
	}
	if got := New("/tmp/explicit.sock").SocketPath(); got != "/tmp/explicit.sock" {
		t.Fatalf("explicit path: %q", got)
	}
}

func TestContractTimeout(t *testing.T) {
	k := loadContract(t)
	if DefaultTimeout != time.Duration(k.Timeout.DefaultMs)*time.Millisecond {
		t.Fatalf("DefaultTimeout %v, contract %d ms", DefaultTimeout, k.Timeout.DefaultMs)
	}
	for _, ex := range k.Timeout.TimeoutMsExamples {
		if got := timeoutMs(time.Duration(ex.LeftUs) * time.Microsecond); got != ex.TimeoutMs {
			t.Errorf("timeoutMs(%d µs) = %d, want %d", ex.LeftUs, got, ex.TimeoutMs)
		}
	}

	// A call without a deadline sends the default as timeout_ms.
	sent := make(chan uint32, 1)
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		sent <- req.GetTimeoutMs()
		p.send(nc, okHealth(req))
	})
	c := New(p.path)
	defer c.Close()
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := int64(<-sent); got > k.Timeout.DefaultMs || got < k.Timeout.DefaultMs-500 {
		t.Fatalf("timeout_ms of a call without a deadline: %d, want about %d", got, k.Timeout.DefaultMs)
	}
}

func TestContractReconnectBackoff(t *testing.T) {
	b := loadContract(t).ReconnectBackoff
	if minDialBackoff != time.Duration(b.InitialMs)*time.Millisecond || maxDialBackoff != time.Duration(b.MaxMs)*time.Millisecond ||
		dialMultiplier != b.Multiplier || dialBackoffJitter != b.Jitter {
		t.Fatalf("backoff constants differ from the contract: %+v", b)
	}
	for _, ex := range b.NominalExamples {
		nominal := time.Duration(ex.Ms) * time.Millisecond
		if got := dialDelay(ex.Attempt, 0); got != nominal {
			t.Errorf("dialDelay(%d, 0) = %v, want %v", ex.Attempt, got, nominal)
		}
		low := dialDelay(ex.Attempt, 0.999999)
		if float64(low) < float64(nominal)*(1-b.Jitter)-1 || low >= nominal {
			t.Errorf("dialDelay(%d, ~1) = %v, outside [%v·(1-%g), %v)", ex.Attempt, low, nominal, b.Jitter, nominal)
		}
	}
}

func TestContractCodes(t *testing.T) {
	k := loadContract(t)
	if len(k.Codes) != len(pb.Code_name) {
		t.Fatalf("contract lists %d codes, holdfastpb has %d", len(k.Codes), len(pb.Code_name))
	}
	var retryable []string
	for _, c := range k.Codes {
		code := Code(c.Value)
		if pb.Code_name[c.Value] != "CODE_"+c.Name {
			t.Errorf("value %d is %s in holdfastpb, CODE_%s in the contract", c.Value, pb.Code_name[c.Value], c.Name)
		}
		if got := CodeName(code); got != c.Name {
			t.Errorf("CodeName(%d) = %q, want %q", c.Value, got, c.Name)
		}
		err := &Error{Op: "hold", Code: code, Message: "message"}
		if !strings.Contains(err.Error(), " "+c.Name+": message") {
			t.Errorf("Error() = %q, want it to name %s", err.Error(), c.Name)
		}
		if got := IsRetryable(fmt.Errorf("wrapped: %w", err)); got != c.Retryable {
			t.Errorf("IsRetryable(%s) = %v, want %v", c.Name, got, c.Retryable)
		}
		if IsRetryable(err) {
			retryable = append(retryable, c.Name)
		}
	}
	slices.Sort(retryable)
	if !reflect.DeepEqual(retryable, sorted(k.RetryableCodes)) {
		t.Errorf("retryable codes %v, contract %v", retryable, k.RetryableCodes)
	}
	for _, ex := range k.CodeName.UnknownExamples {
		if got := CodeName(Code(ex.Value)); got != ex.Name {
			t.Errorf("CodeName(%d) = %q, want %q", ex.Value, got, ex.Name)
		}
		if IsRetryable(&Error{Code: Code(ex.Value)}) {
			t.Errorf("unknown code %d is retryable", ex.Value)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{nil, ErrClosed, errors.New("plain"), fmt.Errorf("holdfast: hold: %w", ctx.Err())} {
		if IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = true", err)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// scopePeer grants holds, confirms, and answers releases with releaseCode
// (and confirms with confirmCode, when set); it records the methods it saw.
type scopePeer struct {
	*peer
	mu      sync.Mutex
	methods []string
}

func newScopePeer(t *testing.T, releaseCode, confirmCode Code) *scopePeer {
	sp := &scopePeer{}
	sp.peer = newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		resp := &pb.Response{Id: req.GetId(), Code: CodeOK}
		var method string
		switch m := req.GetMethod().(type) {
		case *pb.Request_Hold:
			method = "hold"
			resp.Result = &pb.Response_Hold{Hold: &pb.HoldResponse{Token: "1.fake", Fence: 1, TtlMs: 60000}}
		case *pb.Request_Release:
			method = "release"
			resp.Code = releaseCode
			resp.Result = &pb.Response_Release{Release: &pb.ReleaseResponse{Released: uint32(len(m.Release.GetIds()))}}
		case *pb.Request_Confirm:
			method = "confirm"
			if confirmCode != 0 {
				resp.Code = confirmCode
			} else {
				resp.Result = &pb.Response_Confirm{Confirm: &pb.ConfirmResponse{Fence: 1}}
			}
		default:
			method = fmt.Sprintf("%T", m)
		}
		sp.mu.Lock()
		sp.methods = append(sp.methods, method)
		sp.mu.Unlock()
		p.send(nc, resp)
	})
	return sp
}

func (sp *scopePeer) seen() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.methods)
}

func TestContractScopeExit(t *testing.T) {
	k := loadContract(t).ScopeExit
	ctx := context.Background()

	for _, name := range k.QuietReleaseCodes {
		t.Run("quiet "+name, func(t *testing.T) {
			sp := newScopePeer(t, Code(pb.Code_value["CODE_"+name]), 0)
			c := New(sp.path)
			defer c.Close()
			h, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Close(); err != nil {
				t.Fatalf("Close with %s from the release: %v", name, err)
			}
			if err := h.Close(); err != nil { // done now: sends nothing
				t.Fatal(err)
			}
			if got := sp.seen(); !reflect.DeepEqual(got, []string{"hold", "release"}) {
				t.Fatalf("methods %v", got)
			}
		})
	}

	t.Run("other failures are returned", func(t *testing.T) {
		sp := newScopePeer(t, CodeUnavailable, 0)
		c := New(sp.path)
		defer c.Close()
		h, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); !IsUnavailable(err) || !IsRetryable(err) {
			t.Fatalf("Close: want UNAVAILABLE, got %v", err)
		}
	})

	t.Run("confirmed or released: nothing sent; failed confirm: released", func(t *testing.T) {
		if !reflect.DeepEqual(k.SendsReleaseUnless, []string{"released through the hold", "confirmed through the hold"}) || !k.FailedConfirmStillReleases {
			t.Fatalf("contract changed: %+v", k)
		}
		sp := newScopePeer(t, CodeOK, 0)
		c := New(sp.path)
		defer c.Close()
		h, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Confirm(ctx, ConfirmOptions{IdempotencyKey: "k1"}); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		h2, err := c.Hold(ctx, "seat", "p", Seats{"E8"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h2.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h2.Close(); err != nil {
			t.Fatal(err)
		}
		if got := sp.seen(); !reflect.DeepEqual(got, []string{"hold", "confirm", "hold", "release"}) {
			t.Fatalf("methods %v", got)
		}

		sp2 := newScopePeer(t, CodeOK, CodeConflict)
		c2 := New(sp2.path)
		defer c2.Close()
		h3, err := c2.Hold(ctx, "seat", "p", Seats{"E9"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h3.Confirm(ctx, ConfirmOptions{IdempotencyKey: "k2"}); !IsConflict(err) {
			t.Fatalf("confirm: want CONFLICT, got %v", err)
		}
		if err := h3.Close(); err != nil {
			t.Fatal(err)
		}
		if got := sp2.seen(); !reflect.DeepEqual(got, []string{"hold", "confirm", "release"}) {
			t.Fatalf("methods %v", got)
		}
	})

	t.Run("a closed client is not an error", func(t *testing.T) {
		if !k.QuietWhenClientClosed {
			t.Fatal("contract changed")
		}
		sp := newScopePeer(t, CodeOK, 0)
		c := New(sp.path)
		h, err := c.Hold(ctx, "seat", "p", Seats{"E7"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if err := h.Close(); err != nil {
			t.Fatalf("Close after the client closed: %v", err)
		}
	})
}

func TestContractLiveTestsIgnoreHoldfastSocket(t *testing.T) {
	k := loadContract(t)
	if testStackEnv != k.Tests.StackEnv || !reflect.DeepEqual(k.Tests.IgnoredEnv, []string{"HOLDFAST_SOCKET"}) {
		t.Fatalf("contract tests section: %+v", k.Tests)
	}
	env := map[string]string{"HOLDFAST_SOCKET": DefaultSocketPath}
	if kind, _ := stackChoice(func(k string) string { return env[k] }, repoRoot(t)); kind != "own" && kind != "skip" {
		t.Fatalf("with only HOLDFAST_SOCKET set: %s", kind)
	}
	env[testStackEnv] = "/tmp/stack"
	if kind, arg := stackChoice(func(k string) string { return env[k] }, repoRoot(t)); kind != "given" || arg != "/tmp/stack" {
		t.Fatalf("with %s set: %s %s", testStackEnv, kind, arg)
	}
}
