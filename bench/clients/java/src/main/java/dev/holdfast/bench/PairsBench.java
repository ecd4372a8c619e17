package dev.holdfast.bench;

import dev.holdfast.client.Hold;
import dev.holdfast.client.HoldfastClient;
import dev.holdfast.client.Target;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.TransportMode;

/**
 * Hold + release pairs per second: the holdfast Java client (one HoldfastClient shared by every
 * thread) against Redisson (RLock tryLock(0, lease) + unlock, one RedissonClient shared), run
 * alternately with 1 and 16 threads, each thread on its own key. Within a round the two sides
 * alternate in half-second slices, so that both see the same load of a shared machine. Prints one line per measurement,
 * a table of medians and the lines {@code ratio_seq X} and {@code ratio_16 Y} (medians of the
 * per-round ratios).
 *
 * <p>Usage: PairsBench HOLDFAST_SOCKET REDIS_SOCKET [SECONDS [ROUNDS [WARMUP_SECONDS]]]
 */
public final class PairsBench {
  private static final Duration TTL = Duration.ofSeconds(30);
  /** -Dbench.threads=16 (one count only) and -Dbench.only=holdfast|redisson: for profiling. */
  private static final int[] THREADS =
      System.getProperty("bench.threads") != null
          ? new int[] {Integer.parseInt(System.getProperty("bench.threads")), 16}
          : new int[] {1, 16};
  private static final String ONLY = System.getProperty("bench.only", "");

  interface Pair {
    void run() throws Exception;
  }

  interface PairFactory {
    Pair forThread(int thread);
  }

  record Result(double pairsPerSec, double p50Micros, double p99Micros, long errors) {}

  public static void main(String[] args) throws Exception {
    Path hfSocket = Path.of(args[0]);
    String redisSocket = args[1];
    double seconds = args.length > 2 ? Double.parseDouble(args[2]) : 5;
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    double warmup = args.length > 4 ? Double.parseDouble(args[4]) : 3;

    Config cfg = new Config();
    cfg.setTransportMode(TransportMode.EPOLL);
    cfg.useSingleServer()
        .setAddress("redis+uds://" + redisSocket)
        .setConnectionMinimumIdleSize(16)
        .setConnectionPoolSize(32);
    RedissonClient redisson = Redisson.create(cfg);
    HoldfastClient hf = HoldfastClient.connect(hfSocket);
    String run = Long.toHexString(System.nanoTime());

    PairFactory holdfast =
        t -> {
          Target seat = Target.seats("bench-java-" + run + "-" + t);
          return () -> {
            Hold h = hf.hold("seat", "bench", seat).ttl(TTL).acquire();
            h.release();
          };
        };
    PairFactory redissonLock =
        t -> {
          RLock lock = redisson.getLock("bench-java-rl-" + run + "-" + t);
          return () -> {
            if (!lock.tryLock(0, TTL.toMillis(), TimeUnit.MILLISECONDS)) {
              throw new IllegalStateException("lock held by another");
            }
            lock.unlock();
          };
        };

    System.out.printf(Locale.ROOT, "warm-up %.0f s per side and thread count%n", warmup);
    for (int threads : THREADS) {
      measure(holdfast, threads, warmup);
      measure(redissonLock, threads, warmup);
    }

    // results[round][threadIndex][0 = holdfast, 1 = redisson]
    Result[][][] results = new Result[rounds][THREADS.length][2];
    System.out.printf(
        Locale.ROOT, "%-6s %-8s %-9s %12s %10s %10s %7s%n",
        "round", "threads", "client", "pairs/s", "p50 us", "p99 us", "errors");
    for (int r = 0; r < rounds; r++) {
      for (int ti = 0; ti < THREADS.length; ti++) {
        Result[] pair = measureInterleaved(holdfast, redissonLock, THREADS[ti], seconds, r + ti);
        for (int side = 0; side < 2; side++) {
          Result res = pair[side];
          results[r][ti][side] = res;
          System.out.printf(
              Locale.ROOT, "%-6d %-8d %-9s %12.0f %10.0f %10.0f %7d%n",
              r + 1, THREADS[ti], side == 0 ? "holdfast" : "redisson",
              res.pairsPerSec, res.p50Micros, res.p99Micros, res.errors);
        }
      }
    }

    System.out.println();
    System.out.printf(
        Locale.ROOT, "%-8s %14s %10s %14s %10s %8s%n",
        "threads", "holdfast p/s", "p50 us", "redisson p/s", "p50 us", "ratio");
    double[] ratioMedians = new double[THREADS.length];
    for (int ti = 0; ti < THREADS.length; ti++) {
      double[] hfRate = new double[rounds], hfP50 = new double[rounds];
      double[] rlRate = new double[rounds], rlP50 = new double[rounds];
      double[] ratio = new double[rounds];
      for (int r = 0; r < rounds; r++) {
        hfRate[r] = results[r][ti][0].pairsPerSec;
        hfP50[r] = results[r][ti][0].p50Micros;
        rlRate[r] = results[r][ti][1].pairsPerSec;
        rlP50[r] = results[r][ti][1].p50Micros;
        ratio[r] = hfRate[r] / rlRate[r];
      }
      ratioMedians[ti] = median(ratio);
      System.out.printf(
          Locale.ROOT, "%-8d %14.0f %10.0f %14.0f %10.0f %8.2f%n",
          THREADS[ti], median(hfRate), median(hfP50), median(rlRate), median(rlP50),
          ratioMedians[ti]);
    }
    System.out.println("(medians of " + rounds + " rounds; ratio: median of per-round ratios)");
    hf.close();
    redisson.shutdown();
    System.out.printf(Locale.ROOT, "ratio_seq %.2f%n", ratioMedians[0]);
    System.out.printf(Locale.ROOT, "ratio_16 %.2f%n", ratioMedians[1]);
    System.exit(0);
  }

  /** Slices of this length alternate between the sides, so both see the same machine load. */
  private static final double SLICE_SECONDS = 0.5;

  /**
   * Each side for {@code seconds} in all, in alternating slices (the first side alternates with
   * {@code parity}); returns {holdfast, redisson}, each over all its slices.
   */
  static Result[] measureInterleaved(
      PairFactory holdfast, PairFactory redisson, int threads, double seconds, int parity)
      throws Exception {
    int slices = Math.max(1, (int) Math.round(seconds / SLICE_SECONDS));
    double slice = seconds / slices;
    Sample[] sum = {new Sample(), new Sample()};
    for (int k = 0; k < slices; k++) {
      for (int j = 0; j < 2; j++) {
        int side = (k + parity + j) % 2;
        if (ONLY.equals(side == 0 ? "redisson" : "holdfast")) {
          continue;
        }
        sum[side].add(run(side == 0 ? holdfast : redisson, threads, slice));
      }
    }
    return new Result[] {sum[0].result(), sum[1].result()};
  }

  /** Latencies, pairs, errors and time of one or more measurements. */
  static final class Sample {
    long[] lat = new long[0];
    long errors;
    long nanos;

    void add(Sample s) {
      long[] both = Arrays.copyOf(lat, lat.length + s.lat.length);
      System.arraycopy(s.lat, 0, both, lat.length, s.lat.length);
      lat = both;
      errors += s.errors;
      nanos += s.nanos;
    }

    Result result() {
      long[] all = lat.clone();
      Arrays.sort(all);
      int total = all.length;
      double p50 = total == 0 ? 0 : all[total / 2] / 1e3;
      double p99 = total == 0 ? 0 : all[Math.min(total - 1, (int) (total * 0.99))] / 1e3;
      return new Result(nanos == 0 ? 1 : total / (nanos / 1e9), p50, p99, errors);
    }
  }

  static Result measure(PairFactory factory, int threads, double seconds) throws Exception {
    return run(factory, threads, seconds).result();
  }

  static Sample run(PairFactory factory, int threads, double seconds) throws Exception {
    long[][] lat = new long[threads][];
    int[] counts = new int[threads];
    long[] errors = new long[threads];
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    long durationNanos = (long) (seconds * 1e9);
    long[] window = new long[2];
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int ti = t;
      Thread w =
          new Thread(
              () -> {
                Pair pair = factory.forThread(ti);
                long[] mine = new long[1 << 12];
                int n = 0;
                ready.countDown();
                try {
                  go.await();
                } catch (InterruptedException e) {
                  return;
                }
                long end = window[1];
                while (true) {
                  long t0 = System.nanoTime();
                  if (t0 >= end) {
                    break;
                  }
                  try {
                    pair.run();
                  } catch (Exception e) {
                    errors[ti]++;
                    continue;
                  }
                  if (n == mine.length) {
                    mine = Arrays.copyOf(mine, n * 2);
                  }
                  mine[n++] = System.nanoTime() - t0;
                }
                lat[ti] = mine;
                counts[ti] = n;
              },
              "bench-" + t);
      workers.add(w);
      w.start();
    }
    ready.await();
    window[0] = System.nanoTime();
    window[1] = window[0] + durationNanos;
    go.countDown();
    for (Thread w : workers) {
      w.join();
    }
    long elapsed = System.nanoTime() - window[0];
    Sample out = new Sample();
    int total = 0;
    for (int t = 0; t < threads; t++) {
      total += counts[t];
      out.errors += errors[t];
    }
    out.lat = new long[total];
    int at = 0;
    for (int t = 0; t < threads; t++) {
      System.arraycopy(lat[t], 0, out.lat, at, counts[t]);
      at += counts[t];
    }
    out.nanos = elapsed;
    return out;
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }
}
