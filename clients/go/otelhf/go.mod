module github.com/holdfast/holdfast/clients/go/otelhf

go 1.23.0

require (
	github.com/holdfast/holdfast/clients/go v0.0.0
	go.opentelemetry.io/otel v1.38.0
	go.opentelemetry.io/otel/trace v1.38.0
	google.golang.org/protobuf v1.36.12
)

// The client next door, in this repository.
replace github.com/holdfast/holdfast/clients/go => ../
