package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/habilis-router/habilis"
	"github.com/habilis-router/habilis/catalog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// errorDomain is the domain of the ErrorInfo every habilis status carries.
const errorDomain = "habilis.v1"

// toolResource is the ResourceInfo type of a NOT_FOUND status for a tool.
const toolResource = "habilis.v1.Tool"

// errorMapping pairs a habilis sentinel error with its gRPC code and the
// reason written in the status's ErrorInfo.
type errorMapping struct {
	err    error
	code   codes.Code
	reason string
}

// errorTable is the one table between habilis' sentinel errors and gRPC
// codes. The server reads it top down (the first sentinel an error wraps
// wins); the client reads it back by reason, then by code, so that
// errors.Is(err, habilis.ErrNotFound) holds for a remote error as for a
// local one. ErrClosed and ErrUnavailable share a code, and so do
// ErrEmbedderMismatch and ErrReadOnly (the request is sound, the server's
// state refuses it); their reasons tell them apart, and a bare code maps
// to the first of them. ErrDamaged comes first: a damaged store is the fact to report
// whatever else an error wraps.
func errorTable() []errorMapping {
	return []errorMapping{
		{habilis.ErrDamaged, codes.DataLoss, "DAMAGED"},
		{habilis.ErrInvalid, codes.InvalidArgument, "INVALID"},
		{habilis.ErrNotFound, codes.NotFound, "NOT_FOUND"},
		{habilis.ErrConflict, codes.Aborted, "CONFLICT"},
		{habilis.ErrEmbedderMismatch, codes.FailedPrecondition, "EMBEDDER_MISMATCH"},
		{habilis.ErrReadOnly, codes.FailedPrecondition, "READ_ONLY"},
		{habilis.ErrUnavailable, codes.Unavailable, "UNAVAILABLE"},
		{habilis.ErrClosed, codes.Unavailable, "CLOSED"},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "DEADLINE_EXCEEDED"},
		{context.Canceled, codes.Canceled, "CANCELED"},
	}
}

// fieldError is bad input in one request field. It unwraps to ErrInvalid
// and becomes a BadRequest field violation.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s: %s", e.field, e.msg) }
func (e *fieldError) Unwrap() error { return habilis.ErrInvalid }

func invalidf(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// toolError is an unknown tool named by a request field. It unwraps to
// the UnknownToolError, and so to ErrNotFound, and becomes a ResourceInfo
// naming the tool, with the names it likely misspells in the ErrorInfo's
// metadata (suggestionsKey).
type toolError struct {
	field string
	err   *habilis.UnknownToolError
}

// unknownTool is the error for the tool name in field, which lookup
// (the router's Tool, or a check of an inline catalog) refused with err:
// a toolError when err says the tool is unknown, err itself otherwise.
func unknownTool(field string, err error) error {
	var ue *habilis.UnknownToolError
	if errors.As(err, &ue) {
		return &toolError{field: field, err: ue}
	}
	return err
}

func (e *toolError) Error() string {
	if e.field == "tool" { // "tool: tool "x"" would say it twice
		return e.err.Error()
	}
	return e.field + ": " + e.err.Error()
}
func (e *toolError) Unwrap() error { return e.err }

// suggestionsKey is the ErrorInfo metadata key of a NOT_FOUND status that
// lists, comma-separated (tool names hold no comma), the names an unknown
// tool's most likely misspells; absent when none is close.
const suggestionsKey = "suggestions"

// catalogField is where catalog problems are reported: the request field
// holding the catalog, and whether it is a list of Tool messages (whose
// problems are located as "tools[3].description") rather than JSON text.
type catalogField struct {
	name     string
	messages bool
}

// catalogErrors wraps catalog.Parse's problems with the request field that
// held the catalog, so that each becomes a field violation.
type catalogErrors struct {
	field catalogField
	err   error
}

func (e *catalogErrors) Error() string { return e.err.Error() }
func (e *catalogErrors) Unwrap() error { return e.err }

// violations turns each catalog problem into a field violation.
func (e *catalogErrors) violations() []*errdetails.BadRequest_FieldViolation {
	var out []*errdetails.BadRequest_FieldViolation
	for _, err := range flatten(e.err) {
		var ce *catalog.Error
		if !errors.As(err, &ce) {
			out = append(out, &errdetails.BadRequest_FieldViolation{Field: e.field.name, Description: err.Error()})
			continue
		}
		field := e.field.name
		switch {
		case e.field.messages && ce.Index >= 0:
			field += "[" + strconv.Itoa(ce.Index) + "]"
			if ce.Field != "" {
				field += "." + messageField(ce.Field)
			}
		case ce.Index >= 0:
			field += ": tool " + strconv.Itoa(ce.Index)
			if ce.Field != "" {
				field += " field " + ce.Field
			}
		case ce.Field != "":
			field += ": field " + ce.Field
		}
		msg := ce.Msg
		if ce.Tool != "" {
			msg = fmt.Sprintf("tool %q: %s", ce.Tool, msg)
		}
		out = append(out, &errdetails.BadRequest_FieldViolation{Field: field, Description: msg})
	}
	return out
}

// messageField names a catalog field after the Tool message's fields: the
// JSON text behind input_schema_json and executor_json is marshalled from
// them.
func messageField(f string) string {
	for _, p := range []struct{ json, msg string }{{"inputSchema", "input_schema_json"}, {"executor", "executor_json"}} {
		if f == p.json {
			return p.msg
		}
		if len(f) > len(p.json) && f[:len(p.json)] == p.json && (f[len(p.json)] == '.' || f[len(p.json)] == '[') {
			return p.msg + ": " + f[len(p.json)+1:]
		}
	}
	return f
}

// flatten lists the errors joined in err (catalog.Parse joins its
// problems), or err alone.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// toStatus converts an error of a handler to the status the client sees,
// through errorTable. Statuses pass unchanged; an error wrapping no
// sentinel becomes INTERNAL.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	var m *errorMapping
	for _, e := range errorTable() {
		if errors.Is(err, e.err) {
			m = &e
			break
		}
	}
	if m == nil {
		return status.Error(codes.Internal, err.Error())
	}
	st := status.New(m.code, err.Error())
	info := &errdetails.ErrorInfo{Reason: m.reason, Domain: errorDomain}
	details := []protoadapt.MessageV1{info}
	switch m.code {
	case codes.InvalidArgument:
		if v := violations(err); len(v) > 0 {
			details = append(details, &errdetails.BadRequest{FieldViolations: v})
		}
	case codes.NotFound:
		var ue *habilis.UnknownToolError
		if errors.As(err, &ue) {
			details = append(details, &errdetails.ResourceInfo{ResourceType: toolResource, ResourceName: ue.Name, Description: err.Error()})
			if len(ue.Suggestions) > 0 {
				info.Metadata = map[string]string{suggestionsKey: strings.Join(ue.Suggestions, ",")}
			}
		}
	}
	if withDetails, derr := st.WithDetails(details...); derr == nil {
		st = withDetails
	}
	return st.Err()
}

// violations collects the field violations err carries.
func violations(err error) []*errdetails.BadRequest_FieldViolation {
	var ce *catalogErrors
	if errors.As(err, &ce) {
		return ce.violations()
	}
	var out []*errdetails.BadRequest_FieldViolation
	for _, e := range flatten(err) {
		var fe *fieldError
		if errors.As(e, &fe) {
			out = append(out, &errdetails.BadRequest_FieldViolation{Field: fe.field, Description: fe.msg})
		}
	}
	return out
}

// RemoteError is an error status from a habilis server. It unwraps to the
// habilis sentinel error (or context error) the status stands for, so
// errors.Is works as for a local router, and status.FromError and
// status.Code return the status itself, details included.
type RemoteError struct {
	st       *status.Status
	sentinel error
}

func (e *RemoteError) Error() string { return e.st.Message() }

// Unwrap returns the sentinel the status maps back to, or nil for a code
// without one (UNAUTHENTICATED, INTERNAL).
func (e *RemoteError) Unwrap() error { return e.sentinel }

// GRPCStatus returns the status, for status.FromError and status.Code.
func (e *RemoteError) GRPCStatus() *status.Status { return e.st }

// FieldViolations returns the request fields an INVALID_ARGUMENT status
// names, field → description.
func (e *RemoteError) FieldViolations() map[string]string {
	out := map[string]string{}
	for _, d := range e.st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out[v.GetField()] = v.GetDescription()
			}
		}
	}
	return out
}

// remoteUnknownTool reads the unknown tool a status names back, with its
// suggestions, or returns nil: so that errors.As finds the
// UnknownToolError for a remote router as for a local one.
func remoteUnknownTool(st *status.Status) *habilis.UnknownToolError {
	var ue *habilis.UnknownToolError
	var suggested string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ResourceInfo:
			if d.GetResourceType() == toolResource {
				ue = &habilis.UnknownToolError{Name: d.GetResourceName()}
			}
		case *errdetails.ErrorInfo:
			suggested = d.GetMetadata()[suggestionsKey]
		}
	}
	if ue != nil && suggested != "" {
		ue.Suggestions = strings.Split(suggested, ",")
	}
	return ue
}

// fromStatus converts an error of a gRPC call back to a *RemoteError that
// wraps habilis' sentinel: by the ErrorInfo reason the server wrote, or
// else by code (errors from the transport carry no ErrorInfo).
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	table := errorTable()
	reason := ""
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			reason = info.GetReason()
		}
	}
	re := &RemoteError{st: st}
	if ue := remoteUnknownTool(st); ue != nil && (reason == "NOT_FOUND" || reason == "" && st.Code() == codes.NotFound) {
		re.sentinel = ue
		return re
	}
	for _, m := range table {
		if reason != "" && m.reason == reason {
			re.sentinel = m.err
			return re
		}
	}
	for _, m := range table {
		if m.code == st.Code() {
			re.sentinel = m.err
			return re
		}
	}
	return re
}
