package io.anamnesis.cli;

import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.RangeChannel;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One remote file read by HTTP range requests ({@code java.net.http}): the transport behind a
 * {@link RangeChannel}. Every answer is checked before its body is taken:
 * <ul>
 * <li>{@code 206} must say the range asked for and the file's size ({@code Content-Range})
 *     and carry exactly that many bytes: a shorter answer is an error, a longer one is cut
 *     off where it passes what was asked.</li>
 * <li>{@code 200} is a server that ignored the range: accepted only for the first probe of a
 *     file no longer than the probe; otherwise refused from its status and headers, and its
 *     body is closed unread, so a whole model is never streamed.</li>
 * <li>Redirects (the hub sends each file to a CDN) are followed here, at most
 *     {@value #MAX_REDIRECTS}, never to plain http off this machine; the {@code Authorization} header
 *     goes only to the origin it was meant for and is dropped on a redirect to another
 *     host. The last hop is remembered, so the next ranges go straight to it.</li>
 * <li>{@code 404}, {@code 401}/{@code 403} and every other status are I/O errors (exit 7)
 *     naming the URL and, for access, the token; the token itself is never printed.</li>
 * <li>Each exchange, body included, is bounded by the timeout.</li>
 * </ul>
 * It counts the requests it makes (redirect hops included) and the body bytes it takes.
 */
final class HttpRanges implements RangeChannel.Source {
    /** The first request of every file: enough for most headers, whole for most small files. */
    static final int FIRST_PROBE = 100_000;
    static final int MAX_REDIRECTS = 10;
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    private static final Pattern CONTENT_RANGE = Pattern.compile("bytes (\\d+)-(\\d+)/(\\d+|\\*)");
    private static final Pattern UNSATISFIED = Pattern.compile("bytes \\*/(\\d+)");
    private static final String USER_AGENT = "amn (anamnesis)";

    /** What the first probe found: the file's size and its first bytes. */
    record Head(long size, byte[] bytes) {
    }

    private final HttpClient client;
    private final RemoteRef ref;
    private final Duration timeout;
    private final Stats stats;
    private URI current;
    private boolean authorized;
    private long size = -1;

    /** Requests and bytes over every file of one run. */
    static final class Stats {
        int requests;
        int redirects;
        long bytes;
    }

    HttpRanges(HttpClient client, RemoteRef ref, Duration timeout, Stats stats) {
        this.client = client;
        this.ref = ref;
        this.timeout = timeout;
        this.stats = stats;
        this.current = ref.uri();
        this.authorized = ref.token().isPresent();
    }

    static HttpClient newClient(Duration timeout) {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NEVER) // followed here, to drop the token across hosts
                .connectTimeout(timeout)
                .build();
    }

    /** The first {@value #FIRST_PROBE} bytes (or the whole file, when shorter) and the file's size. */
    Head first() {
        return first(FIRST_PROBE);
    }

    Head first(int probe) {
        return first(probe, false).orElseThrow();
    }

    /**
     * As {@link #first()}, for a file that may not be there (a model's {@code config.json}):
     * a server that answers 404 or 410 gives empty instead of an error.
     */
    Optional<Head> firstIfFound() {
        return first(FIRST_PROBE, true);
    }

    private Optional<Head> first(int probe, boolean mayBeAbsent) {
        Answer a = exchange("bytes=0-" + (probe - 1), probe, true, mayBeAbsent);
        if (a == null) return Optional.empty();
        if (a.status == 416) {
            long total = a.header("Content-Range").map(UNSATISFIED::matcher).filter(Matcher::matches)
                    .map(m -> Long.parseLong(m.group(1))).orElse(-1L);
            if (total == 0) {
                size = 0;
                return Optional.of(new Head(0, new byte[0]));
            }
            throw new TensorIOException(ref.display() + ": the server cannot serve its first bytes (HTTP 416)");
        }
        if (a.status == 200) {
            // a server that ignores ranges, but the whole file fits in what was asked
            size = a.body.length;
            return Optional.of(new Head(size, a.body));
        }
        Range r = a.range();
        if (r.total < 0) throw new TensorIOException(ref.display() + ": the server does not say the file's size (Content-Range: bytes "
                + r.first + "-" + r.last + "/*)");
        size = r.total;
        check(a, r, 0, Math.min(probe, size));
        return Optional.of(new Head(size, a.body));
    }

    @Override
    public byte[] fetch(long offset, int length) {
        if (size < 0) throw new IllegalStateException("first() was not called");
        // a range that ends at the end of the file is asked as a suffix ("the last N bytes")
        String range = offset + length == size && offset > 0 ? "bytes=-" + length : "bytes=" + offset + "-" + (offset + length - 1);
        Answer a = exchange(range, length, false, false);
        Range r = a.range();
        if (r.total != size) {
            throw new TensorIOException(ref.display() + ": the file changed between two requests (it was " + size
                    + " bytes, the server now says " + (r.total < 0 ? "*" : Long.toString(r.total)) + ")");
        }
        check(a, r, offset, length);
        return a.body;
    }

    /** The answer carries exactly {@code [offset, offset + length)}. */
    private void check(Answer a, Range r, long offset, long length) {
        long last = offset + length - 1;
        if (r.first != offset || r.last != last || a.body.length != length) {
            throw new TensorIOException(ref.display() + ": asked for bytes " + offset + "-" + last + ", the server answered "
                    + a.body.length + " bytes as " + r.first + "-" + r.last + ": a response shorter than asked");
        }
    }

    /** An answer whose body was taken: 206, 200 (whole small file) or 416. */
    private record Answer(int status, java.net.http.HttpHeaders headers, byte[] body, RemoteRef ref) {
        java.util.Optional<String> header(String name) {
            return headers.firstValue(name);
        }

        Range range() {
            String cr = header("Content-Range").orElseThrow(() -> new TensorIOException(ref.display()
                    + ": the server answered a range request (HTTP 206) without a Content-Range"));
            Matcher m = CONTENT_RANGE.matcher(cr.strip());
            if (!m.matches()) throw new TensorIOException(ref.display() + ": unreadable Content-Range '" + cr + "'");
            try {
                long total = m.group(3).equals("*") ? -1 : Long.parseLong(m.group(3));
                return new Range(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), total);
            } catch (NumberFormatException e) {
                throw new TensorIOException(ref.display() + ": unreadable Content-Range '" + cr + "'");
            }
        }
    }

    private record Range(long first, long last, long total) {
    }

    /**
     * One range request, redirects followed: the answer whose body was taken, or a typed
     * error for every status that is not one.
     *
     * @param asked      bytes the range covers: the most a body may hold
     * @param firstProbe whether a 200 with the whole file may be taken (it fits in {@code asked})
     * @param mayBeAbsent whether a 404 or 410 is an answer (null) rather than an error
     */
    private Answer exchange(String range, long asked, boolean firstProbe, boolean mayBeAbsent) {
        URI uri = current;
        boolean auth = authorized;
        for (int hop = 0; ; hop++) {
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(timeout)
                    .header("Range", range).header("User-Agent", USER_AGENT);
            if (auth) b.header("Authorization", "Bearer " + ref.token().orElseThrow());
            stats.requests++;
            HttpResponse<byte[]> response = send(b.build(), asked, firstProbe);
            int status = response.statusCode();
            Log.debug("GET {} {} -> {}{}", shown(uri), range, status,
                    response.body() == null ? "" : " (" + response.body().length + " bytes)");
            if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) {
                if (hop == MAX_REDIRECTS) throw new TensorIOException(ref.display() + ": more than " + MAX_REDIRECTS + " redirects");
                String location = response.headers().firstValue("Location").orElseThrow(() ->
                        new TensorIOException(ref.display() + ": a redirect (HTTP " + status + ") without a Location"));
                URI next;
                try {
                    next = uri.resolve(location.strip());
                } catch (IllegalArgumentException e) {
                    throw new TensorIOException(ref.display() + ": a redirect to an invalid URL", e);
                }
                if (next.getScheme() == null || !(next.getScheme().equalsIgnoreCase("https") || next.getScheme().equalsIgnoreCase("http"))) {
                    throw new TensorIOException(ref.display() + ": a redirect to a URL that is not http(s)");
                }
                if (!RemoteRef.secureOrLoopback(next)) {
                    throw new TensorIOException(ref.display() + ": a redirect to plain http on another machine was refused");
                }
                // the token is for the host it was given for; a CDN's signed URL needs none
                if (!sameOrigin(uri, next)) auth = false;
                stats.redirects++;
                uri = next;
                continue;
            }
            current = uri;
            authorized = auth;
            if (status == 206 || status == 416 || (status == 200 && response.body() != null)) {
                byte[] body = response.body() == null ? new byte[0] : response.body();
                stats.bytes += body.length;
                return new Answer(status, response.headers(), body, ref);
            }
            if (mayBeAbsent && (status == 404 || status == 410)) return null;
            throw refusal(status, response.headers(), auth);
        }
    }

    private TensorIOException refusal(int status, java.net.http.HttpHeaders headers, boolean sentToken) {
        String where = ref.display();
        return switch (status) {
            case 200 -> {
                OptionalLong length = headers.firstValueAsLong("Content-Length");
                yield new TensorIOException(where + ": the server ignored the range request (HTTP 200 with the whole file"
                        + (length.isPresent() ? ", " + length.getAsLong() + " bytes" : "") + "); amn reads only headers"
                        + " from a URL and does not download whole files: download it first, or use a server that"
                        + " supports HTTP range requests");
            }
            case 404, 410 -> new TensorIOException(where + ": not found (HTTP " + status + ")"
                    + (ref.reference().regionMatches(true, 0, RemoteRef.HF, 0, RemoteRef.HF.length())
                    ? "; check the repository, the revision and the file's path" : ""));
            case 401, 403 -> new TensorIOException(where + ": access denied (HTTP " + status + "): "
                    + (sentToken ? "the token in HF_TOKEN was refused (does it grant access to this repository?)"
                    : ref.token().isPresent() ? "the server wants credentials amn does not send to this host"
                    : "a token may be needed: set HF_TOKEN to an access token (gated or private repositories)"));
            default -> new TensorIOException(where + ": the server answered HTTP " + status);
        };
    }

    private HttpResponse<byte[]> send(HttpRequest request, long asked, boolean firstProbe) {
        HttpResponse.BodyHandler<byte[]> handler = info -> {
            int status = info.statusCode();
            if (status == 206) return new Limited(asked);
            if (status == 200 && firstProbe) {
                OptionalLong length = info.headers().firstValueAsLong("Content-Length");
                if (length.isPresent() && length.getAsLong() <= asked) return new Limited(asked);
            }
            if (status == 416) return new Limited(4096);
            // anything else is refused or followed from its status and headers: the body,
            // perhaps a whole model, is not read
            return new Unread();
        };
        CompletableFuture<HttpResponse<byte[]>> future = client.sendAsync(request, handler);
        try {
            return future.get(timeout.toMillis() + timeout.toMillis() / 2, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw timedOut(e);
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new TensorIOException(ref.display() + ": interrupted", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof HttpConnectTimeoutException || cause instanceof HttpTimeoutException) throw timedOut(cause);
            if (cause instanceof ConnectException) {
                throw new TensorIOException(ref.display() + ": cannot connect to " + request.uri().getHost()
                        + (cause.getMessage() == null ? "" : " (" + cause.getMessage() + ")"), cause);
            }
            if (cause instanceof TooLong) {
                throw new TensorIOException(ref.display() + ": the server sent more than the " + asked + " bytes asked for", cause);
            }
            throw new TensorIOException(ref.display() + ": " + (cause == null ? e : cause).getClass().getSimpleName()
                    + (cause == null || cause.getMessage() == null ? "" : " " + cause.getMessage()), cause);
        }
    }

    private TensorIOException timedOut(Throwable cause) {
        return new TensorIOException(ref.display() + ": no answer within " + timeout.toSeconds() + " s (timed out;"
                + " AMN_HTTP_TIMEOUT sets the seconds)", cause);
    }

    /** A URL for the debug log: no query (a CDN's signed URL carries its signature there). */
    private static String shown(URI uri) {
        return uri.getScheme() + "://" + uri.getRawAuthority() + uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?…");
    }

    private static boolean sameOrigin(URI a, URI b) {
        return a.getHost() != null && a.getHost().equalsIgnoreCase(b.getHost())
                && a.getScheme().equalsIgnoreCase(b.getScheme()) && RemoteRef.port(a) == RemoteRef.port(b);
    }

    /** A body longer than asked. */
    private static final class TooLong extends IOException {
        TooLong() {
            super("longer than asked");
        }
    }

    /** Takes at most {@code max} bytes; more cancels the exchange. */
    private static final class Limited implements HttpResponse.BodySubscriber<byte[]> {
        private final long max;
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final CompletableFuture<byte[]> result = new CompletableFuture<>();
        private Flow.Subscription subscription;

        Limited(long max) {
            this.max = max;
        }

        @Override
        public CompletionStage<byte[]> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            for (ByteBuffer b : items) {
                if (bytes.size() + (long) b.remaining() > max) {
                    subscription.cancel();
                    result.completeExceptionally(new TooLong());
                    return;
                }
                byte[] chunk = new byte[b.remaining()];
                b.get(chunk);
                bytes.write(chunk, 0, chunk.length);
            }
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            result.complete(bytes.toByteArray());
        }
    }

    /** Reads nothing: cancels at once (the connection is dropped), the body is {@code null}. */
    private static final class Unread implements HttpResponse.BodySubscriber<byte[]> {
        private final CompletableFuture<byte[]> result = new CompletableFuture<>();

        @Override
        public CompletionStage<byte[]> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            s.cancel();
            result.complete(null);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            // cancelled
        }

        @Override
        public void onError(Throwable t) {
            result.complete(null);
        }

        @Override
        public void onComplete() {
            result.complete(null);
        }
    }
}
