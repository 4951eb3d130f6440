package proxmox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// retryPolicy retries transient failures with capped exponential backoff and full jitter.
type retryPolicy struct {
	attempts int
	base     time.Duration
	cap      time.Duration
}

var defaultRetry = retryPolicy{attempts: 5, base: 200 * time.Millisecond, cap: 5 * time.Second}

func (p retryPolicy) do(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < p.attempts; attempt++ {
		if err = fn(); err == nil || !errors.Is(err, ErrTransient) {
			return err
		}
		if attempt == p.attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; gave up retrying: %w", err, ctx.Err())
		case <-time.After(p.backoff(attempt)):
		}
	}
	return err
}

// backoff is a random wait in (0, min(base*2^attempt, cap)].
func (p retryPolicy) backoff(attempt int) time.Duration {
	d := p.cap
	if attempt < 32 { // beyond, the shift would overflow
		if s := p.base << attempt; s > 0 && s < p.cap {
			d = s
		}
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}
