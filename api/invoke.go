package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/habilis-router/habilis"
	habilisv1 "github.com/habilis-router/habilis/api/habilis/v1"
	"github.com/habilis-router/habilis/fill"
)

// callerFiller is what FilledBy says of arguments sent with Invoke.
const callerFiller = "caller"

// Fill implements habilisv1.ToolRouterServer.
func (s *Server) Fill(ctx context.Context, req *habilisv1.FillRequest) (*habilisv1.FillResponse, error) {
	if err := s.checkQuery("query", req.GetQuery()); err != nil {
		return nil, err
	}
	ti, err := s.tool("tool", req.GetTool())
	if err != nil {
		return nil, err
	}
	r, err := fill.Fill(ctx, ti.Tool, req.GetQuery(), fill.Options{Fillers: s.opts.Fillers, Now: time.Now()})
	if err != nil {
		return nil, err
	}
	return fillToProto(r)
}

// Invoke implements habilisv1.ToolRouterServer.
func (s *Server) Invoke(ctx context.Context, req *habilisv1.InvokeRequest) (*habilisv1.InvokeResponse, error) {
	if req.GetTool() == "" {
		return nil, invalidf("tool", "must not be empty")
	}
	if !req.GetConfirm() {
		return nil, invalidf("confirm", "must be true to run a tool")
	}
	args := req.GetArgumentsJson()
	if args == "" {
		if err := s.checkQuery("query", req.GetQuery()); err != nil {
			return nil, err
		}
	} else if len(req.GetQuery()) > s.opts.MaxQueryBytes {
		return nil, invalidf("query", "is %d bytes, over the limit of %d bytes", len(req.GetQuery()), s.opts.MaxQueryBytes)
	}
	ti, err := s.tool("tool", req.GetTool())
	if err != nil {
		return nil, err
	}
	tool := ti.Tool
	var fr *fill.Result
	if args != "" {
		fr, err = checkArguments(tool, args)
	} else {
		fr, err = fill.Fill(ctx, tool, req.GetQuery(), fill.Options{Fillers: s.opts.Fillers, Now: time.Now()})
	}
	if err != nil {
		return nil, err
	}
	out := &habilisv1.InvokeResponse{}
	if out.Fill, err = fillToProto(fr); err != nil {
		return nil, err
	}
	if !fr.Complete {
		return out, nil
	}
	r, err := s.run(ctx, tool, fr)
	if err != nil {
		return nil, err
	}
	out.Ran = r.Ran
	if out.Result, err = resultToProto(r); err != nil {
		return nil, err
	}
	return out, nil
}

// run runs a tool a fill completed with the server's runner. A server
// without one runs nothing, and says so as a refused kind is said: in an
// is_error result, not an error status.
func (s *Server) run(ctx context.Context, tool habilis.Tool, fr *fill.Result) (*habilis.ToolResult, error) {
	if s.opts.Runner == nil {
		return &habilis.ToolResult{IsError: true, Content: []habilis.Content{{Type: "text",
			Text: fmt.Sprintf("tool %q did not run: this server runs no tools", tool.Name)}}}, nil
	}
	return s.opts.Runner.Run(ctx, tool, fr)
}

// checkArguments turns arguments a caller sent into a fill result: they are
// validated against the tool's schema, not against a request.
func checkArguments(tool habilis.Tool, text string) (*fill.Result, error) {
	var args map[string]any
	if err := json.Unmarshal([]byte(text), &args); err != nil || args == nil {
		return nil, invalidf("arguments_json", "want a JSON object")
	}
	return fill.Given(tool, args, callerFiller)
}

// jsonText marshals v, or returns "" for nil.
func jsonText(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode %T: %w", v, err)
	}
	return string(b), nil
}

func fillToProto(r *fill.Result) (*habilisv1.FillResponse, error) {
	args, err := jsonText(r.Arguments)
	if err != nil {
		return nil, err
	}
	if args == "" || args == "null" {
		args = "{}"
	}
	out := &habilisv1.FillResponse{
		Tool:          r.Tool,
		ArgumentsJson: args,
		FilledBy:      r.FilledBy,
		Complete:      r.Complete,
	}
	if len(r.Defaults) > 0 {
		if out.DefaultsJson, err = jsonText(r.Defaults); err != nil {
			return nil, err
		}
	}
	for _, rej := range r.Rejected {
		v, err := jsonText(rej.Value)
		if err != nil {
			return nil, err
		}
		out.Rejected = append(out.Rejected, &habilisv1.Rejection{Path: rej.Path, ValueJson: v, Reason: rej.Reason, By: rej.By})
	}
	for _, m := range r.Missing {
		out.Missing = append(out.Missing, &habilisv1.MissingArgument{Name: m.Name, Description: m.Description, Question: m.Question})
	}
	for _, p := range r.Problems {
		out.Problems = append(out.Problems, &habilisv1.Problem{Path: p.Path, Message: p.Message})
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, &habilisv1.FillerError{Filler: e.Filler, Error: e.Error})
	}
	return out, nil
}

// fillFromProto reverses fillToProto; JSON numbers come back as float64.
func fillFromProto(p *habilisv1.FillResponse) (*fill.Result, error) {
	r := &fill.Result{
		Tool:      p.GetTool(),
		Arguments: map[string]any{},
		FilledBy:  map[string]string{},
		Rejected:  []fill.Rejection{},
		Missing:   []fill.MissingArg{},
		Problems:  []fill.Problem{},
		Complete:  p.GetComplete(),
	}
	if err := decodeJSON("arguments_json", p.GetArgumentsJson(), &r.Arguments); err != nil {
		return nil, err
	}
	if err := decodeJSON("defaults_json", p.GetDefaultsJson(), &r.Defaults); err != nil {
		return nil, err
	}
	for k, v := range p.GetFilledBy() {
		r.FilledBy[k] = v
	}
	for _, rej := range p.GetRejected() {
		var v any
		if err := decodeJSON("rejected.value_json", rej.GetValueJson(), &v); err != nil {
			return nil, err
		}
		r.Rejected = append(r.Rejected, fill.Rejection{Path: rej.GetPath(), Value: v, Reason: rej.GetReason(), By: rej.GetBy()})
	}
	for _, m := range p.GetMissing() {
		r.Missing = append(r.Missing, fill.MissingArg{Name: m.GetName(), Description: m.GetDescription(), Question: m.GetQuestion()})
	}
	for _, pr := range p.GetProblems() {
		r.Problems = append(r.Problems, fill.Problem{Path: pr.GetPath(), Message: pr.GetMessage()})
	}
	for _, e := range p.GetErrors() {
		r.Errors = append(r.Errors, fill.FillerError{Filler: e.GetFiller(), Error: e.GetError()})
	}
	return r, nil
}

func resultToProto(r *habilis.ToolResult) (*habilisv1.ToolResult, error) {
	sc, err := jsonText(r.StructuredContent)
	if err != nil {
		return nil, err
	}
	out := &habilisv1.ToolResult{StructuredContentJson: sc, IsError: r.IsError, SelectionOnly: r.SelectionOnly, Truncated: r.Truncated}
	for _, c := range r.Content {
		out.Content = append(out.Content, &habilisv1.Content{
			Type: c.Type, Text: c.Text, MimeType: c.MimeType, Data: c.Data, Uri: c.URI, Name: c.Name, ResourceJson: string(c.Resource),
		})
	}
	return out, nil
}

func resultFromProto(p *habilisv1.ToolResult) (*habilis.ToolResult, error) {
	if p == nil {
		return nil, nil
	}
	r := &habilis.ToolResult{Content: []habilis.Content{}, IsError: p.GetIsError(), SelectionOnly: p.GetSelectionOnly(), Truncated: p.GetTruncated()}
	if err := decodeJSON("structured_content_json", p.GetStructuredContentJson(), &r.StructuredContent); err != nil {
		return nil, err
	}
	for _, c := range p.GetContent() {
		ec := habilis.Content{Type: c.GetType(), Text: c.GetText(), MimeType: c.GetMimeType(), Data: c.GetData(), URI: c.GetUri(), Name: c.GetName()}
		if c.GetResourceJson() != "" {
			ec.Resource = json.RawMessage(c.GetResourceJson())
		}
		r.Content = append(r.Content, ec)
	}
	return r, nil
}

// decodeJSON decodes a JSON field of a response; "" leaves v as it is.
func decodeJSON(field, text string, v any) error {
	if text == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("response %s: %v: %w", field, err, habilis.ErrInvalid)
	}
	return nil
}
