package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The pieces of a SentencePiece {@code tokenizer.model}: a protobuf {@code ModelProto}, of
 * which the converter reads field 1, the repeated {@code SentencePiece} (1: piece, a
 * string; 2: score, a float; 3: type, an enum whose default is NORMAL), field 2's
 * {@code TrainerSpec.model_type} (3, UNIGRAM by default) and field 3's {@code NormalizerSpec}
 * ({@code precompiled_charsmap} 2, {@code add_dummy_prefix} 3, {@code remove_extra_whitespaces} 4; both true
 * by default), which InternLM2's and XLM-RoBERTa's vocabularies read. The few fields
 * needed do not justify a protobuf library: this reader walks the wire format
 * (varint, 64-bit, length-delimited and 32-bit fields), skips every other field, and refuses
 * anything that runs past its bounds.
 */
record SentencePieceModel(List<Piece> pieces, boolean addDummyPrefix, boolean removeExtraWhitespaces, byte[] precompiledCharsmap,
                          int modelType) {
    /** The protobuf file name, for messages. */
    static final String FILE = "tokenizer.model";

    /** {@code sentencepiece_model.proto}'s {@code SentencePiece.Type}. */
    static final int NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;
    /** {@code TrainerSpec.ModelType}'s UNIGRAM, the default. */
    static final int UNIGRAM = 1;

    record Piece(String text, float score, int type) {
    }

    static SentencePieceModel parse(byte[] bytes, long maxPieces) {
        return parse(bytes, maxPieces, FILE);
    }

    /**
     * The model in {@code bytes}, read from the file named {@code file} (XLM-RoBERTa's is sentencepiece.bpe.model).
     *
     * @throws MalformedFileException naming {@code file}, for a model that runs past its bounds or holds more than
     *                                {@code maxPieces} pieces
     */
    static SentencePieceModel parse(byte[] bytes, long maxPieces, String file) {
        try {
            return read(bytes, maxPieces);
        } catch (Broken e) {
            throw new MalformedFileException(file + " is not a SentencePiece model: " + e.getMessage());
        }
    }

    /** What a malformed model breaks with inside the reader; {@link #parse} names the file. */
    private static final class Broken extends RuntimeException {
        Broken(String what) {
            super(what, null, false, false);
        }
    }

    private static SentencePieceModel read(byte[] bytes, long maxPieces) {
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        List<Piece> pieces = new ArrayList<>();
        boolean addDummyPrefix = true, removeExtraWhitespaces = true;
        byte[] charsmap = new byte[0];
        int modelType = UNIGRAM;
        while (in.hasRemaining()) {
            long tag = varint(in);
            int field = (int) (tag >>> 3);
            int wire = (int) (tag & 7);
            if (field == 1 && wire == 2) {
                if (pieces.size() >= maxPieces) throw malformed("more than " + maxPieces + " pieces");
                pieces.add(piece(slice(in)));
            } else if (field == 2 && wire == 2) {
                modelType = modelType(slice(in));
            } else if (field == 3 && wire == 2) {
                // NormalizerSpec: a later occurrence merges into the earlier one, as protobuf merges messages
                ByteBuffer spec = slice(in);
                while (spec.hasRemaining()) {
                    long t = varint(spec);
                    int f = (int) (t >>> 3), w = (int) (t & 7);
                    if (f == 2 && w == 2) {
                        ByteBuffer b = slice(spec);
                        charsmap = new byte[b.remaining()];
                        b.get(charsmap);
                    } else if (f == 3 && w == 0) {
                        addDummyPrefix = varint(spec) != 0;
                    } else if (f == 4 && w == 0) {
                        removeExtraWhitespaces = varint(spec) != 0;
                    } else {
                        skip(spec, w);
                    }
                }
            } else {
                skip(in, wire);
            }
        }
        return new SentencePieceModel(List.copyOf(pieces), addDummyPrefix, removeExtraWhitespaces, charsmap, modelType);
    }

    /** {@code TrainerSpec.model_type} (field 3, UNIGRAM when absent). */
    private static int modelType(ByteBuffer in) {
        int type = UNIGRAM;
        while (in.hasRemaining()) {
            long tag = varint(in);
            int field = (int) (tag >>> 3);
            int wire = (int) (tag & 7);
            if (field == 3 && wire == 0) type = (int) varint(in);
            else skip(in, wire);
        }
        return type;
    }

    private static Piece piece(ByteBuffer in) {
        String text = "";
        float score = 0;
        int type = NORMAL;
        while (in.hasRemaining()) {
            long tag = varint(in);
            int field = (int) (tag >>> 3);
            int wire = (int) (tag & 7);
            if (field == 1 && wire == 2) text = utf8(slice(in));
            else if (field == 2 && wire == 5) {
                if (in.remaining() < 4) throw malformed("a score runs past its piece");
                score = in.getFloat();
            }
            else if (field == 3 && wire == 0) type = (int) varint(in);
            else skip(in, wire);
        }
        return new Piece(text, score, type);
    }

    private static void skip(ByteBuffer in, int wire) {
        switch (wire) {
            case 0 -> varint(in);
            case 1 -> advance(in, 8);
            case 2 -> slice(in);
            case 5 -> advance(in, 4);
            default -> throw malformed("wire type " + wire + " (groups or an unknown type) at byte " + in.position());
        }
    }

    private static void advance(ByteBuffer in, int n) {
        if (in.remaining() < n) throw malformed("a field runs past the end");
        in.position(in.position() + n);
    }

    private static ByteBuffer slice(ByteBuffer in) {
        long n = varint(in);
        if (n < 0 || n > in.remaining()) throw malformed("a length of " + n + " runs past the end");
        ByteBuffer s = in.slice(in.position(), (int) n).order(ByteOrder.LITTLE_ENDIAN);
        in.position(in.position() + (int) n);
        return s;
    }

    private static long varint(ByteBuffer in) {
        long v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!in.hasRemaining()) throw malformed("a varint runs past the end");
            byte b = in.get();
            v |= (long) (b & 0x7F) << shift;
            if (b >= 0) return v;
        }
        throw malformed("a varint longer than 10 bytes");
    }

    private static String utf8(ByteBuffer b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(b).toString();
        } catch (CharacterCodingException e) {
            throw malformed("a piece that is not valid UTF-8");
        }
    }

    private static Broken malformed(String what) {
        return new Broken(what);
    }
}
