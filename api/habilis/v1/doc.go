// Package habilisv1 is the Go code generated from habilis.proto, the
// habilis.v1 gRPC API: messages, the ToolRouter client and server
// interfaces. Package api implements the server and wraps the client;
// regenerate with `go generate ./...` after editing the .proto.
package habilisv1
