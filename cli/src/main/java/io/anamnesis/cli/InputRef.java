package io.anamnesis.cli;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * An input reference: a path, or {@code ollama:<model>[:<tag>]}, which names the GGUF blob
 * of a model pulled into the local Ollama store.
 *
 * <p>Ollama keeps {@code manifests/<registry>/<namespace>/<model>/<tag>} (an OCI image
 * manifest, JSON) and content-addressed {@code blobs/sha256-<hex>}; the layer whose
 * {@code mediaType} is {@value #MODEL_LAYER} is the GGUF file. A bare model name lives in
 * {@code registry.ollama.ai/library}, {@code user/model} in {@code registry.ollama.ai/user},
 * and a name whose first part is a host ({@code hf.co/org/repo}) under that host.
 *
 * <p>Failures: a malformed reference is a usage error (exit 2); a missing store, manifest
 * or blob is an I/O error (exit 7) like a missing file; an unreadable manifest is malformed
 * input (exit 3).
 */
record InputRef(String reference, Path file, String displayName, boolean fromOllama) {
    static final String OLLAMA = "ollama:";
    static final String MODEL_LAYER = "application/vnd.ollama.image.model";
    static final String DEFAULT_REGISTRY = "registry.ollama.ai";
    static final String DEFAULT_TAG = "latest";
    /** A manifest is a few hundred bytes; anything far larger is not one. */
    static final int MAX_MANIFEST_BYTES = 1 << 20;

    private static final Pattern NAME_PART = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?");
    private static final Pattern SHA256 = Pattern.compile("sha256:([0-9a-f]{64})");

    /** The input that reads the header from standard input, for parse and inspect. */
    static final String STDIN = "-";

    /**
     * Opens what a reference names: the header on standard input for {@value #STDIN}
     * (safetensors or GGUF), the headers of a remote file for a URL ({@link Remote}; both
     * archives have no tensor data), else the file.
     */
    static TensorArchive open(String reference, Amn.Context context) {
        if (reference.equals(STDIN)) return context.amn().openHeader(System.in);
        if (isRemote(reference)) return Remote.open(reference, context);
        return context.amn().open(resolve(reference, context));
    }

    /**
     * {@code https://}, {@code http://} or {@code hf://}: a remote file, read for its headers
     * (a string test here, so that a local run loads none of the remote classes).
     */
    static boolean isRemote(String reference) {
        return reference.regionMatches(true, 0, "https://", 0, 8) || reference.regionMatches(true, 0, "http://", 0, 7)
                || reference.regionMatches(true, 0, "hf://", 0, 5);
    }

    /** The file a reference names; a plain path is returned as given (existence is the reader's business). */
    static Path resolve(String reference, Amn.Context context) {
        return of(reference, context.ollamaModels()).file();
    }

    /**
     * A command that reads tensor data (remember, convert, forget) calls this first, before
     * it looks up writers or targets: a URL is refused up front, with no request made.
     */
    static void refuseRemote(String reference) {
        if (isRemote(reference)) {
            throw new UsageException(reference + " is remote: only its headers are read (amn inspect, amn parse);"
                    + " this command needs the tensor data, so download the file first (curl -LO, hf download)");
        }
    }

    static InputRef of(String reference, Path ollamaModels) {
        refuseRemote(reference);
        if (reference.startsWith(OLLAMA)) {
            OllamaName name = OllamaName.parse(reference.substring(OLLAMA.length()));
            Path blob = blobOf(name, ollamaModels);
            Log.debug("{} -> {}", reference, blob);
            return new InputRef(reference, blob, name.fileStem(), true);
        }
        if (reference.isEmpty()) throw new UsageException("the input path is empty");
        try {
            Path p = Path.of(reference);
            return new InputRef(reference, p, stem(p), false);
        } catch (InvalidPathException e) {
            throw new UsageException("not a valid path: " + reference + " (" + e.getReason() + ")");
        }
    }

    private static String stem(Path p) {
        Path name = p.getFileName();
        if (name == null) return "output";
        String n = name.toString();
        int dot = n.lastIndexOf('.');
        return dot > 0 ? n.substring(0, dot) : n;
    }

    /**
     * A parsed model name.
     *
     * @param registry host of the registry ({@code registry.ollama.ai} unless given)
     * @param path     namespace and model, e.g. {@code [library, llama3.2]}
     * @param tag      tag, {@code latest} unless given
     */
    record OllamaName(String registry, List<String> path, String tag) {
        static OllamaName parse(String spec) {
            if (spec.isEmpty()) {
                throw new UsageException("empty ollama reference: expected ollama:<model>[:<tag>], e.g. ollama:llama3.2:1b");
            }
            String name = spec;
            String tag = DEFAULT_TAG;
            int colon = spec.lastIndexOf(':');
            if (colon > spec.lastIndexOf('/')) {
                name = spec.substring(0, colon);
                tag = spec.substring(colon + 1);
                if (!NAME_PART.matcher(tag).matches()) throw bad(spec, "tag '" + tag + "'");
            }
            List<String> parts = Arrays.asList(name.split("/", -1));
            String registry = DEFAULT_REGISTRY;
            if (parts.size() >= 3) {
                // hf.co/org/repo: the first part is the registry host, the rest are folders
                registry = parts.getFirst();
                if (!HOST.matcher(registry).matches()) throw bad(spec, "registry '" + registry + "'");
                parts = parts.subList(1, parts.size());
            }
            for (String part : parts) {
                if (!NAME_PART.matcher(part).matches() || part.equals("..")) throw bad(spec, "name part '" + part + "'");
            }
            List<String> path = parts.size() == 1 ? List.of("library", parts.getFirst()) : List.copyOf(parts);
            return new OllamaName(registry, path, tag);
        }

        private static UsageException bad(String spec, String what) {
            return new UsageException("malformed ollama reference 'ollama:" + spec + "': bad " + what
                    + " (expected ollama:<model>[:<tag>], e.g. ollama:llama3.2:1b or ollama:user/model)");
        }

        /** The manifest file below the models folder. */
        Path manifest(Path models) {
            Path p = models.resolve("manifests").resolve(registry);
            for (String part : path) p = p.resolve(part);
            return p.resolve(tag);
        }

        /** How people write it: {@code llama3.2:1b}, {@code user/model:latest}. */
        String display() {
            List<String> shown = path.getFirst().equals("library") && path.size() == 2 ? path.subList(1, 2) : path;
            String n = String.join("/", shown);
            return (registry.equals(DEFAULT_REGISTRY) ? "" : registry + "/") + n + ":" + tag;
        }

        /** A file-name-safe stem for derived outputs: {@code llama3.2-1b}. */
        String fileStem() {
            return (path.getLast() + "-" + tag).replaceAll("[^A-Za-z0-9._-]", "_");
        }
    }

    static Path blobOf(OllamaName name, Path models) {
        if (!Files.isDirectory(models)) {
            throw new TensorIOException("ollama model " + name.display() + " not found: the Ollama models folder "
                    + models + " does not exist (set OLLAMA_MODELS, or 'ollama pull " + name.display() + "')");
        }
        Path manifest = name.manifest(models);
        byte[] json;
        try {
            // a FIFO would block the read, /dev/zero never end it: a regular file, read no further than the limit
            if (Files.exists(manifest) && !Files.isRegularFile(manifest)) {
                throw new TensorIOException("ollama manifest " + manifest + " is not a regular file");
            }
            try (java.io.InputStream in = Files.newInputStream(manifest)) {
                json = in.readNBytes(MAX_MANIFEST_BYTES + 1);
            }
            if (json.length > MAX_MANIFEST_BYTES) {
                throw new MalformedFileException("ollama manifest " + manifest + " is over " + MAX_MANIFEST_BYTES
                        + " bytes, too large to be a manifest");
            }
        } catch (NoSuchFileException e) {
            throw new TensorIOException("ollama model " + name.display() + " not found: no manifest at " + manifest
                    + " ('ollama pull " + name.display() + "' fetches it)", e);
        } catch (IOException e) {
            throw new TensorIOException("cannot read ollama manifest " + manifest + ": " + e.getMessage(), e);
        }
        String digest = modelDigest(json, manifest);
        var m = SHA256.matcher(digest);
        if (!m.matches()) {
            throw new MalformedFileException("ollama manifest " + manifest + ": model layer digest '" + digest
                    + "' is not sha256:<64 hex digits>");
        }
        Path blob = models.resolve("blobs").resolve("sha256-" + m.group(1));
        if (!Files.isRegularFile(blob)) {
            throw new TensorIOException("ollama model " + name.display() + ": blob " + blob + " named by the manifest "
                    + (Files.exists(blob) ? "is not a regular file" : "is missing (a partial pull? 'ollama pull "
                    + name.display() + "' again)"));
        }
        return blob;
    }

    private static String modelDigest(byte[] json, Path manifest) {
        Object root;
        try {
            root = Json.parse(json, 16);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new MalformedFileException("ollama manifest " + manifest + " is not valid JSON: "
                    + Amn.oneLine(e.getOriginalMessage()), e);
        } catch (IOException e) {
            throw new TensorIOException("cannot read ollama manifest " + manifest + ": " + e.getMessage(), e);
        }
        if (!(root instanceof java.util.Map<?, ?> m) || !(m.get("layers") instanceof List<?> layers)) {
            throw new MalformedFileException("ollama manifest " + manifest + " has no layers array");
        }
        for (Object layer : layers) {
            if (layer instanceof java.util.Map<?, ?> l && MODEL_LAYER.equals(l.get("mediaType"))) {
                return l.get("digest") instanceof String d ? d : "";
            }
        }
        throw new MalformedFileException("ollama manifest " + manifest + " has no layer of type " + MODEL_LAYER
                + " (not a model, or an adapter only)");
    }
}
