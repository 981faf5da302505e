package api

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"connectrpc.com/vanguard/vanguardgrpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// HTTPHandler returns the server's services (ToolRouter, health and
// reflection) for an HTTP listener, under /SERVICE/ (404 elsewhere), in the protocols of Connect's Vanguard transcoder: Connect,
// whose unary calls are JSON over plain HTTP/1.1 or HTTP/2,
//
//	curl -H 'Content-Type: application/json' -d '{"query": "will it rain"}' \
//	    http://HOST/habilis.v1.ToolRouter/Select
//
// gRPC-Web, and gRPC itself when the listener speaks HTTP/2 (h2c or TLS).
// A method's path is /SERVICE/METHOD as in the .proto, and its request and
// response are the .proto's messages in protojson with the .proto's field
// names (snake_case; lowerCamelCase is accepted too). An error is Connect's
// JSON error, {"code": "invalid_argument", "message": ..., "details": [...]},
// with the HTTP status Connect gives the code (400, 401, 404, 503, ...); the
// details are the gRPC status's (ErrorInfo, BadRequest, ResourceInfo), each
// with a "debug" object that spells it out.
//
// Vanguard hands every call to the gRPC server itself, so the bearer token
// (an "Authorization: Bearer TOKEN" header), the message size limit, the
// status codes, the logs and the metrics are the gRPC service's, counted
// under the same method names. Vanguard is chosen over grpc-gateway for
// that: grpc-gateway's in-process handlers call the methods directly,
// past the interceptors, and its other mode needs a gRPC connection back to
// the server.
func (s *Server) HTTPHandler() (http.Handler, error) {
	h, err := vanguardgrpc.NewTranscoder(s.grpc,
		vanguard.WithCodec(func(res vanguard.TypeResolver) vanguard.Codec {
			return jsonCodec{vanguard.JSONCodec{
				MarshalOptions:   protojson.MarshalOptions{Resolver: res, EmitUnpopulated: true, UseProtoNames: true},
				UnmarshalOptions: protojson.UnmarshalOptions{Resolver: res},
			}}
		}),
		// A JSON message is held whole while it is transcoded, a request
		// as a response: the bound leaves room for JSON's longer spelling
		// of a request at the message limit, and for ListTools' answers.
		vanguard.WithDefaultServiceOptions(vanguard.WithMaxMessageBufferBytes(uint32(min(4*s.opts.MaxRecvMsgSize, DefaultMaxResponseSize)))),
	)
	if err != nil {
		return nil, fmt.Errorf("http handler: %w", err)
	}
	// Only the services' paths reach the transcoder: what it does not
	// know, it would answer after rewriting the request's headers.
	mux := http.NewServeMux()
	for name := range s.grpc.GetServiceInfo() {
		mux.Handle("/"+name+"/", connectJSON(h))
	}
	return mux, nil
}

// jsonCodec is protojson with the options HTTPHandler sets; a request body
// that does not parse is the caller's error (invalid_argument, 400), which
// Vanguard would otherwise report as the server's (unknown, 500).
type jsonCodec struct{ vanguard.JSONCodec }

func (c jsonCodec) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.JSONCodec.Unmarshal(data, msg); err != nil {
		// protojson's messages start with its package's name ("proto:
		// (line 1:2): unknown field ..."), which says nothing to a caller
		// of an HTTP API.
		detail := strings.TrimSpace(strings.TrimPrefix(err.Error(), "proto:"))
		return connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("request body is not a %s in JSON: %s", msg.ProtoReflect().Descriptor().Name(), detail))
	}
	return nil
}

// connectJSON marks a JSON POST that does not say its protocol as Connect's.
// Vanguard tells Connect from REST by the Connect-Protocol-Version header,
// which curl users should not have to know; the services declare no REST
// routes, so nothing else could be meant.
//
// A body of curl's default type (curl -d sends
// application/x-www-form-urlencoded), of none or of text/plain is read as
// JSON too: no protocol the transcoder speaks uses those types, and it
// answered them with a plain-text 404 for a path that exists.
func connectJSON(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Connect-Protocol-Version") == "" {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			switch {
			case err == nil && mt == "application/json":
				r.Header.Set("Connect-Protocol-Version", "1")
			case err != nil || mt == "application/x-www-form-urlencoded" || mt == "text/plain":
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Connect-Protocol-Version", "1")
			}
		}
		if isConnectJSON(r) && emptyBody(r) {
			// The transcoder hands the server no message for an empty
			// body, which gRPC answers as its own fault (internal, 500:
			// "cardinality violation"); Connect's own servers refuse a
			// zero-length JSON payload as the caller's.
			connect.NewErrorWriter().Write(w, r, connect.NewError(connect.CodeInvalidArgument,
				errors.New("request body is empty: want the request message in JSON, {} for an empty one")))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isConnectJSON reports a unary call of Connect's protocol with a JSON body.
func isConnectJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && r.Header.Get("Connect-Protocol-Version") != "" && err == nil && mt == "application/json"
}

// emptyBody reports a request without a body, reading at most one byte of
// one of unknown length, which it puts back.
func emptyBody(r *http.Request) bool {
	if r.ContentLength >= 0 {
		return r.ContentLength == 0
	}
	br := bufio.NewReader(r.Body)
	_, err := br.Peek(1)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	return errors.Is(err, io.EOF)
}
