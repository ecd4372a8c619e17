package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Response;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One connection to the daemon: a writer lock, a reader thread and the table of requests in flight.
 * A connection is never reused after it fails; the client opens a new one.
 */
final class Connection {
  private final SocketChannel channel;
  private final int maxRead;
  private final ConcurrentHashMap<Long, Call.Pending> pending = new ConcurrentHashMap<>();
  private final Object writeLock = new Object();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  /** The session holds taken on this connection (docs/sessions.md). */
  final SessionHolds sessions = new SessionHolds();

  private Connection(SocketChannel channel, int maxRead) {
    this.channel = channel;
    this.maxRead = maxRead;
  }

  /** Connects to the Unix socket at {@code path} and starts the reader thread. */
  static Connection open(Path path, int maxRead) throws IOException {
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      ch.connect(UnixDomainSocketAddress.of(path));
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    Connection c = new Connection(ch, maxRead);
    Thread reader = new Thread(c::readLoop, "holdfast-reader " + path);
    reader.setDaemon(true);
    reader.start();
    return c;
  }

  boolean alive() {
    return failure.get() == null;
  }

  /**
   * Registers {@code p} under {@code id} and writes the frame. Throws when the frame could not be
   * written completely; {@code p} is then unregistered and untouched, so the caller may resend it
   * elsewhere (the daemon never acts on an incomplete frame).
   */
  void send(long id, Call.Pending p, ByteBuffer frame) throws IOException {
    pending.put(id, p);
    Throwable f = failure.get();
    if (f != null) {
      if (pending.remove(id, p)) {
        throw new IOException("connection to holdfastd already failed", f);
      }
      return; // fail() got to it first and completed it
    }
    try {
      synchronized (writeLock) {
        p.writing = true;
        while (frame.hasRemaining()) {
          channel.write(frame);
        }
        p.written = true;
      }
    } catch (IOException e) {
      boolean mine = pending.remove(id, p);
      fail(e);
      if (mine) {
        throw e;
      }
    }
  }

  /**
   * Forgets request {@code id} after its deadline. A response that still arrives is dropped. A
   * frame stuck half-written would corrupt the stream, so that fails the connection.
   */
  boolean abandon(long id, Call.Pending p) {
    if (!pending.remove(id, p)) {
      return false;
    }
    if (p.writing && !p.written) {
      fail(new IOException("request write stalled past its deadline"));
    }
    return true;
  }

  /**
   * Records why the connection died (first reason wins), closes the socket and fails every request
   * in flight.
   */
  void fail(Throwable cause) {
    if (!failure.compareAndSet(null, cause)) {
      return;
    }
    try {
      channel.close(); // also wakes the reader blocked in read()
    } catch (IOException ignored) {
      // closing a dead socket; nothing to do
    }
    for (Long id : pending.keySet()) {
      Call.Pending p = pending.remove(id);
      if (p != null) {
        p.finish().connectionLost(cause);
      }
    }
    // The daemon releases a connection's session holds when it closes: they are all lost.
    sessions.connectionEnded(cause);
  }

  private void readLoop() {
    ByteBuffer header = ByteBuffer.allocate(Framing.HEADER_BYTES);
    try {
      while (true) {
        header.clear();
        readFully(header);
        ByteBuffer body = ByteBuffer.allocate(Framing.bodyLength(header, maxRead));
        readFully(body);
        Response r = Response.parseFrom(body.array());
        if (r.getId() == 0 && r.getResultCase() == Response.ResultCase.SESSION_EVENT) {
          // Unsolicited: session holds of this connection were lost. Not the end of it.
          sessions.onEvent(r.getSessionEvent());
          continue;
        }
        if (r.getId() == 0) {
          // Any other id-0 frame: the daemon could not tie its answer to a request (it could
          // not decode our frame); it closes the connection after this.
          fail(
              HoldfastException.of(
                  r.getCode() == Code.CODE_UNSPECIFIED ? Code.CODE_INTERNAL : r.getCode(),
                  "",
                  "daemon rejected the connection: " + r.getMessage(),
                  r.getCorrelationId(),
                  null));
          return;
        }
        Call.Pending p = pending.remove(r.getId());
        if (p != null) {
          p.finish().respond(r, this);
        }
        // else: the caller's deadline passed; drop the late answer.
      }
    } catch (Throwable t) {
      fail(t);
    }
  }

  private void readFully(ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      if (channel.read(buf) < 0) {
        throw new EOFException("holdfastd closed the connection");
      }
    }
  }
}
