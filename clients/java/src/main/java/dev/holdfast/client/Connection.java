package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Response;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * One connection to the daemon: a writer lock, the table of requests in flight and the read role.
 *
 * <p>Reading is leader/followers. Whoever holds the read role reads frames and hands each answer
 * to its caller. A blocking caller waits for its own answer by taking the role when it is free
 * (so a lone caller reads its own answer on its own thread, with no hand-off); when another
 * thread holds it, the caller parks until that thread hands it the answer, or hands it the role
 * when done. Answers of asynchronous calls and session events need a reader with no caller
 * behind it: a background thread takes the role while such calls are in flight or session holds
 * exist, and parks otherwise. A connection is never reused after it fails; the client opens a new
 * one.
 */
final class Connection {
  private static final Consumer<SelectionKey> IGNORE_KEYS = k -> {};
  private static final int READ_BUFFER = 16 * 1024;

  private final SocketChannel channel;
  private final Selector readSelector;
  private final Selector writeSelector;
  private final int maxRead;
  private final String name;
  private final ConcurrentHashMap<Long, Call.Pending> pending = new ConcurrentHashMap<>();
  /** Calls in {@link #pending} that no thread waits for (asynchronous calls). */
  private final AtomicInteger unattended = new AtomicInteger();
  /** Blocking callers parked until their answer or the read role comes. */
  private final ConcurrentLinkedQueue<Call.Pending> followers = new ConcurrentLinkedQueue<>();
  /** The read role: its holder alone touches the read buffer and the read selector. */
  private final AtomicBoolean reading = new AtomicBoolean();
  private static final int QUEUED = 0;
  private static final int WRITTEN = 1;
  private static final int UNSENT = 2;
  private static final int DROPPED = 3;
  private static final int MAX_BATCH = 64;
  /** Frames to write; the holder of {@link #flushing} writes them, many per system call. */
  private final ConcurrentLinkedQueue<Call.Pending> outbox = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean flushing = new AtomicBoolean();
  private final Call.Pending[] batch = new Call.Pending[MAX_BATCH]; // flusher's
  private final ByteBuffer[] gather = new ByteBuffer[MAX_BATCH]; // flusher's
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile Thread background; // started on first need, parked while not needed
  /** The session holds taken on this connection (docs/sessions.md). */
  final SessionHolds sessions = new SessionHolds(this::ensureReader);

  // Owned by the read-role holder (handed over through {@link #reading}).
  private ByteBuffer in = ByteBuffer.allocate(READ_BUFFER);
  private int parsed; // bytes of {@link #in} already dispatched

  private Connection(SocketChannel channel, int maxRead, String name) throws IOException {
    this.channel = channel;
    this.maxRead = maxRead;
    this.name = name;
    Selector r = null;
    Selector w = null;
    try {
      r = Selector.open();
      w = Selector.open();
      channel.configureBlocking(false);
      channel.register(r, SelectionKey.OP_READ);
      channel.register(w, SelectionKey.OP_WRITE);
    } catch (IOException | RuntimeException e) {
      if (r != null) {
        r.close();
      }
      if (w != null) {
        w.close();
      }
      throw e;
    }
    this.readSelector = r;
    this.writeSelector = w;
  }

  /** Connects to the Unix socket at {@code path}. */
  static Connection open(Path path, int maxRead) throws IOException {
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      ch.connect(UnixDomainSocketAddress.of(path));
      return new Connection(ch, maxRead, "holdfast-reader " + path);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  boolean alive() {
    return failure.get() == null;
  }

  /**
   * Registers {@code p} under {@code id} and writes the frame. Throws when the frame could not be
   * written completely; {@code p} is then unregistered and untouched, so the caller may resend it
   * elsewhere (the daemon never acts on an incomplete frame). A write that stalls past {@code
   * deadlineNanos} fails the connection.
   */
  void send(long id, Call.Pending p, ByteBuffer frame, long deadlineNanos) throws IOException {
    p.id = id;
    p.frame = frame;
    p.deadlineNanos = deadlineNanos;
    if (p.waiter == null) {
      unattended.incrementAndGet();
    }
    pending.put(id, p);
    Throwable f = failure.get();
    if (f != null) {
      if (take(id, p)) {
        throw new IOException("connection to holdfastd already failed", f);
      }
      return; // fail() got to it first and completed it
    }
    outbox.add(p);
    // Whoever finds no writer at work writes every queued frame (its own and those queued
    // meanwhile) in one gathering write. A blocking caller goes on to wait for its answer at once:
    // if its frame cannot be written, its wait ends with an unsent outcome and it sends again.
    // An asynchronous caller waits for the write under way, to learn whether to send again.
    for (int spins = 0; ; spins++) {
      if (flushing.compareAndSet(false, true)) {
        try {
          flush();
        } finally {
          flushing.set(false);
        }
        if (!outbox.isEmpty()) {
          continue; // queued as the flush ended: its sender may have seen the flag still set
        }
      }
      if (p.waiter != null || p.sendState != QUEUED) {
        break;
      }
      if (spins < 100) {
        Thread.yield();
      } else {
        LockSupport.parkNanos(20_000); // a write stalled on a full socket buffer
      }
    }
    if (p.waiter != null) {
      return;
    }
    p.frame = null;
    if (p.sendState == UNSENT) {
      throw new IOException("could not write the request", failure.get());
    }
    ensureReader();
  }

  /** Writes queued frames until none is left. Holder of {@link #flushing} only. */
  private void flush() {
    while (true) {
      int n = 0;
      Call.Pending q;
      while (n < MAX_BATCH && (q = outbox.poll()) != null) {
        q.writing = true;
        batch[n] = q;
        gather[n] = q.frame;
        n++;
      }
      if (n == 0) {
        return;
      }
      int done = 0;
      try {
        while (done < n) {
          if (channel.write(gather, done, n - done) == 0) {
            awaitWritable(batch[done].deadlineNanos);
          }
          while (done < n && !gather[done].hasRemaining()) {
            batch[done].written = true;
            batch[done].sendState = WRITTEN;
            batch[done] = null;
            gather[done] = null;
            done++;
          }
        }
      } catch (IOException | RuntimeException e) {
        // Frames not (completely) written: the daemon never acts on them, so their senders may
        // send them again elsewhere. Those fail() got to first are its to complete.
        for (int i = done; i < n; i++) {
          unsent(batch[i], e);
          batch[i] = null;
          gather[i] = null;
        }
        while ((q = outbox.poll()) != null) {
          unsent(q, e);
        }
        fail(e);
        return;
      }
    }
  }

  private void unsent(Call.Pending q, Throwable cause) {
    boolean mine = take(q.id, q);
    q.sendState = mine ? UNSENT : DROPPED;
    if (mine && q.waiter != null) {
      q.outcome = new Lost(cause, true);
      LockSupport.unpark(q.waiter);
    }
  }

  private void awaitWritable(long deadlineNanos) throws IOException {
    long left = deadlineNanos - System.nanoTime();
    if (left <= 0) {
      throw new IOException("request write stalled past its deadline");
    }
    if (failure.get() != null) {
      throw new IOException("connection to holdfastd failed", failure.get());
    }
    writeSelector.select(IGNORE_KEYS, Math.min(millisAtLeastOne(left), 100));
  }

  /** Removes {@code p} from the table if it is still there: the caller then owns its outcome. */
  private boolean take(long id, Call.Pending p) {
    if (!pending.remove(id, p)) {
      return false;
    }
    if (p.waiter == null && unattended.decrementAndGet() == 0) {
      readSelector.wakeup(); // the background reader may stop
    }
    return true;
  }

  private Call.Pending take(long id) {
    Call.Pending p = pending.remove(id);
    if (p != null && p.waiter == null) {
      unattended.decrementAndGet();
    }
    return p;
  }

  /**
   * Forgets request {@code id} after its deadline. A response that still arrives is dropped. A
   * frame stuck half-written would corrupt the stream, so that fails the connection.
   */
  boolean abandon(long id, Call.Pending p) {
    if (!take(id, p)) {
      return false;
    }
    if (p.writing && !p.written) {
      fail(new IOException("request write stalled past its deadline"));
    }
    return true;
  }

  /**
   * Blocks until {@code p} (sent by this thread, {@code p.waiter}) has its outcome, its deadline
   * passes or the thread is interrupted; then returns. Reads frames itself while no other thread
   * does (leader), else parks until the reading thread hands over the answer or the role.
   */
  void await(Call.Pending p, long deadlineNanos) {
    Thread me = Thread.currentThread();
    while (p.outcome == null) {
      if (reading.compareAndSet(false, true)) {
        try {
          lead(p, deadlineNanos);
        } finally {
          releaseRole();
        }
      } else {
        followers.add(p);
        try {
          if (reading.get() && p.outcome == null) {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0 && !me.isInterrupted()) {
              LockSupport.parkNanos(this, left);
            }
          }
        } finally {
          followers.remove(p);
        }
      }
      if (p.outcome == null && (deadlineNanos - System.nanoTime() <= 0 || me.isInterrupted())) {
        if (!reading.get()) {
          handOff(); // a hand-off meant for this thread must not be lost with it
        }
        return;
      }
    }
  }

  /** Reads and dispatches frames until {@code mine} has its outcome or its deadline passes. */
  private void lead(Call.Pending mine, long deadlineNanos) {
    Thread me = Thread.currentThread();
    boolean waitFirst = true; // the answer to a request just written is not there yet
    try {
      while (mine.outcome == null && failure.get() == null) {
        if (dispatchBuffered()) {
          continue;
        }
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0 || me.isInterrupted()) {
          return;
        }
        readSome(millisAtLeastOne(left), waitFirst);
        waitFirst = false;
      }
    } catch (Throwable t) {
      fail(t);
    }
  }

  /** Gives up the read role: to a parked caller still waiting, else to the background reader. */
  private void releaseRole() {
    reading.set(false);
    handOff();
  }

  private void handOff() {
    for (Call.Pending f : followers) {
      if (f.outcome == null) {
        LockSupport.unpark(f.waiter);
        return;
      }
    }
    if (needsBackground()) {
      wakeBackground();
    }
  }

  private boolean needsBackground() {
    return failure.get() == null && (unattended.get() > 0 || !sessions.isEmpty());
  }

  /** Makes sure someone reads: answers of asynchronous calls, session events. */
  void ensureReader() {
    if (!reading.get() && needsBackground()) {
      wakeBackground();
    }
  }

  private void wakeBackground() {
    Thread t = background;
    if (t == null) {
      synchronized (this) {
        t = background;
        if (t == null) {
          t = new Thread(this::backgroundLoop, name);
          t.setDaemon(true);
          background = t;
          t.start();
          return;
        }
      }
    }
    LockSupport.unpark(t);
  }

  private void backgroundLoop() {
    while (failure.get() == null) {
      if (needsBackground() && reading.compareAndSet(false, true)) {
        try {
          while (needsBackground()) {
            if (!dispatchBuffered()) {
              readSome(0, false);
            }
          }
        } catch (Throwable t) {
          fail(t);
        } finally {
          releaseRole();
        }
        continue; // the need may have come back as the role was given up
      }
      LockSupport.park(this); // woken by wakeBackground (or a role hand-off)
    }
  }

  /**
   * Waits up to {@code timeoutMillis} (0: until woken) for bytes and reads what is there. Role
   * holder only.
   */
  private void readSome(long timeoutMillis, boolean waitFirst) throws IOException {
    if (parsed == in.position()) {
      in.clear();
      parsed = 0;
    }
    if (!in.hasRemaining()) {
      makeRoom(Framing.HEADER_BYTES);
    }
    int n = waitFirst ? 0 : channel.read(in);
    if (n == 0) {
      readSelector.select(IGNORE_KEYS, timeoutMillis);
      n = channel.read(in);
    }
    if (n < 0) {
      throw new EOFException("holdfastd closed the connection");
    }
  }

  /** Room for {@code frameBytes} from {@link #parsed} on: compacts, or grows the buffer. */
  private void makeRoom(int frameBytes) {
    int have = in.position() - parsed;
    ByteBuffer to = frameBytes > in.capacity() ? ByteBuffer.allocate(frameBytes) : in;
    System.arraycopy(in.array(), parsed, to.array(), 0, have);
    to.clear();
    to.position(have);
    in = to;
    parsed = 0;
  }

  /**
   * Dispatches the first complete frame in the read buffer; false when there is none (after
   * making room for the rest of a partial one). Role holder only.
   */
  private boolean dispatchBuffered() throws IOException {
    int have = in.position() - parsed;
    if (have < Framing.HEADER_BYTES) {
      if (parsed > 0 && in.remaining() < Framing.HEADER_BYTES) {
        makeRoom(Framing.HEADER_BYTES);
      }
      return false;
    }
    int len = Framing.bodyLength(in, parsed, maxRead);
    int frame = Framing.HEADER_BYTES + len;
    if (have < frame) {
      if (in.capacity() - parsed < frame) {
        makeRoom(Math.max(frame, READ_BUFFER));
      }
      return false;
    }
    Response r = Response.parser().parseFrom(in.array(), parsed + Framing.HEADER_BYTES, len);
    parsed += frame;
    dispatch(r);
    return true;
  }

  private void dispatch(Response r) {
    if (r.getId() == 0 && r.getResultCase() == Response.ResultCase.SESSION_EVENT) {
      // Unsolicited: session holds of this connection were lost. Not the end of it.
      sessions.onEvent(r.getSessionEvent());
      return;
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
    Call.Pending p = take(r.getId());
    if (p == null) {
      return; // the caller's deadline passed; drop the late answer
    }
    if (p.waiter != null) {
      p.outcome = r; // its own thread completes the call
      LockSupport.unpark(p.waiter);
    } else {
      p.finish().respond(r, this);
    }
  }

  /**
   * Records why the connection died (first reason wins), closes the socket and fails every request
   * in flight.
   */
  void fail(Throwable cause) {
    if (!failure.compareAndSet(null, cause)) {
      return;
    }
    readSelector.wakeup();
    writeSelector.wakeup();
    try {
      channel.close();
    } catch (IOException ignored) {
      // closing a dead socket; nothing to do
    }
    for (Long id : pending.keySet()) {
      Call.Pending p = take(id);
      if (p == null) {
        continue;
      }
      if (p.waiter != null) {
        p.outcome = new Lost(cause, false);
        LockSupport.unpark(p.waiter);
      } else {
        p.finish().connectionLost(cause);
      }
    }
    Thread t = background;
    if (t != null) {
      LockSupport.unpark(t);
    }
    closeQuietly(readSelector);
    closeQuietly(writeSelector);
    // The daemon releases a connection's session holds when it closes: they are all lost.
    sessions.connectionEnded(cause);
  }

  /**
   * The outcome of a blocking call whose connection failed before its answer; {@code unsent}: its
   * frame was not (completely) written, so the daemon never saw it and it may be sent again.
   */
  record Lost(Throwable cause, boolean unsent) {}

  private static void closeQuietly(Selector s) {
    try {
      s.close();
    } catch (IOException | RuntimeException ignored) {
      // closing on the way out
    }
  }

  private static long millisAtLeastOne(long nanos) {
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos + 999_999));
  }
}
