package dev.holdfast.client;

import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A scripted stand-in for the daemon's socket, for transport mechanics a real daemon cannot be made
 * to show on demand (answers out of order, answers that never come, a frame with id 0). Daemon
 * behaviour is tested against a real holdfastd in {@link HoldfastLiveTest}.
 */
final class ScriptedPeer implements AutoCloseable {
  interface Handler {
    void handle(ScriptedPeer peer, SocketChannel conn, Request request) throws IOException;
  }

  final Path path;
  private final Path dir;
  private final ServerSocketChannel server;
  private final Handler handler;
  private final List<SocketChannel> conns = new CopyOnWriteArrayList<>();

  ScriptedPeer(Handler handler) throws IOException {
    this.handler = handler;
    this.dir = Files.createTempDirectory("hf-java-peer");
    this.path = dir.resolve("hf.sock");
    this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(path));
    Thread t = new Thread(this::acceptLoop, "scripted-peer");
    t.setDaemon(true);
    t.start();
  }

  private void acceptLoop() {
    try {
      while (true) {
        SocketChannel c = server.accept();
        conns.add(c);
        Thread t = new Thread(() -> serve(c), "scripted-peer-conn");
        t.setDaemon(true);
        t.start();
      }
    } catch (IOException closed) {
      // listener closed: the test is over
    }
  }

  private void serve(SocketChannel c) {
    try {
      ByteBuffer header = ByteBuffer.allocate(4);
      while (true) {
        header.clear();
        readFully(c, header);
        ByteBuffer body = ByteBuffer.allocate(Framing.bodyLength(header, 1 << 20));
        readFully(c, body);
        handler.handle(this, c, Request.parseFrom(body.array()));
      }
    } catch (IOException done) {
      // connection closed by either side
    }
  }

  private static void readFully(SocketChannel c, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (c.read(b) < 0) {
        throw new IOException("eof");
      }
    }
  }

  void send(SocketChannel c, Response r) {
    try {
      ByteBuffer frame = Framing.encode(r, 0);
      synchronized (c) {
        while (frame.hasRemaining()) {
          c.write(frame);
        }
      }
    } catch (Exception e) {
      // the client went away; nothing to answer
    }
  }

  /** Closes every accepted connection, as a daemon restart would. */
  void dropConnections() {
    for (SocketChannel c : conns) {
      try {
        c.close();
      } catch (IOException ignored) {
        // already closed
      }
    }
    conns.clear();
  }

  @Override
  public void close() throws IOException {
    server.close();
    dropConnections();
    Files.deleteIfExists(path);
    Files.deleteIfExists(dir);
  }
}
