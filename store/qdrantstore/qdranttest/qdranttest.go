// Package qdranttest serves an in-memory stand-in for the part of
// Qdrant's gRPC API that store/qdrantstore uses, so that tests of any
// package can run stores over "Qdrant" without one: several stores (as
// several processes would) over one fake, a Qdrant that goes away and
// comes back (SetHook), collections altered behind the store's back.
package qdranttest

import (
	"context"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Server is an in-memory Qdrant, behaving as Qdrant's source says
// (qdrant/qdrant, lib/storage content_manager: toc/collection_meta_ops.rs,
// alias_mapping.rs, toc/create_collection.rs; src/tonic/mod.rs): aliases
// resolve like collections and a missing one is NotFound; one
// UpdateAliases call applies its actions in order and, as released
// versions do, keeps those before a failing one; creating an alias
// replaces one of the same name; deleting a missing alias is not an error;
// deleting a collection drops its aliases and deleting a missing one
// answers false; creating a collection that exists is InvalidArgument;
// messages of any size are accepted; upserts are checked against the
// collection's vector config; scroll pages in id order, numbers before
// UUIDs. It lets the I/O paths run in every test run; it is no substitute
// for running the conformance suite against a real Qdrant
// (HABILIS_QDRANT_ADDR).
type Server struct {
	qdrant.UnimplementedQdrantServer
	qdrant.UnimplementedCollectionsServer

	port int

	mu          sync.Mutex
	collections map[string]*collection
	aliases     map[string]string

	hookMu sync.Mutex
	// hook, when set, runs before every call with the method's name and
	// the collection it names; an error it returns is the call's answer.
	hook func(method, collection string) error
	// version is what the health check reports.
	version string
}

type collection struct {
	config  *qdrant.CreateCollection
	points  map[string]*qdrant.PointStruct
	indexes []string
}

// Start serves a Server on a loopback port until the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	f := &Server{collections: map[string]*collection{}, aliases: map[string]string{}, version: "1.17.0"}
	f.port = f.listen(tb, nil)
	return f
}

// listen serves f on a new loopback port until the test ends, with an
// interceptor in front of every call when one is given.
func (f *Server) listen(tb testing.TB, gate grpc.UnaryServerInterceptor) int {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	// Qdrant builds its services with max_decoding_message_size(usize::MAX).
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(math.MaxInt32)}
	if gate != nil {
		opts = append(opts, grpc.UnaryInterceptor(gate))
	}
	srv := grpc.NewServer(opts...)
	qdrant.RegisterQdrantServer(srv, f)
	qdrant.RegisterCollectionsServer(srv, f)
	qdrant.RegisterPointsServer(srv, points{f: f})
	go srv.Serve(lis)
	tb.Cleanup(srv.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

// Endpoint is one more address of a Server, which a test can cut off
// alone: a replica that loses its way to Qdrant while others keep theirs.
type Endpoint struct {
	port int
	down atomic.Bool
}

// Endpoint serves f on another loopback port until the test ends.
func (f *Server) Endpoint(tb testing.TB) *Endpoint {
	tb.Helper()
	e := &Endpoint{}
	e.port = f.listen(tb, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if e.down.Load() {
			return nil, status.Error(codes.Unavailable, "qdranttest: endpoint down")
		}
		return h(ctx, req)
	})
	return e
}

// Host is the address the endpoint listens on, "127.0.0.1".
func (e *Endpoint) Host() string { return "127.0.0.1" }

// Port is the port the endpoint listens on.
func (e *Endpoint) Port() int { return e.port }

// SetDown cuts the endpoint off (every call answers Unavailable, as when
// Qdrant cannot be reached) or, with false, restores it.
func (e *Endpoint) SetDown(down bool) { e.down.Store(down) }

// Host is the address the server listens on, "127.0.0.1".
func (f *Server) Host() string { return "127.0.0.1" }

// Port is the port the server listens on.
func (f *Server) Port() int { return f.port }

// SetHook makes h run before every call, with the method's name
// ("Create", "Upsert", "GetPoints", ...) and the collection (or alias) the
// call names, "" for calls that name none; an error it returns is the
// call's answer, and nil lets the call proceed. h runs outside the
// server's lock, so it may call the server's methods, or make calls of its
// own through a store; calls made concurrently run h concurrently. Nil
// removes the hook.
func (f *Server) SetHook(h func(method, collection string) error) {
	f.hookMu.Lock()
	defer f.hookMu.Unlock()
	f.hook = h
}

// SetVersion sets the release the health check reports ("1.17.0" unless
// set).
func (f *Server) SetVersion(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = v
}

// enter runs the hook, then locks the server; callers defer
// f.mu.Unlock() when it returns nil.
func (f *Server) enter(method, collection string) error {
	f.hookMu.Lock()
	h := f.hook
	f.hookMu.Unlock()
	if h != nil {
		if err := h(method, collection); err != nil {
			return err
		}
	}
	f.mu.Lock()
	return nil
}

func (f *Server) resolve(name string) (*collection, error) {
	if target, ok := f.aliases[name]; ok {
		name = target
	}
	c, ok := f.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

// Collections returns the names of the collections, sorted.
func (f *Server) Collections() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.collections {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Aliases returns a copy of the aliases, alias to collection.
func (f *Server) Aliases() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.aliases)
}

// Indexes returns the payload indexes of a collection (or of the one an
// alias names): the field name, with ":tenant" for a tenant index.
func (f *Server) Indexes(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.resolve(name)
	if err != nil {
		return nil
	}
	return slices.Clone(c.indexes)
}

// DeleteCollection drops a collection and the aliases to it, as another
// client deleting it would.
func (f *Server) DeleteCollection(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteCollection(name)
}

func (f *Server) deleteCollection(name string) bool {
	if _, ok := f.collections[name]; !ok {
		return false
	}
	delete(f.collections, name)
	for a, c := range f.aliases {
		if c == name {
			delete(f.aliases, a)
		}
	}
	return true
}

// SetVectorSize changes the size of a collection's named dense vector, as
// when someone recreates the collection with another size.
func (f *Server) SetVectorSize(name, vector string, size uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.resolve(name)
	if err != nil {
		return
	}
	if p := c.config.GetVectorsConfig().GetParamsMap().GetMap()[vector]; p != nil {
		p.Size = size
	}
}

func (f *Server) HealthCheck(ctx context.Context, _ *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	if err := f.enter("HealthCheck", ""); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	return &qdrant.HealthCheckReply{Title: "fake", Version: f.version}, nil
}

func (f *Server) Create(ctx context.Context, r *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	if err := f.enter("Create", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	name := r.GetCollectionName()
	if _, ok := f.collections[name]; ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Collection `%s` already exists!", name)
	}
	if _, ok := f.aliases[name]; ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Can't create collection with name %s. Alias with the same name already exists", name)
	}
	f.collections[name] = &collection{config: proto.Clone(r).(*qdrant.CreateCollection), points: map[string]*qdrant.PointStruct{}}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f *Server) Delete(ctx context.Context, r *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	if err := f.enter("Delete", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	return &qdrant.CollectionOperationResponse{Result: f.deleteCollection(r.GetCollectionName())}, nil
}

func (f *Server) List(ctx context.Context, _ *qdrant.ListCollectionsRequest) (*qdrant.ListCollectionsResponse, error) {
	if err := f.enter("List", ""); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var out []*qdrant.CollectionDescription
	for n := range f.collections {
		out = append(out, &qdrant.CollectionDescription{Name: n})
	}
	return &qdrant.ListCollectionsResponse{Collections: out}, nil
}

func (f *Server) Get(ctx context.Context, r *qdrant.GetCollectionInfoRequest) (*qdrant.GetCollectionInfoResponse, error) {
	if err := f.enter("GetCollectionInfo", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	params := &qdrant.CollectionParams{VectorsConfig: c.config.GetVectorsConfig(), SparseVectorsConfig: c.config.GetSparseVectorsConfig()}
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{Config: &qdrant.CollectionConfig{Params: params}}}, nil
}

func (f *Server) UpdateAliases(ctx context.Context, r *qdrant.ChangeAliases) (*qdrant.CollectionOperationResponse, error) {
	if err := f.enter("UpdateAliases", ""); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	// Like ToC::update_aliases: actions apply one by one, and an error
	// leaves those before it applied.
	for _, op := range r.GetActions() {
		switch {
		case op.GetDeleteAlias() != nil:
			delete(f.aliases, op.GetDeleteAlias().GetAliasName())
		case op.GetCreateAlias() != nil:
			ca := op.GetCreateAlias()
			if _, ok := f.collections[ca.GetCollectionName()]; !ok {
				return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", ca.GetCollectionName())
			}
			if _, ok := f.collections[ca.GetAliasName()]; ok {
				return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Collection `%s` already exists!", ca.GetAliasName())
			}
			f.aliases[ca.GetAliasName()] = ca.GetCollectionName()
		default:
			return nil, status.Error(codes.Unimplemented, "alias action")
		}
	}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f *Server) ListAliases(ctx context.Context, _ *qdrant.ListAliasesRequest) (*qdrant.ListAliasesResponse, error) {
	if err := f.enter("ListAliases", ""); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var out []*qdrant.AliasDescription
	for a, c := range f.aliases {
		out = append(out, &qdrant.AliasDescription{AliasName: a, CollectionName: c})
	}
	return &qdrant.ListAliasesResponse{Aliases: out}, nil
}

func (fp points) CreateFieldIndex(ctx context.Context, r *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	f := fp.f
	if err := f.enter("CreateFieldIndex", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if r.GetFieldIndexParams().GetKeywordIndexParams().GetIsTenant() {
		c.indexes = append(c.indexes, r.GetFieldName()+":tenant")
	} else {
		c.indexes = append(c.indexes, r.GetFieldName())
	}
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

func (fp points) Upsert(ctx context.Context, r *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	f := fp.f
	if err := f.enter("Upsert", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if err := checkFilter(r.GetUpdateFilter()); err != nil {
		return nil, err
	}
	dense := c.config.GetVectorsConfig().GetParamsMap().GetMap()
	sparse := c.config.GetSparseVectorsConfig().GetMap()
	for _, p := range r.GetPoints() {
		if p.GetVectors() == nil {
			return nil, status.Error(codes.InvalidArgument, "Expected some vectors")
		}
		if p.GetVectors().GetVectors() == nil {
			return nil, status.Error(codes.InvalidArgument, "fake: only named vectors are supported")
		}
		for name, v := range p.GetVectors().GetVectors().GetVectors() {
			switch {
			case v.GetDense() != nil:
				params, ok := dense[name]
				if !ok {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", name)
				}
				if got := len(v.GetDense().GetData()); uint64(got) != params.GetSize() {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", params.GetSize(), got)
				}
			case v.GetSparse() != nil:
				if _, ok := sparse[name]; !ok {
					return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", name)
				}
			default:
				return nil, status.Error(codes.InvalidArgument, "fake: unsupported vector")
			}
		}
	}
	// As Qdrant's conditional_upsert (lib/shard update/points/upsert.rs):
	// insert-only skips points that exist, update-only those that do not,
	// and an update filter the points that exist but fail it.
	for _, p := range r.GetPoints() {
		key := idKey(p.GetId())
		old, exists := c.points[key]
		switch {
		case exists && r.GetUpdateMode() == qdrant.UpdateMode_InsertOnly,
			!exists && r.GetUpdateMode() == qdrant.UpdateMode_UpdateOnly,
			exists && r.UpdateFilter != nil && !matches(r.GetUpdateFilter(), old):
			continue
		}
		c.points[key] = proto.Clone(p).(*qdrant.PointStruct)
	}
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

// Delete deletes the points a selector names, by id or by filter.
func (fp points) Delete(ctx context.Context, r *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	f := fp.f
	if err := f.enter("DeletePoints", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	sel := r.GetPoints()
	if err := checkFilter(sel.GetFilter()); err != nil {
		return nil, err
	}
	for _, id := range sel.GetPoints().GetIds() {
		delete(c.points, idKey(id))
	}
	if filter := sel.GetFilter(); filter != nil {
		for k, p := range c.points {
			if matches(filter, p) {
				delete(c.points, k)
			}
		}
	}
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}, nil
}

// idKey orders ids as Qdrant does: numbers before UUIDs, each ascending.
func idKey(id *qdrant.PointId) string {
	if u := id.GetUuid(); u != "" {
		return "u" + u
	}
	return "n" + strings.Repeat("0", 20-len(strconv.FormatUint(id.GetNum(), 10))) + strconv.FormatUint(id.GetNum(), 10)
}

func (f *Server) retrieve(p *qdrant.PointStruct) *qdrant.RetrievedPoint {
	out := map[string]*qdrant.VectorOutput{}
	for name, v := range p.GetVectors().GetVectors().GetVectors() {
		if d := v.GetDense(); d != nil {
			out[name] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Dense{Dense: proto.Clone(d).(*qdrant.DenseVector)}}
		} else {
			out[name] = &qdrant.VectorOutput{Vector: &qdrant.VectorOutput_Sparse{Sparse: proto.Clone(v.GetSparse()).(*qdrant.SparseVector)}}
		}
	}
	return &qdrant.RetrievedPoint{
		Id:      p.GetId(),
		Payload: p.GetPayload(),
		Vectors: &qdrant.VectorsOutput{VectorsOptions: &qdrant.VectorsOutput_Vectors{Vectors: &qdrant.NamedVectorsOutput{Vectors: out}}},
	}
}

func (fp points) Scroll(ctx context.Context, r *qdrant.ScrollPoints) (*qdrant.ScrollResponse, error) {
	f := fp.f
	if err := f.enter("Scroll", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if err := checkFilter(r.GetFilter()); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(c.points))
	for k, p := range c.points {
		if matches(r.GetFilter(), p) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	start := 0
	if r.Offset != nil {
		start, _ = slices.BinarySearch(keys, idKey(r.GetOffset()))
	}
	limit := 10
	if r.Limit != nil {
		limit = int(r.GetLimit())
	}
	end := min(start+limit, len(keys))
	resp := &qdrant.ScrollResponse{}
	for _, k := range keys[start:end] {
		resp.Result = append(resp.Result, f.retrieve(c.points[k]))
	}
	if end < len(keys) {
		resp.NextPageOffset = c.points[keys[end]].GetId()
	}
	return resp, nil
}

// checkFilter refuses the conditions the fake does not evaluate: it
// supports has_id and keyword matches, in must and must_not.
func checkFilter(filter *qdrant.Filter) error {
	if len(filter.GetShould()) > 0 || filter.GetMinShould() != nil {
		return status.Error(codes.Unimplemented, "fake: should conditions")
	}
	for _, c := range append(slices.Clone(filter.GetMust()), filter.GetMustNot()...) {
		if c.GetHasId() == nil && c.GetField().GetMatch().GetKeyword() == "" {
			return status.Errorf(codes.Unimplemented, "fake: condition %v", c)
		}
	}
	return nil
}

// matches evaluates a filter checkFilter accepts on a point.
func matches(filter *qdrant.Filter, p *qdrant.PointStruct) bool {
	for _, c := range filter.GetMust() {
		if !holds(c, p) {
			return false
		}
	}
	for _, c := range filter.GetMustNot() {
		if holds(c, p) {
			return false
		}
	}
	return true
}

func holds(c *qdrant.Condition, p *qdrant.PointStruct) bool {
	if ids := c.GetHasId(); ids != nil {
		return slices.ContainsFunc(ids.GetHasId(), func(id *qdrant.PointId) bool { return idKey(id) == idKey(p.GetId()) })
	}
	fc := c.GetField()
	return p.GetPayload()[fc.GetKey()].GetStringValue() == fc.GetMatch().GetKeyword()
}

// points serves the Points service, whose method names (Get, Delete)
// clash with the Collections service's.
type points struct {
	qdrant.UnimplementedPointsServer
	f *Server
}

func (fp points) Get(ctx context.Context, r *qdrant.GetPoints) (*qdrant.GetResponse, error) {
	f := fp.f
	if err := f.enter("GetPoints", r.GetCollectionName()); err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	resp := &qdrant.GetResponse{}
	for _, id := range r.GetIds() {
		if p, ok := c.points[idKey(id)]; ok {
			resp.Result = append(resp.Result, f.retrieve(p))
		}
	}
	return resp, nil
}
