// Command seatreservation walks through a checkout against holdfastd:
// hold seats E7-E9 all or nothing as a session hold (the daemon keeps it
// alive while this process is connected, and frees the seats at once if the
// process dies), wait in line briefly if another shopper holds one, let the
// customer pay, confirm with an idempotency key, and handle the conflicts a
// busy show produces (seats held by another shopper, seats already sold, a
// hold lost on the way).
//
//	go run ./examples/seatreservation                 # socket: $HOLDFAST_SOCKET, else /run/holdfast/holdfast.sock
//	go run ./examples/seatreservation -socket /path/to/holdfast.sock
//	go run ./examples/seatreservation -contend        # the rival walks away while we wait in line
//
// Each run books on a partition of its own (a random suffix), so it works
// again and again on the same daemon. It exits 1 when the seats were not
// sold.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/holdfast/holdfast/clients/go/holdfast"
)

func main() {
	socket := flag.String("socket", "", "holdfastd socket (default: $HOLDFAST_SOCKET, else "+holdfast.DefaultSocketPath+")")
	namespace := flag.String("namespace", "seat", "confirmable namespace")
	partition := flag.String("partition", "run-2026-12-01-KTX101-"+randomHex(3), "train run / show (default: a fresh one per run)")
	payFor := flag.Duration("pay", 6*time.Second, "how long the simulated payment takes (longer than the 5 s session TTL: the daemon renews the hold)")
	rival := flag.Bool("rival", true, "let another shopper hold E8 first, then walk away")
	contend := flag.Bool("contend", false, "the rival walks away while we wait in line for E8 (needs a holdfastd that waits in line)")
	waitFor := flag.Duration("wait", 5*time.Second, "how long to wait in line for a seat another shopper holds")
	flag.Parse()

	if err := run(*socket, *namespace, *partition, *payFor, *waitFor, *rival, *contend); err != nil {
		log.Printf("not sold: %v", err)
		os.Exit(1)
	}
}

func run(socket, namespace, partition string, payFor, waitFor time.Duration, rival, contend bool) error {
	ctx := context.Background()
	client, err := holdfast.Dial(ctx, socket) // "" means $HOLDFAST_SOCKET, else the default
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	// Closing the client also ends its session holds: the daemon releases
	// whatever was not confirmed.
	defer client.Close()

	if rival {
		walkedAway, err := rivalShopper(ctx, socket, namespace, partition, contend)
		if err != nil {
			return err
		}
		if !contend {
			<-walkedAway
			if err := watchFreed(ctx, client, namespace, partition, "E8"); err != nil {
				return err
			}
		}
	}

	order := "order-" + randomHex(8) // the caller's key, kept across retries
	ctx = holdfast.WithCorrelationID(ctx, order)

	// A session hold: no TTL to choose and no extend loop; WithWait queues
	// behind another shopper's hold instead of a retry loop.
	start := time.Now()
	hold, err := client.Hold(ctx, namespace, partition, holdfast.Seats{"E7", "E8", "E9"}, 0,
		holdfast.WithSession(), holdfast.WithWait(waitFor),
		holdfast.WithOnLost(func(h holdfast.SessionHold, err error) {
			log.Printf("lost %v: %v", h, err)
		}))
	switch {
	case err == nil:
	case holdfast.IsHeldByAnother(err):
		// The wait ran out (a holdfastd that predates waiting in line
		// answers at once).
		return fmt.Errorf("seat %s still held by another shopper after %s in line (asked to wait up to %s): %w",
			holdfast.ResourceOf(err), time.Since(start).Round(time.Millisecond), waitFor, err)
	case holdfast.IsConfirmed(err):
		return fmt.Errorf("seat %s is already sold: %w", holdfast.ResourceOf(err), err)
	default:
		return fmt.Errorf("no seats: %w", err)
	}
	// Gives the seats back on every path that does not confirm; after a
	// confirm it does nothing.
	defer func() {
		if err := hold.Close(); err != nil {
			log.Printf("release: %v (the daemon releases it when the client closes)", err)
		}
	}()
	log.Printf("got %v after %s", hold, time.Since(start).Round(10*time.Microsecond)) // prints no token

	// The customer pays. Nothing extends the hold: the daemon renews it
	// while this connection lives, and Done closes if it is lost anyway.
	log.Printf("customer is paying (%s, longer than the %s session TTL)...", payFor, hold.TTL)
	select {
	case <-time.After(payFor):
	case <-hold.Done():
		return fmt.Errorf("lost the hold while paying: %w", hold.Lost())
	}
	st, err := hold.Status(ctx)
	if err == nil && len(st.Resources) > 0 {
		r := st.Resources[0]
		log.Printf("still ours after paying: %s %v owned=%v ttl=%s (renewed by the daemon)",
			r.ID, r.State, r.Owned, r.TTL.Round(100*time.Millisecond))
	}

	conf, err := confirm(ctx, hold, order)
	switch {
	case err == nil:
		log.Printf("sold: %d seats at fence %d (replayed=%v)", len(conf.Claims), conf.Fence, conf.Replayed)
		for _, c := range conf.Claims {
			log.Printf("  seat %s reference %s confirmed at %s", c.ResourceID, c.Reference, c.ConfirmedAt.Format(time.RFC3339))
		}
		return nil
	case holdfast.IsConflict(err):
		// PostgreSQL already has a claim on one of the seats: nothing was
		// claimed. Refund; the deferred Close releases what we hold.
		return fmt.Errorf("seat %s was sold to someone else; nothing was claimed: refund the payment", holdfast.ResourceOf(err))
	case holdfast.IsHoldLost(err):
		return errors.New("the hold was lost before confirming; ask the customer to pick again")
	case errors.Is(err, holdfast.ErrUnimplemented), errors.Is(err, holdfast.ErrFailedPrecondition):
		return fmt.Errorf("this daemon cannot confirm here: %w", err)
	default:
		return fmt.Errorf("confirm: %w (safe to retry later with key %s)", err, order)
	}
}

// rivalShopper holds E8 as a session hold on a connection of its own, then
// walks away: closing its client makes the daemon release E8 at once, with
// no TTL to run out. With contend it walks away 300 ms later, while we wait
// in line; otherwise at once. The channel closes once it is gone.
func rivalShopper(ctx context.Context, socket, ns, part string, contend bool) (<-chan struct{}, error) {
	other, err := holdfast.Dial(ctx, socket)
	if err != nil {
		return nil, fmt.Errorf("connect (rival): %w", err)
	}
	gone := make(chan struct{})
	h, err := other.Hold(ctx, ns, part, holdfast.Seats{"E8"}, 0, holdfast.WithSession())
	if err != nil {
		other.Close()
		return nil, fmt.Errorf("rival: %w", err)
	}
	log.Printf("rival shopper holds E8 (%v)", h)
	delay := time.Duration(0)
	if contend {
		delay = 300 * time.Millisecond
	}
	go func() {
		defer close(gone)
		time.Sleep(delay)
		other.Close() // the rival's browser tab closes: E8 is free at once
		log.Printf("rival shopper walked away (closed its client, and so its session)")
	}()
	return gone, nil
}

// watchFreed shows how soon the daemon frees a seat whose session holder
// has gone: it looks at its status (a diagnostic) until it is free.
func watchFreed(ctx context.Context, c *holdfast.Client, ns, part, seat string) error {
	start := time.Now()
	for time.Since(start) < 2*time.Second {
		st, err := c.Status(ctx, ns, part, holdfast.Seats{seat})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if len(st.Resources) == 1 && st.Resources[0].State == holdfast.StateFree {
			log.Printf("%s was free %s after the rival's connection closed (no TTL to wait for)",
				seat, time.Since(start).Round(10*time.Microsecond))
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%s still held 2 s after its session holder left", seat)
}

// confirm retries on an unknown outcome with the same idempotency key, so a
// purchase is never made twice. No sleep between tries: the client waits for
// the daemon (reconnecting with backoff) within each try's deadline.
func confirm(ctx context.Context, h *holdfast.Hold, key string) (*holdfast.ConfirmResult, error) {
	opts := holdfast.ConfirmOptions{IdempotencyKey: key, Reference: "customer-42"}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var conf *holdfast.ConfirmResult
		conf, err = h.Confirm(callCtx, opts)
		cancel()
		if err == nil || !holdfast.IsRetryable(err) {
			return conf, err
		}
		log.Printf("confirm outcome unknown (%v); retrying with the same key", err)
	}
	return nil, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
