package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The grid search structures against ggml's definitions: the level keys of its compact
 * {@code kgrid_*} tables (first and last entries as ggml-quants.c lists them), and neighbour
 * lists that hold the grid points at the nearest distinct distances, by distance then index.
 */
class IqGridSearchTest {

    static int[] keys(IqGridSearch g, int... indices) {
        int[] out = new int[indices.length];
        byte[] levels = new byte[g.dims];
        for (int i = 0; i < indices.length; i++) {
            g.levelsOf(indices[i], levels, 0);
            out[i] = g.key(levels, 0);
        }
        return out;
    }

    @Test
    void levelsReproduceGgmlsCompactGrids() {
        // kgrid_2bit_256 / _512 / _1024, kgrid_1bit_2048, kgrid_256, kgrid_512 of iq2xs_init_impl / iq3xs_init_impl
        assertThat(keys(IqGridSearch.iq2xxs(), 0, 1, 2, 3, 254, 255)).containsExactly(0, 2, 5, 8, 43088, 43268);
        assertThat(keys(IqGridSearch.iq2xs(), 0, 1, 2, 3, 510, 511)).containsExactly(0, 2, 5, 8, 43665, 43690);
        assertThat(keys(IqGridSearch.iq2s(), 0, 1, 2, 3, 1022, 1023)).containsExactly(0, 2, 5, 8, 43656, 43690);
        assertThat(keys(IqGridSearch.iq1s(), 0, 1, 2, 3, 2046, 2047)).containsExactly(0, 2, 5, 8, 43688, 43690);
        assertThat(keys(IqGridSearch.iq3xxs(), 0, 1, 2, 3, 254, 255)).containsExactly(0, 2, 4, 9, 3924, 3992);
        assertThat(keys(IqGridSearch.iq3s(), 0, 1, 2, 3, 510, 511)).containsExactly(0, 1, 2, 5, 3993, 4032);
        assertThat(IqGridSearch.iq2s().levels).isEqualTo(3);
        assertThat(IqGridSearch.iq1s().levels).isEqualTo(3);
        assertThat(IqGridSearch.iq3s().levels).isEqualTo(8);
    }

    @Test
    void everyGridPointMapsToItself() {
        for (IqGridSearch g : List.of(IqGridSearch.iq2xxs(), IqGridSearch.iq2xs(), IqGridSearch.iq2s(),
                IqGridSearch.iq1s(), IqGridSearch.iq3xxs(), IqGridSearch.iq3s())) {
            int[] all = new int[g.size];
            for (int i = 0; i < g.size; i++) all[i] = i;
            int[] k = keys(g, all);
            for (int i = 0; i < g.size; i++) assertThat(g.map[k[i]]).isEqualTo(i);
        }
    }

    /** IQ2_S keeps the nearest distance only (nwant 1), IQ3_XXS two, IQ1_S three. */
    @Test
    void neighbourListsHoldTheNearestDistancesInOrder() {
        check(IqGridSearch.iq2s(), 1);
        check(IqGridSearch.iq3xxs(), 2);
        check(IqGridSearch.iq1s(), 3);
    }

    private static void check(IqGridSearch g, int distances) {
        int tuples = (int) Math.pow(g.levels, g.dims);
        byte[] tuple = new byte[g.dims];
        int checked = 0;
        for (int t = 0; t < tuples; t += 7) {
            for (int i = 0, rest = t; i < g.dims; i++, rest /= g.levels) tuple[i] = (byte) (rest % g.levels);
            int key = g.key(tuple, 0);
            if (g.map[key] >= 0) continue;
            List<int[]> byDistance = new ArrayList<>();
            TreeSet<Integer> seen = new TreeSet<>();
            for (int p = 0; p < g.size; p++) {
                int d2 = 0;
                for (int i = 0; i < g.dims; i++) {
                    int diff = (2 * g.level(p, i) + 1) - (2 * tuple[i] + 1);
                    d2 += diff * diff;
                }
                byDistance.add(new int[]{d2, p});
                seen.add(d2);
            }
            int cut = seen.stream().skip(distances - 1).findFirst().orElseThrow();
            int[] expected = byDistance.stream().filter(e -> e[0] <= cut)
                    .sorted(Comparator.<int[]>comparingInt(e -> e[0]).thenComparingInt(e -> e[1]))
                    .mapToInt(e -> e[1]).toArray();
            int list = -1 - g.map[key];
            int[] actual = new int[g.neighbours[list]];
            for (int j = 0; j < actual.length; j++) actual[j] = g.neighbours[list + 1 + j];
            assertThat(actual).as("neighbours of key %d", key).containsExactly(expected);
            checked++;
        }
        assertThat(checked).isPositive();
    }
}
