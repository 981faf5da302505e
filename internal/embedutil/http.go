package embedutil

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/habilis-router/habilis"
)

// Unreachable classifies an error of the HTTP round trip itself (refused or
// reset connection, DNS failure, a server that hung up): the server may come
// back, so the request is retried, and in the end it is unavailable.
func Unreachable(err error) error {
	return Retry(Mark(fmt.Errorf("server unreachable: %w", err), habilis.ErrUnavailable), 0)
}

// Status classifies an HTTP error answer with the server's message: 429 and
// 5xx are retried (after retryAfter when positive) and end as
// habilis.ErrUnavailable; every other status is the request's or the
// configuration's fault and is habilis.ErrInvalid.
func Status(code int, msg string, retryAfter time.Duration) error {
	msg = strings.TrimSpace(msg)
	text := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	if msg != "" {
		text += ": " + msg
	}
	switch {
	case code == http.StatusTooManyRequests:
		return Retry(Mark(fmt.Errorf("server overloaded: %s", text), habilis.ErrUnavailable), retryAfter)
	case code >= 500:
		return Retry(Mark(fmt.Errorf("server error: %s", text), habilis.ErrUnavailable), retryAfter)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return Mark(fmt.Errorf("server refused the credentials: %s", text), habilis.ErrInvalid)
	}
	return Mark(fmt.Errorf("server refused the request: %s", text), habilis.ErrInvalid)
}

// RetryAfter reads a Retry-After header in seconds or as an HTTP date; it
// returns 0 when there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
