package holdfast

// Framing: a 4-byte big-endian length, then that many bytes of a protobuf
// envelope. No I/O policy here beyond reading and writing one frame.

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/proto"
)

const frameHeaderLen = 4

// encodeFrame marshals m and prefixes its length. It refuses bodies larger
// than maxBody so an oversized request fails locally instead of making the
// daemon drop the whole connection.
func encodeFrame(m proto.Message, maxBody int) ([]byte, error) {
	return appendFrame(nil, m, maxBody)
}

// appendFrame is encodeFrame appending to dst.
func appendFrame(dst []byte, m proto.Message, maxBody int) ([]byte, error) {
	size := proto.Size(m)
	if maxBody > 0 && size > maxBody {
		return nil, fmt.Errorf("encoded request is %d bytes, above the %d-byte frame limit", size, maxBody)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst, m)
}

// Frame buffers of requests, reused.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putFrame gives a frame's buffer back (small ones only).
func putFrame(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		framePool.Put(bp)
	}
}

// readFrame reads one frame body from r. An announced length above maxBody
// is an error (the stream cannot be trusted after that).
func readFrame(r io.Reader, maxBody int) ([]byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if maxBody > 0 && int64(n) > int64(maxBody) {
		return nil, fmt.Errorf("daemon sent a %d-byte frame, above the %d-byte read limit", n, maxBody)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}
