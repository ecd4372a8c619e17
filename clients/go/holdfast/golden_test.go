package holdfast

// Golden wire frames shared by the daemon and every client
// (protos/testdata/README.md): decode each frame, compare it with the
// manifest's JSON, re-encode it byte for byte.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	pb "github.com/holdfast/holdfast/clients/go/holdfastpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

type goldenCase struct {
	Name string          `json:"name"`
	Type string          `json:"type"`
	File string          `json:"file"`
	JSON json.RawMessage `json:"json"`
}

func TestGoldenFrames(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "protos", "testdata")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("golden vectors missing: %v", err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("manifest.json lists no cases")
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			frame, err := os.ReadFile(filepath.Join(dir, tc.File))
			if err != nil {
				t.Fatal(err)
			}
			body, err := readFrame(bytes.NewReader(frame), 0)
			if err != nil {
				t.Fatalf("readFrame: %v", err)
			}
			if len(body)+frameHeaderLen != len(frame) {
				t.Fatalf("frame length %d, file has %d bytes after the header", len(body), len(frame)-frameHeaderLen)
			}

			var got, want proto.Message
			switch tc.Type {
			case "Request":
				got, want = &pb.Request{}, &pb.Request{}
			case "Response":
				got, want = &pb.Response{}, &pb.Response{}
			default:
				t.Fatalf("unknown type %q", tc.Type)
			}
			if err := proto.Unmarshal(body, got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := (protojson.UnmarshalOptions{}).Unmarshal(tc.JSON, want); err != nil {
				t.Fatalf("manifest JSON: %v", err)
			}
			if !proto.Equal(want, got) {
				t.Fatalf("decoded frame differs from manifest JSON:\n json: %v\nframe: %v",
					protojson.Format(want), protojson.Format(got))
			}

			again, err := encodeFrame(got, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, frame) {
				t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", again, frame)
			}
		})
	}
}
