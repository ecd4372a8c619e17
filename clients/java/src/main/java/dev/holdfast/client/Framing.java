package dev.holdfast.client;

import com.google.protobuf.CodedOutputStream;
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
    byte[] frame = new byte[HEADER_BYTES + size];
    frame[0] = (byte) (size >>> 24);
    frame[1] = (byte) (size >>> 16);
    frame[2] = (byte) (size >>> 8);
    frame[3] = (byte) size;
    try {
      CodedOutputStream out = CodedOutputStream.newInstance(frame, HEADER_BYTES, size);
      message.writeTo(out);
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("encoding a request: " + e.getMessage(), e);
    }
    return ByteBuffer.wrap(frame);
  }

  /**
   * Parses a frame's length header. Lengths above {@code maxBody} (when positive) are an error: the
   * stream cannot be trusted after that.
   */
  static int bodyLength(ByteBuffer header, int maxBody) throws IOException {
    return bodyLength(header, 0, maxBody);
  }

  /** {@link #bodyLength(ByteBuffer, int)} of a header at {@code at} in {@code buf}. */
  static int bodyLength(ByteBuffer buf, int at, int maxBody) throws IOException {
    long n = Integer.toUnsignedLong(buf.getInt(at));
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
