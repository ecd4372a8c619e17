// Command seatreservation walks through a checkout against holdfastd:
// hold seats E7-E9 all or nothing, keep the hold alive while the customer
// pays, confirm it with an idempotency key, and handle the conflicts a busy
// show produces (seats held by another shopper, seats already sold, a hold
// that expired).
//
//	go run ./examples/seatreservation                 # socket: $HOLDFAST_SOCKET, else /run/holdfast/holdfast.sock
//	go run ./examples/seatreservation -socket /path/to/holdfast.sock
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
	payFor := flag.Duration("pay", 4*time.Second, "how long the simulated payment takes")
	rival := flag.Bool("rival", true, "let another shopper grab E8 first, to show conflict handling")
	flag.Parse()

	if err := run(*socket, *namespace, *partition, *payFor, *rival); err != nil {
		log.Printf("not sold: %v", err)
		os.Exit(1)
	}
}

func run(socket, namespace, partition string, payFor time.Duration, rival bool) error {
	ctx := context.Background()
	client, err := holdfast.Dial(ctx, socket) // "" means $HOLDFAST_SOCKET, else the default
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Close()

	seats := []string{"E7", "E8", "E9"}
	if rival {
		// Another shopper holds E8 for a moment, then walks away.
		other, err := client.Hold(ctx, namespace, partition, []string{"E8"}, 1500*time.Millisecond)
		if err == nil {
			log.Printf("rival shopper holds E8 (%v)", other)
		}
	}

	order := "order-" + randomHex(8) // the caller's key, kept across retries
	ctx = holdfast.WithCorrelationID(ctx, order)

	hold, err := holdSeats(ctx, client, namespace, partition, seats)
	if err != nil {
		return fmt.Errorf("no seats: %w", err)
	}
	// Gives the seats back on every path that does not confirm; after a
	// confirm it does nothing.
	defer func() {
		if err := hold.Close(); err != nil {
			log.Printf("release: %v (the hold expires with its TTL)", err)
		}
	}()
	log.Printf("got %v", hold) // prints no token

	// Keep the hold alive while the customer pays.
	payCtx, stopExtending := context.WithCancel(ctx)
	extendErr := make(chan error, 1)
	go func() { extendErr <- keepAlive(payCtx, hold) }()
	log.Printf("customer is paying (%s)...", payFor)
	time.Sleep(payFor)
	stopExtending()
	if err := <-extendErr; err != nil {
		return fmt.Errorf("lost the hold while paying: %w", err)
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
		return errors.New("the hold expired before confirming; ask the customer to pick again")
	case errors.Is(err, holdfast.ErrUnimplemented), errors.Is(err, holdfast.ErrFailedPrecondition):
		return fmt.Errorf("this daemon cannot confirm here: %w", err)
	default:
		return fmt.Errorf("confirm: %w (safe to retry later with key %s)", err, order)
	}
}

// holdSeats takes all seats or none. When another shopper holds one, it
// waits briefly and tries again; a sold seat ends the attempt.
func holdSeats(ctx context.Context, c *holdfast.Client, ns, part string, seats []string) (*holdfast.Hold, error) {
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, time.Second)
		// A short TTL: an abandoned checkout frees the seats quickly; the
		// payment step keeps extending it.
		h, err := c.Hold(callCtx, ns, part, seats, 3*time.Second)
		cancel()
		switch {
		case err == nil:
			return h, nil
		case holdfast.IsHeldByAnother(err) && attempt < 5:
			log.Printf("seat %s is held by another shopper; retrying", holdfast.ResourceOf(err))
			time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
		case holdfast.IsConfirmed(err):
			return nil, fmt.Errorf("seat %s is already sold: %w", holdfast.ResourceOf(err), err)
		default:
			return nil, err
		}
	}
}

// keepAlive extends the hold every third of its TTL until ctx ends.
func keepAlive(ctx context.Context, h *holdfast.Hold) error {
	t := time.NewTicker(h.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			callCtx, cancel := context.WithTimeout(ctx, time.Second)
			ttl, err := h.Extend(callCtx, h.TTL)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil // payment finished while extending
				}
				return err
			}
			log.Printf("extended: %s left", ttl)
		}
	}
}

// confirm retries on an unknown outcome with the same idempotency key, so a
// purchase is never made twice.
func confirm(ctx context.Context, h *holdfast.Hold, key string) (*holdfast.Confirmation, error) {
	opts := holdfast.ConfirmOptions{IdempotencyKey: key, Reference: "customer-42"}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var conf *holdfast.Confirmation
		conf, err = h.Confirm(callCtx, opts)
		cancel()
		if err == nil || !holdfast.IsRetryable(err) {
			return conf, err
		}
		log.Printf("confirm outcome unknown (%v); retrying with the same key", err)
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	return nil, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
