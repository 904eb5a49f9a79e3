package io.anamnesis.cli;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

/**
 * A remote input: an {@code https://} URL ({@code http://} only to a loopback address: a
 * local mirror or a test server, never the token or a header in clear over a network), or
 * {@code hf://[datasets/]ORG/REPO[@REV]/PATH}, a file of a Hugging Face repository, resolved
 * as {@code huggingface_hub} resolves it: {@code {HF_ENDPOINT}/[datasets/]ORG/REPO/resolve/{REV or main}/PATH},
 * with {@code HF_ENDPOINT} defaulting to the public hub.
 *
 * <p>{@code HF_TOKEN} goes only to the hub: with an {@code hf://} reference, or a URL on the
 * endpoint's own host, never to any other host (a redirect to a CDN drops it, see
 * {@link HttpRanges}).
 *
 * @param reference what the user wrote, for messages
 * @param uri       what is requested
 * @param fileName  the last path segment, decoded: detection by extension and messages
 * @param token     the bearer token this URL may be sent, when there is one
 */
record RemoteRef(String reference, URI uri, String fileName, Optional<String> token) {
    static final String HF = "hf://";
    static final String DEFAULT_ENDPOINT = "https://huggingface.co";

    @Override
    public String toString() {
        // never the token
        return reference;
    }

    /** How messages name it: what the user wrote, and for {@code hf://} the URL it resolved to. */
    String display() {
        return reference.regionMatches(true, 0, HF, 0, HF.length()) ? reference + " (" + uri + ")" : reference;
    }

    /**
     * @throws UsageException when the reference is not a URL of a file, or a malformed
     *         {@code hf://} reference
     */
    static RemoteRef parse(String reference, Map<String, String> env) {
        URI endpoint = endpoint(env);
        Optional<String> token = Optional.ofNullable(env.get("HF_TOKEN")).map(String::strip).filter(t -> !t.isEmpty());
        if (reference.regionMatches(true, 0, HF, 0, HF.length())) {
            return new RemoteRef(reference, huggingFace(reference, endpoint), fileNameOf(reference), token);
        }
        URI uri;
        try {
            uri = new URI(reference);
        } catch (URISyntaxException e) {
            throw new UsageException("not a valid URL: " + reference + " (" + e.getReason() + ")");
        }
        if (uri.getHost() == null || uri.getRawPath() == null) throw new UsageException("not a URL of a file: " + reference);
        if (!secureOrLoopback(uri)) {
            throw new UsageException("plain http:// is read from a loopback address only (localhost, 127.0.0.1, ::1): use https:// for "
                    + reference);
        }
        String name = lastSegment(uri.getPath());
        if (name.isEmpty()) throw new UsageException("the URL names no file (its path ends with '/'): " + reference);
        return new RemoteRef(reference, uri, name, sameHost(uri, endpoint) ? token : Optional.empty());
    }

    /** A file beside this one (a shard named by an index): same folder, same token rule. */
    RemoteRef sibling(String name, Map<String, String> env) {
        URI resolved = uri.resolve(encodePath(name));
        String shown = reference.substring(0, reference.lastIndexOf('/') + 1) + name;
        boolean hf = reference.regionMatches(true, 0, HF, 0, HF.length());
        return new RemoteRef(shown, resolved, lastSegment(name),
                hf || sameHost(resolved, endpoint(env)) ? token : Optional.empty());
    }

    static URI endpoint(Map<String, String> env) {
        String e = Optional.ofNullable(env.get("HF_ENDPOINT")).map(String::strip).filter(s -> !s.isEmpty())
                .orElse(DEFAULT_ENDPOINT);
        while (e.endsWith("/")) e = e.substring(0, e.length() - 1);
        try {
            URI uri = new URI(e);
            if (uri.getHost() == null || uri.getScheme() == null
                    || !(uri.getScheme().equalsIgnoreCase("https") || uri.getScheme().equalsIgnoreCase("http"))) {
                throw new UsageException("HF_ENDPOINT is not an http(s) URL: " + e);
            }
            if (!secureOrLoopback(uri)) {
                throw new UsageException("HF_ENDPOINT may be plain http:// only on a loopback address: use https:// for " + e);
            }
            return uri;
        } catch (URISyntaxException ex) {
            throw new UsageException("HF_ENDPOINT is not a valid URL: " + e + " (" + ex.getReason() + ")");
        }
    }

    private static URI huggingFace(String reference, URI endpoint) {
        String rest = reference.substring(HF.length());
        String kind = "";
        for (String k : new String[]{"datasets/", "spaces/"}) {
            if (rest.startsWith(k)) {
                kind = k;
                rest = rest.substring(k.length());
            }
        }
        String[] parts = rest.split("/", 3);
        if (parts.length < 3 || parts[0].isEmpty() || parts[1].isEmpty() || parts[2].isEmpty() || parts[2].endsWith("/")) {
            throw new UsageException("malformed hf:// reference '" + reference
                    + "': expected hf://ORG/REPO[@REVISION]/PATH, e.g. hf://Qwen/Qwen3-0.6B/model.safetensors");
        }
        String org = parts[0];
        String repo = parts[1];
        String revision = "main";
        int at = repo.indexOf('@');
        if (at >= 0) {
            revision = repo.substring(at + 1);
            repo = repo.substring(0, at);
            if (repo.isEmpty() || revision.isEmpty()) {
                throw new UsageException("malformed hf:// reference '" + reference + "': empty repository or revision");
            }
        }
        for (String s : parts[2].split("/", -1)) {
            if (s.isEmpty() || s.equals(".") || s.equals("..")) {
                throw new UsageException("malformed hf:// reference '" + reference + "': bad path segment '" + s + "'");
            }
        }
        if (org.equals("..") || repo.equals("..") || org.equals(".") || repo.equals(".")) {
            throw new UsageException("malformed hf:// reference '" + reference + "'");
        }
        // huggingface_hub quotes the revision whole (a branch "refs/pr/1" becomes refs%2Fpr%2F1)
        String path = "/" + kind + encode(org) + "/" + encode(repo) + "/resolve/" + encode(revision) + "/" + encodePath(parts[2]);
        return URI.create(endpoint.toString() + path);
    }

    private static String fileNameOf(String reference) {
        return lastSegment(reference);
    }

    private static String lastSegment(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    /**
     * {@code https}, or {@code http} to this machine (localhost, 127.0.0.0/8, ::1), judged
     * from the name alone: no lookup.
     */
    static boolean secureOrLoopback(URI u) {
        String scheme = u.getScheme();
        if ("https".equalsIgnoreCase(scheme)) return true;
        if (!"http".equalsIgnoreCase(scheme) || u.getHost() == null) return false;
        String host = u.getHost().toLowerCase(java.util.Locale.ROOT);
        return host.equals("localhost") || host.matches("127(\\.\\d{1,3}){3}") || host.equals("[::1]") || host.equals("::1");
    }

    private static boolean sameHost(URI a, URI b) {
        return a.getHost() != null && b.getHost() != null && a.getHost().equalsIgnoreCase(b.getHost())
                && port(a) == port(b) && a.getScheme().equalsIgnoreCase(b.getScheme());
    }

    static int port(URI u) {
        if (u.getPort() >= 0) return u.getPort();
        return "https".equalsIgnoreCase(u.getScheme()) ? 443 : 80;
    }

    /** A relative path, each segment percent-encoded. */
    static String encodePath(String path) {
        StringBuilder sb = new StringBuilder();
        for (String s : path.split("/", -1)) {
            if (!sb.isEmpty()) sb.append('/');
            sb.append(encode(s));
        }
        return sb.toString();
    }

    /** Percent-encodes all but RFC 3986's unreserved characters. */
    static String encode(String segment) {
        StringBuilder sb = new StringBuilder();
        for (byte b : segment.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xFF);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                sb.append(c);
            } else {
                sb.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xF, 16)))
                        .append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
            }
        }
        return sb.toString();
    }
}
