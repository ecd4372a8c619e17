package dev.holdfast.client;

import com.google.protobuf.MessageLite;
import java.io.IOException;
import java.nio.ByteBuffer;

/** Wire framing: a 4-byte big-endian length, then that many bytes of a protobuf envelope. */
final class Framing {
  static final int HEADER_BYTES = 4;

  private Framing() {}

  /**
   * Encodes {@code message} as one frame. Bodies above {@code maxBody} (when positive) are refused
   * so an oversized request fails locally instead of making the daemon drop the connection.
   */
  static ByteBuffer encode(MessageLite message, int maxBody) throws FrameTooLargeException {
    int size = message.getSerializedSize();
    if (maxBody > 0 && size > maxBody) {
      throw new FrameTooLargeException(
          "encoded request is " + size + " bytes, above the " + maxBody + "-byte frame limit");
    }
    ByteBuffer buf = ByteBuffer.allocate(HEADER_BYTES + size);
    buf.putInt(size);
    buf.put(message.toByteArray());
    buf.flip();
    return buf;
  }

  /**
   * Parses a frame's length header. Lengths above {@code maxBody} (when positive) are an error: the
   * stream cannot be trusted after that.
   */
  static int bodyLength(ByteBuffer header, int maxBody) throws IOException {
    long n = Integer.toUnsignedLong(header.getInt(0));
    if (maxBody > 0 && n > maxBody) {
      throw new IOException(
          "daemon sent a " + n + "-byte frame, above the " + maxBody + "-byte read limit");
    }
    return (int) n;
  }

  static final class FrameTooLargeException extends Exception {
    private static final long serialVersionUID = 1L;

    FrameTooLargeException(String message) {
      super(message);
    }
  }
}
