# habilis as a static binary on a minimal base: `docker compose up` builds it.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/habilis ./cmd/habilis

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/habilis /usr/local/bin/habilis
ENTRYPOINT ["/usr/local/bin/habilis"]
