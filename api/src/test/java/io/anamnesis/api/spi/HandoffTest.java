package io.anamnesis.api.spi;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HandoffTest {
    @Test
    void whatIsLeftIsTakenOnceAndEmptySlotsSaySo() {
        Handoff<String> h = new Handoff<>(3);
        h.put(0, "a");
        h.put(2, "c");
        h.put(2, "c2");
        assertThat(h.take(1)).as("never left").isNull();
        assertThat(h.take(2)).as("the last one left").isEqualTo("c2");
        assertThat(h.take(2)).as("taken once").isNull();
        assertThat(h.take(0)).isEqualTo("a");
        assertThatThrownBy(() -> h.put(3, "d")).isInstanceOf(IndexOutOfBoundsException.class);
    }
}
