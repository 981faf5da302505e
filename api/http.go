package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"connectrpc.com/vanguard/vanguardgrpc"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
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
// with a "debug" object that spells it out. Two answers are HTTP's rather
// than Connect's: a request over the size limit is 413 (code
// resource_exhausted, which Connect would send as 429, Too Many Requests),
// and a method's path asked with anything but POST is 405 with an Allow
// header (the transcoder took a GET for a REST route and answered 404).
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
	for name, info := range s.grpc.GetServiceInfo() {
		mux.Handle("/"+name+"/", knownMethods(name, info, connectJSON(h)))
		for _, m := range info.Methods {
			if !getAllowed(name + "." + m.Name) {
				mux.Handle("/"+name+"/"+m.Name, postOnly(connectJSON(h)))
			}
		}
	}
	return mux, nil
}

// knownMethods answers a path under a service that names none of its
// methods (a lowercase "select", say) with 404 and the service's methods,
// where the transcoder said "Not Found" alone; gRPC calls, whose clients
// read the status the transcoder gives them, go to it unchanged.
func knownMethods(service string, info grpc.ServiceInfo, h http.Handler) http.Handler {
	names := make([]string, len(info.Methods))
	for i, m := range info.Methods {
		names[i] = m.Name
	}
	slices.Sort(names)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := strings.TrimPrefix(r.URL.Path, "/"+service+"/")
		if slices.Contains(names, method) || strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("no method %q in %s: its methods are %s (POST /%s/METHOD with the request message in JSON)",
			method, service, strings.Join(names, ", "), service), http.StatusNotFound)
	})
}

// getAllowed reports a method that Connect may call with GET: one the
// .proto marks free of side effects (idempotency_level). Every other call
// of every protocol the transcoder speaks is a POST.
func getAllowed(method string) bool {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(method))
	if err != nil {
		return false
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return false
	}
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	return ok && opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
}

// postOnly answers a request to a method's path with a method other than
// POST with 405 and "Allow: POST", as Connect's own handlers do, where the
// transcoder took a GET for a REST route and answered 404.
func postOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, fmt.Sprintf("method %s is not allowed on %s: POST the request message in JSON", r.Method, r.URL.Path),
				http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
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
		md := msg.ProtoReflect().Descriptor()
		if name, ok := unknownField(detail); ok && topLevelKey(data, name) {
			detail += "; its fields are " + fieldNames(md)
		}
		detail += jsonTextHint(detail, md)
		return connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("request body is not a %s in JSON: %s", md.Name(), detail))
	}
	return nil
}

// unknownField returns the name protojson's error says is unknown
// (`unknown field "kk"`).
func unknownField(detail string) (string, bool) {
	_, rest, ok := strings.Cut(detail, "unknown field ")
	if !ok {
		return "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	name, err := strconv.Unquote(q)
	return name, err == nil
}

// topLevelKey reports whether the JSON object data has the key name
// itself, rather than one of the messages inside it.
func topLevelKey(data []byte, name string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top[name]
	return ok
}

// jsonTextHint explains protojson's refusal of an array or object given
// for one of the string fields that hold JSON text (tools_json,
// catalog_json, ...), which the API's examples spell as escaped strings
// and a caller is apt to send as JSON itself.
func jsonTextHint(detail string, md protoreflect.MessageDescriptor) string {
	_, rest, ok := strings.Cut(detail, "invalid value for string field ")
	if !ok {
		return ""
	}
	name, value, ok := strings.Cut(rest, ": ")
	f := md.Fields().ByJSONName(name)
	if !ok || f == nil || !strings.HasSuffix(string(f.Name()), "_json") {
		return ""
	}
	switch {
	case strings.HasPrefix(value, "["):
		return fmt.Sprintf(`; %s is a string: send the array as JSON text inside it ("[...]", its quotes escaped)`, f.Name())
	case strings.HasPrefix(value, "{"):
		return fmt.Sprintf(`; %s is a string: send the object as JSON text inside it ("{...}", its quotes escaped)`, f.Name())
	}
	return ""
}

// fieldNames lists a message's fields by their .proto names, in order.
func fieldNames(md protoreflect.MessageDescriptor) string {
	fields := md.Fields()
	names := make([]string, fields.Len())
	for i := range names {
		names[i] = string(fields.Get(i).Name())
	}
	return strings.Join(names, ", ")
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
		if isConnectJSON(r) {
			ctx, reached := withReached(r.Context())
			w, r = tooLargeStatus{w, reached}, r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// reachedKey keys, in the context of an HTTP call, the flag the service's
// unary interceptor sets once the call's request message has been read
// (see markReached).
type reachedKey struct{}

// withReached returns ctx carrying a flag for markReached, and the flag.
func withReached(ctx context.Context) (context.Context, *atomic.Bool) {
	reached := new(atomic.Bool)
	return context.WithValue(ctx, reachedKey{}, reached), reached
}

// markReached sets the flag of withReached in ctx, if it carries one.
// gRPC hands a call's context to the interceptor only after the request
// message was read within the transcoder's buffer and the server's
// MaxRecvMsgSize.
func markReached(ctx context.Context) {
	if reached, ok := ctx.Value(reachedKey{}).(*atomic.Bool); ok {
		reached.Store(true)
	}
}

// tooLargeStatus sends a resource_exhausted answer to a call that never
// reached the service as 413 Payload Too Large: before the service the
// only exhausted resources are the bounds on the request's size (the
// transcoder's buffer, MaxRecvMsgSize, either after decompression).
// After it, the answer keeps Connect's 429: a response over the
// transcoder's buffer is no fault of the request's size.
type tooLargeStatus struct {
	http.ResponseWriter
	reached *atomic.Bool
}

func (w tooLargeStatus) WriteHeader(code int) {
	if code == http.StatusTooManyRequests && !w.reached.Load() {
		code = http.StatusRequestEntityTooLarge
	}
	w.ResponseWriter.WriteHeader(code)
}

// Flush is the transcoder's need: it refuses a writer without it.
func (w tooLargeStatus) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w tooLargeStatus) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
