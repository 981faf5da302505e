package qdrantstore

import (
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeQdrant is an in-memory stand-in for the part of Qdrant's gRPC API the
// store uses, behaving as Qdrant's source says (qdrant/qdrant, lib/storage
// content_manager: toc/collection_meta_ops.rs, alias_mapping.rs,
// toc/create_collection.rs; src/tonic/mod.rs): aliases resolve like
// collections and a missing one is NotFound; one UpdateAliases call applies
// its actions in order and, as released versions do, keeps those before a
// failing one; creating an alias replaces one of the same name; deleting a
// missing alias is not an error; deleting a collection drops its aliases
// and deleting a missing one answers false; creating a collection that
// exists is InvalidArgument; messages of any size are accepted; upserts are
// checked against the collection's vector config; scroll pages in id order,
// numbers before UUIDs. It lets the I/O paths run in every test run; it is
// no substitute for running the conformance suite against a real Qdrant
// (HABILIS_QDRANT_ADDR).
type fakeQdrant struct {
	qdrant.UnimplementedQdrantServer
	qdrant.UnimplementedCollectionsServer

	mu          sync.Mutex
	collections map[string]*fakeCollection
	aliases     map[string]string
	// hook, when set, runs before every call with the method's name; an
	// error it returns is the call's answer.
	hook func(method string) error
}

type fakeCollection struct {
	config  *qdrant.CreateCollection
	points  map[string]*qdrant.PointStruct
	indexes []string
}

// startFake serves a fakeQdrant on a loopback port and returns it with a
// Config pointing at it.
func startFake(t *testing.T) (*fakeQdrant, Config) {
	t.Helper()
	f := &fakeQdrant{collections: map[string]*fakeCollection{}, aliases: map[string]string{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Qdrant builds its services with max_decoding_message_size(usize::MAX).
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(math.MaxInt32))
	qdrant.RegisterQdrantServer(srv, f)
	qdrant.RegisterCollectionsServer(srv, f)
	qdrant.RegisterPointsServer(srv, fakePoints{f: f})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	addr := lis.Addr().(*net.TCPAddr)
	return f, Config{Host: "127.0.0.1", Port: addr.Port}
}

func (f *fakeQdrant) setHook(h func(method string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// enter locks the fake and runs the hook; callers defer f.mu.Unlock().
func (f *fakeQdrant) enter(method string) error {
	f.mu.Lock()
	if f.hook != nil {
		return f.hook(method)
	}
	return nil
}

func (f *fakeQdrant) resolve(name string) (*fakeCollection, error) {
	if target, ok := f.aliases[name]; ok {
		name = target
	}
	c, ok := f.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

// names returns the sorted collection names, for tests.
func (f *fakeQdrant) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.collections {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// aliasMap returns a copy of the aliases, for tests.
func (f *fakeQdrant) aliasMap() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.aliases))
	for a, c := range f.aliases {
		out[a] = c
	}
	return out
}

func (f *fakeQdrant) HealthCheck(ctx context.Context, _ *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	defer f.mu.Unlock()
	if err := f.enter("HealthCheck"); err != nil {
		return nil, err
	}
	return &qdrant.HealthCheckReply{Title: "fake", Version: "1.17.0"}, nil
}

func (f *fakeQdrant) Create(ctx context.Context, r *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("Create"); err != nil {
		return nil, err
	}
	name := r.GetCollectionName()
	if _, ok := f.collections[name]; ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Collection `%s` already exists!", name)
	}
	if _, ok := f.aliases[name]; ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Can't create collection with name %s. Alias with the same name already exists", name)
	}
	f.collections[name] = &fakeCollection{config: proto.Clone(r).(*qdrant.CreateCollection), points: map[string]*qdrant.PointStruct{}}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f *fakeQdrant) Delete(ctx context.Context, r *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("Delete"); err != nil {
		return nil, err
	}
	name := r.GetCollectionName()
	if _, ok := f.collections[name]; !ok {
		return &qdrant.CollectionOperationResponse{Result: false}, nil
	}
	delete(f.collections, name)
	for a, c := range f.aliases {
		if c == name {
			delete(f.aliases, a)
		}
	}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (f *fakeQdrant) List(ctx context.Context, _ *qdrant.ListCollectionsRequest) (*qdrant.ListCollectionsResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("List"); err != nil {
		return nil, err
	}
	var out []*qdrant.CollectionDescription
	for n := range f.collections {
		out = append(out, &qdrant.CollectionDescription{Name: n})
	}
	return &qdrant.ListCollectionsResponse{Collections: out}, nil
}

func (f *fakeQdrant) Get(ctx context.Context, r *qdrant.GetCollectionInfoRequest) (*qdrant.GetCollectionInfoResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("GetCollectionInfo"); err != nil {
		return nil, err
	}
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	params := &qdrant.CollectionParams{VectorsConfig: c.config.GetVectorsConfig(), SparseVectorsConfig: c.config.GetSparseVectorsConfig()}
	return &qdrant.GetCollectionInfoResponse{Result: &qdrant.CollectionInfo{Config: &qdrant.CollectionConfig{Params: params}}}, nil
}

func (f *fakeQdrant) UpdateAliases(ctx context.Context, r *qdrant.ChangeAliases) (*qdrant.CollectionOperationResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("UpdateAliases"); err != nil {
		return nil, err
	}
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

func (f *fakeQdrant) ListAliases(ctx context.Context, _ *qdrant.ListAliasesRequest) (*qdrant.ListAliasesResponse, error) {
	defer f.mu.Unlock()
	if err := f.enter("ListAliases"); err != nil {
		return nil, err
	}
	var out []*qdrant.AliasDescription
	for a, c := range f.aliases {
		out = append(out, &qdrant.AliasDescription{AliasName: a, CollectionName: c})
	}
	return &qdrant.ListAliasesResponse{Aliases: out}, nil
}

func (fp fakePoints) CreateFieldIndex(ctx context.Context, r *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	f := fp.f
	defer f.mu.Unlock()
	if err := f.enter("CreateFieldIndex"); err != nil {
		return nil, err
	}
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

func (fp fakePoints) Upsert(ctx context.Context, r *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	f := fp.f
	defer f.mu.Unlock()
	if err := f.enter("Upsert"); err != nil {
		return nil, err
	}
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
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
	for _, p := range r.GetPoints() {
		c.points[idKey(p.GetId())] = proto.Clone(p).(*qdrant.PointStruct)
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

func (f *fakeQdrant) retrieve(p *qdrant.PointStruct) *qdrant.RetrievedPoint {
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

func (fp fakePoints) Scroll(ctx context.Context, r *qdrant.ScrollPoints) (*qdrant.ScrollResponse, error) {
	f := fp.f
	defer f.mu.Unlock()
	if err := f.enter("Scroll"); err != nil {
		return nil, err
	}
	c, err := f.resolve(r.GetCollectionName())
	if err != nil {
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

// matches supports what the store filters with: keyword matches in Must.
func matches(filter *qdrant.Filter, p *qdrant.PointStruct) bool {
	for _, cond := range filter.GetMust() {
		fc := cond.GetField()
		if fc == nil || p.GetPayload()[fc.GetKey()].GetStringValue() != fc.GetMatch().GetKeyword() {
			return false
		}
	}
	return true
}

// fakePoints serves the Points service, whose method names (Get, Delete)
// clash with the Collections service's.
type fakePoints struct {
	qdrant.UnimplementedPointsServer
	f *fakeQdrant
}

func (fp fakePoints) Get(ctx context.Context, r *qdrant.GetPoints) (*qdrant.GetResponse, error) {
	f := fp.f
	defer f.mu.Unlock()
	if err := f.enter("GetPoints"); err != nil {
		return nil, err
	}
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
