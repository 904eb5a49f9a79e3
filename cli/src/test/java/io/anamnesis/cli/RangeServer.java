package io.anamnesis.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A loopback HTTP server for the remote tests, written from RFC 9110's range rules
 * (section 14): {@code bytes=a-b}, {@code bytes=a-} and {@code bytes=-n} answered 206 with
 * {@code Content-Range: bytes a-b/size}; no Range header answered 200 with the whole file.
 * Per path it can instead redirect, demand a bearer token, ignore ranges, cut its answers
 * short, or never answer. It records every request it gets.
 */
final class RangeServer implements AutoCloseable {
    private static final Pattern RANGE = Pattern.compile("bytes=(\\d*)-(\\d*)");

    /** One request as the server saw it. */
    record Request(String path, String range, String authorization) {
    }

    private final HttpServer server;
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "range-server");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, byte[]> files = new ConcurrentHashMap<>();
    private final Map<String, String> redirects = new ConcurrentHashMap<>();
    private final Map<String, String> tokens = new ConcurrentHashMap<>();
    private final Map<String, Long> ignoringRanges = new ConcurrentHashMap<>();
    private final Map<String, Integer> shortBy = new ConcurrentHashMap<>();
    private final Map<String, Boolean> stalled = new ConcurrentHashMap<>();
    final List<Request> requests = new CopyOnWriteArrayList<>();
    /** Bytes a range-ignoring answer got out before the client hung up, and whether it finished. */
    final AtomicLong streamed = new AtomicLong();
    final AtomicBoolean streamFinished = new AtomicBoolean();
    /** Counted down when a range-ignoring answer ends, finished or cut off. */
    final CountDownLatch streamEnded = new CountDownLatch(1);
    private final CountDownLatch stop = new CountDownLatch(1);

    RangeServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(pool);
        server.createContext("/", this::handle);
        server.start();
    }

    /** {@code http://127.0.0.1:port}, no slash at the end. */
    String base() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** The same server by another host name: another origin. */
    String otherOrigin() {
        return "http://localhost:" + server.getAddress().getPort();
    }

    String url(String path) {
        return base() + path;
    }

    /** The bytes served at a path. */
    byte[] bytes(String path) {
        return files.get(path);
    }

    RangeServer file(String path, byte[] bytes) {
        files.put(path, bytes);
        return this;
    }

    RangeServer redirect(String path, String location) {
        redirects.put(path, location);
        return this;
    }

    /** Answers 401 without the token and 403 with another one. */
    RangeServer token(String path, String token) {
        tokens.put(path, token);
        return this;
    }

    /** Answers every request with 200 and {@code size} bytes, as a server without range support. */
    RangeServer ignoreRanges(String path, long size) {
        ignoringRanges.put(path, size);
        return this;
    }

    /** Answers ranges with {@code n} bytes fewer than asked (and says so in Content-Range). */
    RangeServer shortBy(String path, int n) {
        shortBy.put(path, n);
        return this;
    }

    /** Never answers (until the server stops). */
    RangeServer stall(String path) {
        stalled.put(path, true);
        return this;
    }

    /** Range requests to a path (redirects and refusals included). */
    long rangeRequests(String path) {
        return requests.stream().filter(r -> r.path().equals(path) && r.range() != null).count();
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            String range = ex.getRequestHeaders().getFirst("Range");
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            requests.add(new Request(path, range, auth));
            if (stalled.containsKey(path)) {
                try {
                    stop.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return;
            }
            String token = tokens.get(path);
            if (token != null && !("Bearer " + token).equals(auth)) {
                ex.sendResponseHeaders(auth == null ? 401 : 403, -1);
                return;
            }
            String location = redirects.get(path);
            if (location != null) {
                ex.getResponseHeaders().add("Location", location);
                ex.sendResponseHeaders(302, -1);
                return;
            }
            Long whole = ignoringRanges.get(path);
            if (whole != null) {
                streamWhole(ex, whole);
                return;
            }
            byte[] file = files.get(path);
            if (file == null) {
                ex.sendResponseHeaders(404, -1);
                return;
            }
            if (range == null) {
                ex.sendResponseHeaders(200, file.length);
                ex.getResponseBody().write(file);
                return;
            }
            Optional<long[]> r = parse(range, file.length);
            if (r.isEmpty()) {
                ex.getResponseHeaders().add("Content-Range", "bytes */" + file.length);
                ex.sendResponseHeaders(416, -1);
                return;
            }
            long first = r.get()[0];
            long last = r.get()[1] - shortBy.getOrDefault(path, 0);
            ex.getResponseHeaders().add("Content-Range", "bytes " + first + "-" + last + "/" + file.length);
            int n = (int) (last - first + 1);
            ex.sendResponseHeaders(206, n);
            ex.getResponseBody().write(file, (int) first, n);
        }
    }

    private void streamWhole(HttpExchange ex, long size) {
        try {
            ex.sendResponseHeaders(200, size);
            OutputStream out = ex.getResponseBody();
            byte[] chunk = new byte[64 << 10];
            for (long sent = 0; sent < size; ) {
                int n = (int) Math.min(chunk.length, size - sent);
                out.write(chunk, 0, n);
                sent += n;
                streamed.set(sent);
            }
            out.flush();
            streamFinished.set(true);
        } catch (IOException e) {
            // the client hung up: what the test wants to see
        } finally {
            streamEnded.countDown();
        }
    }

    /** [first, last] of a satisfiable range, RFC 9110 section 14.1.2. */
    static Optional<long[]> parse(String range, long size) {
        Matcher m = RANGE.matcher(range.strip());
        if (!m.matches() || (m.group(1).isEmpty() && m.group(2).isEmpty()) || size == 0) return Optional.empty();
        long first;
        long last;
        if (m.group(1).isEmpty()) {
            long n = Long.parseLong(m.group(2));
            if (n == 0) return Optional.empty();
            first = Math.max(0, size - n);
            last = size - 1;
        } else {
            first = Long.parseLong(m.group(1));
            last = m.group(2).isEmpty() ? size - 1 : Math.min(size - 1, Long.parseLong(m.group(2)));
            if (first >= size || last < first) return Optional.empty();
        }
        return Optional.of(new long[]{first, last});
    }

    @Override
    public void close() {
        stop.countDown();
        server.stop(0);
        pool.shutdownNow();
    }
}
