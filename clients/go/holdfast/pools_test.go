package holdfast

// Pool requests and answers on the wire, against the scripted peer of
// transport_test.go. Against the real daemon: live_pools_test.go.

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"google.golang.org/protobuf/proto"
)

// poolPeer answers every pool request as the daemon would, and records them.
func poolPeer(t *testing.T) (c *Client, lastReq func() *pb.Request, sent func() int) {
	var mu sync.Mutex
	var got []*pb.Request
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		mu.Lock()
		got = append(got, proto.Clone(req).(*pb.Request))
		mu.Unlock()
		resp := &pb.Response{Id: req.GetId(), Code: CodeOK}
		switch req.GetMethod().(type) {
		case *pb.Request_Hold:
			resp.Result = &pb.Response_Hold{Hold: &pb.HoldResponse{Token: poolToken, Fence: 77, TtlMs: 120000}}
		case *pb.Request_Extend:
			resp.Result = &pb.Response_Extend{Extend: &pb.ExtendResponse{TtlMs: 60000}}
		case *pb.Request_Status:
			resp.Result = &pb.Response_Status{Status: &pb.StatusResponse{Pools: []*pb.PoolStatus{
				{Pool: "adult", Capacity: 5000, Sold: 4990, Held: 7, Free: 3, Owned: 2, TtlMs: 59000},
				{Pool: "child", Capacity: 500, Sold: 499, Held: 1, Free: 0, Owned: 1, TtlMs: 59000}}}}
		case *pb.Request_Confirm:
			resp.Result = &pb.Response_Confirm{Confirm: &pb.ConfirmResponse{Fence: 77,
				Units: req.GetConfirm().GetUnits(), ConfirmedAtUnixMs: 1764412345678}}
		case *pb.Request_Cancel:
			resp.Result = &pb.Response_Cancel{Cancel: &pb.CancelResponse{Cancelled: 1,
				Units: req.GetCancel().GetUnits()}}
		case *pb.Request_SetCapacity:
			sc := req.GetSetCapacity()
			resp.Result = &pb.Response_SetCapacity{SetCapacity: &pb.SetCapacityResponse{Pool: &pb.PoolCapacity{
				Pool: sc.GetPool(), Capacity: sc.GetCapacity(), PartitionDefault: sc.GetPartitionDefault()}}}
		case *pb.Request_GetCapacity:
			resp.Result = &pb.Response_GetCapacity{GetCapacity: &pb.GetCapacityResponse{DefaultCapacity: 1,
				Pools: []*pb.PoolCapacity{{Pool: "adult", Capacity: 5000, Sold: 4992}, {Pool: "user-17", Capacity: 1, PartitionDefault: true}}}}
		case *pb.Request_Release:
			resp.Result = &pb.Response_Release{Release: &pb.ReleaseResponse{Released: 3}}
		}
		p.send(nc, resp)
	})
	c = New(p.path)
	t.Cleanup(func() { c.Close() })
	lastReq = func() *pb.Request {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}
	sent = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	return c, lastReq, sent
}

const poolToken = "77.cG9vbC1zZWNyZXQ"

var (
	wantTakes = []*pb.PoolTake{{Pool: "adult", Count: 2}, {Pool: "child", Count: 1}}
	wantPools = []string{"adult", "child"}
)

func TestPoolRequestsAndAnswers(t *testing.T) {
	c, lastReq, sent := poolPeer(t)
	ctx := context.Background()
	units := Units{"child": 1, "adult": 2} // sent in name order

	h, err := c.Hold(ctx, "ga", "show", units, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hr := lastReq().GetHold()
	if hr.GetNamespace() != "ga" || hr.GetPartition() != "show" || len(hr.GetIds()) != 0 ||
		!protoEqualTakes(hr.GetUnits(), wantTakes) || hr.GetTtlMs() != 120000 || hr.GetSession() {
		t.Fatalf("hold request: %v", hr)
	}
	if h.Fence != 77 || h.TTL != 2*time.Minute || h.Token() != poolToken || !reflect.DeepEqual(h.Target, units) || h.IDs != nil {
		t.Fatalf("pool hold: %v", h)
	}
	units["adult"] = 9 // the hold keeps its own copy
	if h.Target.(Units)["adult"] != 2 {
		t.Fatalf("the hold's target changed with the caller's map: %v", h.Target)
	}
	for _, s := range []string{h.String(), h.GoString()} {
		if strings.Contains(s, poolToken) || !strings.Contains(s, "adult=2,child=1") {
			t.Fatalf("pool Hold prints %q", s)
		}
	}

	if ttl, err := h.Extend(ctx, time.Minute); err != nil || ttl != time.Minute {
		t.Fatalf("extend: %v %v", ttl, err)
	}
	er := lastReq().GetExtend()
	if !reflect.DeepEqual(er.GetPools(), wantPools) || er.GetToken() != poolToken || er.GetTtlMs() != 60000 || len(er.GetIds()) != 0 {
		t.Fatalf("extend request: %v", er)
	}

	st, err := h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sr := lastReq().GetStatus()
	if !reflect.DeepEqual(sr.GetPools(), wantPools) || sr.GetToken() != poolToken {
		t.Fatalf("status request: %v", sr)
	}
	want := &StatusResult{Pools: []PoolStatus{
		{Pool: "adult", Capacity: 5000, Sold: 4990, Held: 7, Free: 3, Owned: 2, TTL: 59 * time.Second},
		{Pool: "child", Capacity: 500, Sold: 499, Held: 1, Free: 0, Owned: 1, TTL: 59 * time.Second}}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("status: %+v", st)
	}
	// Status of pools by name: the counts are not sent.
	if _, err := c.Status(ctx, "ga", "show", Units{"adult": 0}); err != nil {
		t.Fatal(err)
	}
	if sr := lastReq().GetStatus(); !reflect.DeepEqual(sr.GetPools(), []string{"adult"}) || sr.GetToken() != "" || len(sr.GetIds()) != 0 {
		t.Fatalf("status by pool name: %v", sr)
	}

	conf, err := h.Confirm(ctx, ConfirmOptions{IdempotencyKey: "order-4712:confirm", Reference: "order-4712"})
	if err != nil {
		t.Fatal(err)
	}
	cr := lastReq().GetConfirm()
	if !protoEqualTakes(cr.GetUnits(), wantTakes) || cr.GetToken() != poolToken || cr.GetIdempotencyKey() != "order-4712:confirm" ||
		cr.GetReference() != "order-4712" || len(cr.GetIds()) != 0 {
		t.Fatalf("confirm request: %v", cr)
	}
	if conf.Fence != 77 || !reflect.DeepEqual(conf.Units, Units{"adult": 2, "child": 1}) || conf.Claims != nil ||
		conf.ConfirmedAt.UnixMilli() != 1764412345678 || conf.Replayed {
		t.Fatalf("confirm result: %+v", conf)
	}
	n := sent()
	if err := h.Close(); err != nil { // confirmed: nothing to release
		t.Fatal(err)
	}
	if sent() != n {
		t.Fatalf("Close after Confirm sent %v", lastReq())
	}

	cres, err := c.Cancel(ctx, "ga", "show", Units{"adult": 1}, CancelOptions{IdempotencyKey: "order-4712:refund-1", Reference: "order-4712"})
	if err != nil {
		t.Fatal(err)
	}
	cc := lastReq().GetCancel()
	if !protoEqualTakes(cc.GetUnits(), []*pb.PoolTake{{Pool: "adult", Count: 1}}) || len(cc.GetIds()) != 0 ||
		cc.GetReference() != "order-4712" || cc.GetIdempotencyKey() != "order-4712:refund-1" {
		t.Fatalf("cancel request: %v", cc)
	}
	if cres.Cancelled != 1 || !reflect.DeepEqual(cres.Units, Units{"adult": 1}) {
		t.Fatalf("cancel result: %+v", cres)
	}

	admin := c.Admin()
	pc, err := admin.SetCapacity(ctx, "ga", "show", "adult", 5000)
	if err != nil || *pc != (PoolCapacity{Pool: "adult", Capacity: 5000}) {
		t.Fatalf("SetCapacity: %+v %v", pc, err)
	}
	if sc := lastReq().GetSetCapacity(); sc.GetPool() != "adult" || sc.GetCapacity() != 5000 || sc.GetPartitionDefault() {
		t.Fatalf("set capacity request: %v", sc)
	}
	pc, err = admin.SetDefaultCapacity(ctx, "ga", "show", 1)
	if err != nil || !pc.PartitionDefault || pc.Capacity != 1 {
		t.Fatalf("SetDefaultCapacity: %+v %v", pc, err)
	}
	if sc := lastReq().GetSetCapacity(); sc.GetPool() != "" || sc.GetCapacity() != 1 || !sc.GetPartitionDefault() {
		t.Fatalf("set default request: %v", sc)
	}
	capy, err := c.GetCapacity(ctx, "ga", "show", "adult", "user-17")
	if err != nil {
		t.Fatal(err)
	}
	if gr := lastReq().GetGetCapacity(); !reflect.DeepEqual(gr.GetPools(), []string{"adult", "user-17"}) {
		t.Fatalf("get capacity request: %v", gr)
	}
	if capy.Default != 1 || len(capy.Pools) != 2 || capy.Pools[1] != (PoolCapacity{Pool: "user-17", Capacity: 1, PartitionDefault: true}) {
		t.Fatalf("capacity: %+v", capy)
	}

	// A second hold, resumed from its token and released through Close.
	h2, err := c.Hold(ctx, "ga", "show", Units{"adult": 2, "child": 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Resume("ga", "show", h2.Target, h2.Token()).Close(); err != nil {
		t.Fatal(err)
	}
	if rr := lastReq().GetRelease(); !reflect.DeepEqual(rr.GetPools(), wantPools) || rr.GetToken() != poolToken || len(rr.GetIds()) != 0 {
		t.Fatalf("release request: %v", rr)
	}
}

func TestPoolErrorsMapToSentinels(t *testing.T) {
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) {
		p.send(nc, &pb.Response{Id: req.GetId(), Code: CodeHeldByAnother,
			Message: "1 units asked, 0 free; the rest is held by others", Error: &pb.ErrorDetail{ResourceId: "child"}})
	})
	c := New(p.path)
	defer c.Close()
	_, err := c.Hold(context.Background(), "ga", "show", Units{"adult": 2, "child": 1}, 0)
	if !errors.Is(err, ErrHeldByAnother) || ResourceOf(err) != "child" {
		t.Fatalf("want ErrHeldByAnother naming child, got %v", err)
	}
}

func TestPoolSessionHoldIsRefusedLocally(t *testing.T) {
	sent := make(chan struct{}, 1)
	p := newPeer(t, func(p *peer, nc net.Conn, req *pb.Request) { sent <- struct{}{} })
	c := New(p.path)
	defer c.Close()
	_, err := c.Hold(context.Background(), "ga", "show", Units{"adult": 1}, 0, WithSession())
	var he *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &he) || he.Field != "session" {
		t.Fatalf("want ErrInvalidArgument on session, got %v", err)
	}
	select {
	case <-sent:
		t.Fatal("a refused request was sent")
	case <-time.After(20 * time.Millisecond):
	}
}

func protoEqualTakes(a, b []*pb.PoolTake) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
