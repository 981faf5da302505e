package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// healthPrefix starts the methods of the health service, which answer
// without a token so that load balancers and orchestrators need none.
const healthPrefix = "/grpc.health.v1.Health/"

// unaryInterceptor authenticates, converts the handler's error to a status
// (errorTable) and records the call in metrics and logs.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	markReached(ctx)
	var resp any
	err := s.authorize(ctx, info.FullMethod)
	if err == nil {
		resp, err = handler(ctx, req)
		if err != nil {
			err = toStatus(err)
		}
	}
	s.record(ctx, info.FullMethod, err, time.Since(start))
	return resp, err
}

// streamInterceptor does for streams (health Watch, reflection) what
// unaryInterceptor does for calls.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := s.authorize(ss.Context(), info.FullMethod)
	if err == nil {
		if err = handler(srv, ss); err != nil {
			err = toStatus(err)
		}
	}
	s.record(ss.Context(), info.FullMethod, err, time.Since(start))
	return err
}

// record counts a call and logs it: every call at debug level, failures
// at warn level. A call the client cancelled (a reflection stream it
// closed, a request it gave up on) is not a failure of the server's and
// stays at debug level.
func (s *Server) record(ctx context.Context, method string, err error, d time.Duration) {
	code := status.Code(err)
	s.metrics.observe(method, code, d)
	level, msg := slog.LevelDebug, "rpc"
	if err != nil && code != codes.Canceled {
		level, msg = slog.LevelWarn, "rpc failed"
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("code", code.String()), slog.Duration("duration", d)}
	if err != nil {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	s.log.LogAttrs(ctx, level, msg, attrs...)
}

// authorize checks the bearer token of a call, when the server has one.
// Tokens are compared through their hashes in constant time, so neither
// their content nor their length leaks through timing.
func (s *Server) authorize(ctx context.Context, method string) error {
	if s.opts.Token == "" || strings.HasPrefix(method, healthPrefix) {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return status.Error(codes.Unauthenticated, "missing bearer token: send \"authorization: Bearer TOKEN\"")
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return status.Error(codes.Unauthenticated, "authorization is not a bearer token")
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
		return status.Error(codes.Unauthenticated, "wrong bearer token")
	}
	return nil
}
