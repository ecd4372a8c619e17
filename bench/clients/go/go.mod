module github.com/holdfast/holdfast/bench/clients/go

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/holdfast/holdfast/clients/go v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/holdfast/holdfast/clients/go => ../../../clients/go
