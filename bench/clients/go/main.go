// Command gobench measures hold+release pairs per second through the Go
// client (clients/go) against the same pairs through redsync (go-redsync v4
// on go-redis v9: TryLock + Unlock, the usual Go way to lock with Redis), on
// one private stack: holdfastd's socket and the Redis behind it.
//
//	gobench -holdfast DIR/holdfast.sock -redis DIR/redis.sock [-seconds 5] [-rounds 3] [-goroutines 1,16]
//
// Each round runs, for each goroutine count G, holdfast then redsync (the
// order alternates between rounds), G goroutines sharing one client, each
// goroutine on a key of its own, for -seconds each. A pair is an acquire
// (Hold / TryLock) and its release (Release / Unlock). One line per run, then
// a table of medians; the ratio column is the median of the per-round ratios
// holdfast/redsync (runs of the same round are next to each other in time).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/holdfast/holdfast/clients/go/holdfast"
	"github.com/redis/go-redis/v9"
)

const (
	namespace = "seat" // the dev stack's namespace (tools/devstack.sh)
	ttl       = 10 * time.Second
)

type result struct {
	system  string
	g       int
	round   int
	pairs   int
	errs    int
	elapsed time.Duration
	lat     []time.Duration // one per pair: acquire + release
	// Read and write system calls of this process during the run
	// (/proc/self/io; -1 where it cannot be read).
	syscr, syscw int64
	cpu          time.Duration // this process's CPU time (user + system) during the run
}

func (r result) pairsPerS() float64 { return float64(r.pairs) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
}

// pairFunc runs one acquire + release for goroutine g.
type pairFunc func(ctx context.Context) error

// system makes the per-goroutine pair functions of one contender.
type system struct {
	name  string
	setup func(g int, round int) pairFunc
}

func run(sys system, g, round int, d time.Duration) result {
	fns := make([]pairFunc, g)
	for i := range fns {
		fns[i] = sys.setup(i, round)
	}
	var stop atomic.Bool
	lats := make([][]time.Duration, g)
	errs := make([]int, g)
	var wg sync.WaitGroup
	r0, w0 := sysIO()
	c0 := cpuTime()
	start := time.Now()
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1<<16)
			for !stop.Load() {
				t0 := time.Now()
				if err := fns[i](ctx); err != nil {
					errs[i]++
					if errs[i] <= 3 {
						fmt.Fprintf(os.Stderr, "%s G=%d: %v\n", sys.name, g, err)
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		}(i)
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	r := result{system: sys.name, g: g, round: round, elapsed: time.Since(start)}
	r1, w1 := sysIO()
	r.syscr, r.syscw = r1-r0, w1-w0
	if r0 < 0 || r1 < 0 {
		r.syscr, r.syscw = -1, -1
	}
	r.cpu = cpuTime() - c0
	for i := range lats {
		r.pairs += len(lats[i])
		r.errs += errs[i]
		r.lat = append(r.lat, lats[i]...)
	}
	slices.Sort(r.lat)
	return r
}

// sysIO returns this process's read and write system call counts so far
// (Linux), or -1s.
func sysIO() (syscr, syscw int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1, -1
	}
	syscr, syscw = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "syscr":
			syscr = n
		case "syscw":
			syscw = n
		}
	}
	return syscr, syscw
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func holdfastSystem(c *holdfast.Client) system {
	return system{name: "holdfast", setup: func(g, round int) pairFunc {
		ids := holdfast.Seats{fmt.Sprintf("gobench-%d-%d", round, g)}
		part := "gobench"
		return func(ctx context.Context) error {
			h, err := c.Hold(ctx, namespace, part, ids, ttl)
			if err != nil {
				return fmt.Errorf("hold: %w", err)
			}
			if _, err := h.Release(ctx); err != nil {
				return fmt.Errorf("release: %w", err)
			}
			return nil
		}
	}}
}

func redsyncSystem(rs *redsync.Redsync) system {
	return system{name: "redsync", setup: func(g, round int) pairFunc {
		m := rs.NewMutex(fmt.Sprintf("gobench-redsync-%d-%d", round, g), redsync.WithExpiry(ttl), redsync.WithTries(1))
		return func(ctx context.Context) error {
			if err := m.TryLockContext(ctx); err != nil {
				return fmt.Errorf("trylock: %w", err)
			}
			if ok, err := m.UnlockContext(ctx); err != nil || !ok {
				return fmt.Errorf("unlock: ok=%v %w", ok, err)
			}
			return nil
		}
	}}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func main() {
	hfSock := flag.String("holdfast", "", "holdfastd's socket")
	redisSock := flag.String("redis", "", "the Redis socket (unix) behind it")
	seconds := flag.Float64("seconds", 5, "seconds per run")
	rounds := flag.Int("rounds", 3, "rounds")
	gs := flag.String("goroutines", "1,16", "goroutine counts, comma-separated")
	only := flag.String("only", "", "run only this system (holdfast or redsync)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the runs (not the warm-up) here")
	flag.Parse()
	if *hfSock == "" || *redisSock == "" {
		fmt.Fprintln(os.Stderr, "usage: gobench -holdfast SOCK -redis SOCK [-seconds 5] [-rounds 3] [-goroutines 1,16]")
		os.Exit(2)
	}
	var shapes []int
	for _, s := range strings.Split(*gs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad goroutine count %q\n", s)
			os.Exit(2)
		}
		shapes = append(shapes, n)
	}
	d := time.Duration(*seconds * float64(time.Second))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	hc, err := holdfast.Dial(ctx, *hfSock)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "holdfast:", err)
		os.Exit(1)
	}
	defer hc.Close()
	rc := redis.NewClient(&redis.Options{Network: "unix", Addr: *redisSock})
	defer rc.Close()
	if err := rc.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "redis:", err)
		os.Exit(1)
	}
	systems := []system{holdfastSystem(hc), redsyncSystem(redsync.New(goredis.NewPool(rc)))}
	if *only != "" {
		systems = slices.DeleteFunc(systems, func(s system) bool { return s.name != *only })
		if len(systems) == 0 {
			fmt.Fprintln(os.Stderr, "-only: holdfast or redsync")
			os.Exit(2)
		}
	}

	// Warm up both (connections, scripts loaded, code paged in).
	for _, s := range systems {
		run(s, 1, 0, 300*time.Millisecond)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	var all []result
	for round := 1; round <= *rounds; round++ {
		for _, g := range shapes {
			order := slices.Clone(systems)
			if round%2 == 0 {
				slices.Reverse(order)
			}
			for _, s := range order {
				r := run(s, g, round, d)
				all = append(all, r)
				per := func(n int64) float64 { return float64(n) / float64(max(r.pairs, 1)) }
				fmt.Printf("round=%d system=%s G=%d pairs=%d errors=%d pairs_per_s=%.0f p50_us=%.0f p99_us=%.0f client_cpu_us_per_pair=%.1f reads_per_pair=%.2f writes_per_pair=%.2f\n",
					r.round, r.system, r.g, r.pairs, r.errs, r.pairsPerS(),
					float64(r.pct(0.50).Microseconds()), float64(r.pct(0.99).Microseconds()),
					per(r.cpu.Microseconds()), per(r.syscr), per(r.syscw))
			}
		}
	}

	find := func(sys string, g, round int) (result, bool) {
		for _, r := range all {
			if r.system == sys && r.g == g && r.round == round {
				return r, true
			}
		}
		return result{}, false
	}
	fmt.Println()
	fmt.Println("   G | holdfast pairs/s | redsync pairs/s | holdfast/redsync | p50 us holdfast/redsync")
	failed := false
	summary := map[int]float64{} // G -> median ratio, for bench/run.sh --clients
	for _, g := range shapes {
		var hp, rp, ratio, hl, rl []float64
		for round := 1; round <= *rounds; round++ {
			h, ok1 := find("holdfast", g, round)
			r, ok2 := find("redsync", g, round)
			if ok1 {
				hp = append(hp, h.pairsPerS())
				hl = append(hl, float64(h.pct(0.5).Microseconds()))
				failed = failed || h.errs > 0
			}
			if ok2 {
				rp = append(rp, r.pairsPerS())
				rl = append(rl, float64(r.pct(0.5).Microseconds()))
				failed = failed || r.errs > 0
			}
			if ok1 && ok2 && r.pairsPerS() > 0 {
				ratio = append(ratio, h.pairsPerS()/r.pairsPerS())
			}
		}
		fmt.Printf("%4d | %16.0f | %15.0f | %16.2f | %.0f/%.0f\n", g, median(hp), median(rp), median(ratio), median(hl), median(rl))
		summary[g] = median(ratio)
	}
	if r, ok := summary[1]; ok {
		fmt.Printf("ratio_seq %.2f\n", r)
	}
	if r, ok := summary[16]; ok {
		fmt.Printf("ratio_16 %.2f\n", r)
	}
	if failed {
		fmt.Fprintln(os.Stderr, "gobench: some pairs failed (see above)")
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
