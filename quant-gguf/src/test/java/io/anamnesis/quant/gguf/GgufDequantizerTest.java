package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufDequantizerTest {

    static final DType Q8_0 = new DType("Q8_0", DType.Kind.QUANTIZED, 32, 34);

    static MemoryArchive archive(Object... entriesAndBytes) {
        MemoryArchive a = new MemoryArchive();
        for (int i = 0; i < entriesAndBytes.length; i += 2) a.addRaw((TensorEntry) entriesAndBytes[i], (byte[]) entriesAndBytes[i + 1]);
        return a;
    }

    static List<Recovery> claim(TensorArchive a) {
        return new GgufDequantizer().claim(new ClaimContext(a, ParseLimits.defaults()));
    }

    @Test
    void claimsEachKnownBlockTensorAsItsOwnRecovery() {
        TensorEntry q = TensorEntry.of("blk.0.attn_q.weight", Q8_0, Shape.of(2, 64));
        TensorEntry k = TensorEntry.of("blk.0.attn_k.weight", new DType("Q4_K", DType.Kind.QUANTIZED, 256, 144), Shape.of(1, 256));
        TensorEntry norm = TensorEntry.of("blk.0.attn_norm.weight", DType.F32, Shape.of(64));
        List<Recovery> rs = claim(archive(q, new byte[(int) q.byteSize()],
                k, new byte[144], norm, new byte[256]));
        assertThat(rs).extracting(Recovery::outputName).containsExactly("blk.0.attn_q.weight", "blk.0.attn_k.weight");
        Recovery r = rs.getFirst();
        assertThat(r.outputShape()).isEqualTo(Shape.of(2, 64));
        assertThat(r.scheme()).isEqualTo("gguf");
        assertThat(r.description()).isEqualTo("GGUF Q8_0");
        assertThat(r.inputs()).containsExactly(Map.entry("blk.0.attn_q.weight", Role.QUANTIZED));
        assertThat(r.kernel().granule()).isEqualTo(32);
        assertThat(rs.get(1).kernel().granule()).isEqualTo(256);
    }

    @Test
    void leavesUnknownBlockTypesUnclaimed() {
        TensorEntry e = TensorEntry.of("w", new DType("Q9_9", DType.Kind.QUANTIZED, 32, 40), Shape.of(32));
        assertThat(claim(archive(e, new byte[40]))).isEmpty();
    }

    @Test
    void rejectsAGeometryThatDisagreesWithGgml() {
        TensorEntry e = TensorEntry.of("w", new DType("Q4_K", DType.Kind.QUANTIZED, 256, 140), Shape.of(256));
        assertThatThrownBy(() -> claim(archive(e, new byte[140])))
                .isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("'w'").hasMessageContaining("144");
    }

    @Test
    void rejectsRowsThatSplitABlock() {
        TensorEntry e = TensorEntry.of("w", Q8_0, Shape.of(3, 32).reversed()); // rows of 3 elements
        assertThatThrownBy(() -> claim(archive(e, new byte[(int) e.byteSize()])))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("row length 3");
    }

    @Test
    void rejectsDataOfTheWrongSize() {
        TensorEntry declared = TensorEntry.of("w", Q8_0, Shape.of(64));
        // the archive returns 34 bytes for a tensor that needs 68
        MemoryArchive a = archive(declared, new byte[34]);
        Recovery r = claim(a).getFirst();
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> r.kernel().open(a, arena, DType.BF16))
                    .isInstanceOf(MalformedFileException.class).hasMessageContaining("68");
        }
    }

    /**
     * d = f16 0x3C04 = 1 + 2^-8 and q = 3 give 3 + 3/256 = 3.01171875 in F32. Its F16 is
     * exact (0x4206); BF16 keeps 7 fraction bits: 1.505859375 * 128 = 192.75 rounds to 193,
     * 0x4041 = 3.015625. q = -1 gives -(1 + 2^-8): BF16 ties (128.5) to even 128: 0xBF80.
     */
    @Test
    void narrowsTheExactF32ToBf16AndF16() {
        TensorEntry e = TensorEntry.of("w", Q8_0, Shape.of(2, 32));
        byte[] b = new byte[68];
        for (int blk = 0; blk < 2; blk++) {
            b[34 * blk] = 0x04;
            b[34 * blk + 1] = 0x3C;
        }
        b[2] = 3;
        b[3] = -1;
        b[34 + 2] = 1;
        MemoryArchive a = archive(e, b);
        Recovery r = claim(a).getFirst();
        ValueLayout.OfShort le16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller bf = r.kernel().open(a, arena, DType.BF16);
            MemorySegment dest = arena.allocate(128);
            bf.fill(0, 64, dest);
            assertThat(dest.get(le16, 0)).isEqualTo((short) 0x4041);
            assertThat(dest.get(le16, 2)).isEqualTo((short) 0xBF80);
            assertThat(dest.get(le16, 4)).isEqualTo((short) 0x0000);
            assertThat(dest.get(le16, 64)).isEqualTo((short) 0x3F80); // 1 + 2^-8 -> tie to even 1.0

            ChunkFiller f16 = r.kernel().open(a, arena, DType.F16);
            MemorySegment half = arena.allocate(64);
            f16.fill(32, 32, half); // second block only
            assertThat(half.get(le16, 0)).isEqualTo((short) 0x3C04);

            ChunkFiller f32 = r.kernel().open(a, arena, DType.F32);
            MemorySegment full = arena.allocate(256);
            f32.fill(0, 64, full);
            assertThat(full.get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0)).isEqualTo(3.01171875f);
        }
    }
}
