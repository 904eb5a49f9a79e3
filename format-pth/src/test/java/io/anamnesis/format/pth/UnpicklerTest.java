package io.anamnesis.format.pth;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class UnpicklerTest {
    private static Object load(byte[] pickle) {
        return new Unpickler(ParseLimits.defaults()).load(MemorySegment.ofArray(pickle), 0, pickle.length);
    }

    @Test
    void decodesIntegersOfEveryWidthAsPickletoolsDescribes() {
        assertThat(load(PickleWriter.proto(2).op('K').raw(255).stop().bytes())).isEqualTo(255L);
        assertThat(load(PickleWriter.proto(2).op('M').raw(0x34, 0x12).stop().bytes())).isEqualTo(0x1234L);
        assertThat(load(PickleWriter.proto(2).op('J').raw(0xfe, 0xff, 0xff, 0xff).stop().bytes())).isEqualTo(-2L);
        // LONG1: little-endian two's complement; 0xff alone is -1, 0xff 0x00 is 255.
        assertThat(load(PickleWriter.proto(2).op(0x8a).raw(1).raw(0xff).stop().bytes())).isEqualTo(-1L);
        assertThat(load(PickleWriter.proto(2).op(0x8a).raw(2).raw(0xff, 0x00).stop().bytes())).isEqualTo(255L);
        assertThat(load(PickleWriter.proto(2).op(0x8a).raw(0).stop().bytes())).isEqualTo(0L);
        // 2^64 needs 9 bytes: 00 x8 then 01.
        assertThat(load(PickleWriter.proto(2).op(0x8b).le(9, 4).raw(0, 0, 0, 0, 0, 0, 0, 0, 1).stop().bytes()))
                .isEqualTo(BigInteger.ONE.shiftLeft(64));
    }

    @Test
    void decodesFloatsStringsAndBytes() {
        // BINFLOAT is big-endian IEEE 754: 0x3ff8000000000000 is 1.5.
        assertThat(load(PickleWriter.proto(2).op('G').raw(0x3f, 0xf8, 0, 0, 0, 0, 0, 0).stop().bytes())).isEqualTo(1.5);
        assertThat(load(PickleWriter.proto(2).op('X').le(2, 4).raw(0xc3, 0xa9).stop().bytes())).isEqualTo("\u00e9");
        assertThat(load(PickleWriter.proto(2).op('U').raw(2).raw('h', 'i').stop().bytes())).isEqualTo("hi");
        Object b = load(PickleWriter.proto(3).op('C').raw(3).raw(1, 2, 3).stop().bytes());
        assertThat(((PyValue.Bytes) b).value()).containsExactly(1, 2, 3);
        assertThatThrownBy(() -> load(PickleWriter.proto(2).op('X').le(1, 4).raw(0xff).stop().bytes()))
                .isInstanceOf(AnamnesisException.class).hasMessageContaining("UTF-8");
    }

    @Test
    void recordsEveryGlobalAndRefusesTheFirstOutsideTheAllowlist() {
        Unpickler vm = new Unpickler(ParseLimits.defaults());
        byte[] ok = PickleWriter.proto(2).emptyList().global("torch", "Size").append()
                .global("__builtin__", "set").append().stop().bytes();
        vm.load(MemorySegment.ofArray(ok), 0, ok.length);
        assertThat(vm.globals).containsExactly("torch.Size", "builtins.set");
        byte[] bad = PickleWriter.proto(2).emptyList().global("torch", "Size").append()
                .global("posix", "system").append().stop().bytes();
        assertThatThrownBy(() -> load(bad)).isInstanceOf(SecurityViolationException.class).hasMessageContaining("posix.system");
    }

    @Test
    void randomOpcodeStreamsEndInATypedErrorOrAValue() {
        int[] ops = {0x28, 0x2e, 0x30, 0x31, 0x32, 0x4e, 0x88, 0x89, 0x4a, 0x4b, 0x4d, 0x8a, 0x8b, 0x47, 0x58, 0x8c,
                0x54, 0x55, 0x42, 0x43, 0x29, 0x5d, 0x7d, 0x8f, 0x74, 0x85, 0x86, 0x87, 0x6c, 0x64, 0x61, 0x65, 0x73,
                0x75, 0x71, 0x72, 0x94, 0x68, 0x6a, 0x63, 0x93, 0x52, 0x81, 0x62, 0x51, 0x95, 0x90, 0x91};
        Random rnd = new Random(2024);
        int values = 0;
        for (int round = 0; round < 20_000; round++) {
            PickleWriter w = PickleWriter.proto(2 + rnd.nextInt(4));
            for (int n = rnd.nextInt(40); n > 0; n--) {
                w.op(ops[rnd.nextInt(ops.length)]);
                for (int k = rnd.nextInt(4); k > 0; k--) w.raw(rnd.nextInt(3) == 0 ? rnd.nextInt(256) : rnd.nextInt(4));
            }
            if (rnd.nextBoolean()) w.stop();
            byte[] b = w.bytes();
            try {
                load(b);
                values++;
            } catch (AnamnesisException expected) {
                // typed: fine
            } catch (RuntimeException | Error e) {
                throw new AssertionError("round " + round + ": untyped " + e + " for " + java.util.HexFormat.of().formatHex(b), e);
            }
        }
        assertThat(values).as("some random streams are valid pickles").isPositive();
    }
}
