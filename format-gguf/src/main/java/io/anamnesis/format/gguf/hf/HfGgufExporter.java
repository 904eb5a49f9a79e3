package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.model.ShardedArchive;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ExportRequest;
import io.anamnesis.api.spi.ExportedModel;
import io.anamnesis.api.spi.ModelExporter;
import io.anamnesis.api.spi.PlannedTensor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Hugging Face model folder as the GGUF llama.cpp's {@code convert_hf_to_gguf.py} writes
 * (commit ca01960e6a, gguf-py 0.18.0): the converter's tensor order and names, the rope row
 * permutation, its output-type rules, and its key/values in its order, so the file is the
 * converter's byte for byte. The families are tables ({@link Architectures}); the vocabulary
 * is {@link Vocabulary}; the naming keys {@link ModelNaming}.
 *
 * <p>Output types (the converter's {@code --outtype}): every tensor is taken as F32 (BF16
 * and any recovered scheme widened exactly), q/k rows permuted; then 1-D tensors, norms
 * ({@code *_norm.weight}) and tensors not named {@code *.weight} are F32, the other weights
 * the output type: F32, F16, BF16 or Q8_0 (encoded by the installed quantizer as
 * {@code ggml:q8_0}, ggml's reference quantizer; a row not a multiple of 32 falls back to F16
 * as gguf-py does). {@code auto}: BF16 when the first stored tensor of two or more dimensions
 * that is 16-bit is BF16, else F16.
 */
public final class HfGgufExporter implements ModelExporter {
    /** llama_ftype of each output type. */
    private static final Map<String, Integer> FILE_TYPE = Map.of("f32", 0, "f16", 1, "q8_0", 7, "bf16", 32);
    /** Tensors the converter drops ({@code prepare_tensors}). */
    private static final List<String> DROPPED = List.of(".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq");
    private static final Pattern LAYER = Pattern.compile("(?:^|\\.)layers\\.(\\d+)\\.");
    /** The converter's {@code re.match(r"model.layers.(\d+)", name)}: a layer number at the start of the name. */
    private static final Pattern MODEL_LAYER = Pattern.compile("model.layers.(\\d+)");
    /**
     * The weights {@code prepare_tensors} keeps F32 whatever the output type, of those the
     * families here have: the routers (FFN_GATE_INP, FFN_GATE_INP_SHEXP), LFM2's short
     * convolution (SHORTCONV_CONV), GPT-2's and BERT's position embeddings (POS_EMBD) and BERT's
     * token type embeddings (TOKEN_TYPES).
     */
    private static final Pattern KEPT_F32 =
            Pattern.compile("blk\\.\\d+\\.(ffn_gate_inp(_shexp)?|shortconv\\.conv)\\.weight|position_embd\\.weight|token_types\\.weight");

    @Override
    public String format() {
        return "gguf";
    }

    @Override
    public String description() {
        return "Hugging Face model folder (" + String.join(", ", Architectures.supportedNames())
                + ", SentencePiece or byte-level BPE vocabulary) as llama.cpp's convert_hf_to_gguf.py writes it";
    }

    @Override
    public boolean accepts(TensorArchive source) {
        return new ModelFiles(source, ParseLimits.defaults()).has("config.json");
    }

    @Override
    public SequencedMap<String, String> outputTypes() {
        SequencedMap<String, String> m = new LinkedHashMap<>();
        m.put("auto", "BF16 for a BF16 model, else F16 (the converter's default)");
        m.put("f32", "every weight F32");
        m.put("f16", "weights F16, vectors and norms F32");
        m.put("bf16", "weights BF16, vectors and norms F32");
        m.put("q8_0", "weights Q8_0 (ggml's reference quantizer), vectors and norms F32");
        return m;
    }

    @Override
    public ExportedModel export(ExportRequest request) {
        ModelFiles files = new ModelFiles(request.source(), request.limits());
        Map<?, ?> stored = files.json("config.json").orElseThrow(() ->
                new MalformedFileException("no config.json beside the model: it is not a Hugging Face model folder"));
        Architecture arch = architecture(stored);
        Map<?, ?> asStored = textModelConfig(arch, stored);
        Map<?, ?> config = arch == Architectures.NOMIC_BERT ? nomicPositions(asStored)
                : arch == Architectures.XLM_ROBERTA ? robertaPositions(asStored) : asStored;
        String folder = files.folder().map(p -> p.getFileName() == null ? "" : p.getFileName().toString()).orElse("");
        requireConfig(arch, config);
        arch.experts().ifPresent(e -> expectConfig(arch, e.config(), config));
        arch.extras().packedExperts().ifPresent(e -> expectConfig(arch, e.config(), config));
        expectConfig(arch, arch.extras().configValues(), config);
        refuseUnstackedExperts(arch, config);
        refuseVariants(arch, files, config, folder);
        long blockCount = required(config, Architectures.BLOCK_COUNT) + extraLayers(arch, config);
        if (blockCount < 0 || blockCount > Integer.MAX_VALUE) throw badKey("num_hidden_layers", blockCount + " is out of range");
        arch.extras().slidingWindow().ifPresent(w -> expectLayers(arch, w, config, blockCount));
        arch.extras().noRope().ifPresent(n -> expectNoRopeLayers(arch, n, config, blockCount));
        if (arch == Architectures.COMMAND_R) expectCommandRQkNorms(config, blockCount);
        if (arch == Architectures.EXAONE4) expectExaone4Window(config, blockCount);
        if (arch == Architectures.EXAONE || arch == Architectures.NEMOTRON || arch == Architectures.ORION) expectWholeHeadRope(arch, config);
        if (arch == Architectures.MPT) expectMpt(config);
        if (arch == Architectures.NOMIC_BERT) expectNomicBert(config);
        if (arch == Architectures.GEMMA_EMBEDDING && !stored.containsKey("sliding_window")) {
            // EmbeddingGemma.set_gguf_parameters reads it from config.json itself, and stops without it
            throw badKey("sliding_window", "is missing: the converter writes EmbeddingGemma's window from config.json and stops "
                    + "without one");
        }
        if (arch == Architectures.XLM_ROBERTA && config.containsKey("lora_adaptations")) {
            throw new UnsupportedFeatureException("config.json has lora_adaptations: jina-embeddings-v3's task adapters (written "
                    + "by the converter as LoRA GGUFs beside the model, arch jina-bert-v3) are not converted yet");
        }
        if (arch.extras().latentAttention().isPresent()) expectDeepSeekLayout(arch, stored, config, blockCount);
        if (arch == Architectures.LLAMA4) expectLlama4QkNorm(config);
        if (arch == Architectures.FALCON && !Boolean.TRUE.equals(config.get("new_decoder_architecture"))
                && Boolean.FALSE.equals(config.get("multi_query"))) {
            // FalconModel.modify_tensors reads the fused q/k/v as groups of queries then one key and one value: a model
            // with neither layout (Falcon-RW's q, k, v per head) would be written with its heads mixed up
            throw new UnsupportedFeatureException("config.json multi_query is false and new_decoder_architecture is not true: "
                    + "a Falcon whose fused q/k/v is laid out per head is written wrong by the converter's re-layout; not converted");
        }
        if (arch == Architectures.GRANITEMOE && HfConfig.integer(config, "num_local_experts").filter(e -> e == 0).isPresent()) {
            // GraniteMoeModel.modify_tensors then writes the shared MLP as a dense one (granite's layout under granitemoe)
            throw new UnsupportedFeatureException("config.json num_local_experts is 0: a Granite MoE without experts (its shared "
                    + "MLP written as a dense one) is not converted yet");
        }
        arch.extras().configRefused().forEach((key, why) -> {
            Object v = config.get(key);
            if (v != null && v != io.anamnesis.api.json.Json.NULL) {
                throw new UnsupportedFeatureException("config.json " + key + " is " + v + ": " + why + "; not converted");
            }
        });

        List<String> order = converterOrder(request.source());
        String outtype = request.outputType().equals("auto") ? auto(request.source(), order) : request.outputType();
        if (!FILE_TYPE.containsKey(outtype)) throw new UnsupportedFeatureException("output type " + outtype + " is not one of "
                + String.join(", ", outputTypes().keySet()));

        Map<String, Integer> rank = new HashMap<>();
        for (int i = 0; i < order.size(); i++) rank.put(order.get(i), i);
        List<DenseTensor> inputs = new ArrayList<>(request.tensors());
        inputs.sort(Comparator.comparingInt((DenseTensor d) -> rank.getOrDefault(d.name(), Integer.MAX_VALUE))
                .thenComparing(DenseTensor::name));

        // the shapes as stored: XLM-RoBERTa's position rows are checked before the converter's cut
        Shapes shapes = new Shapes(asStored, arch == Architectures.OLMO2 || arch == Architectures.OLMOE || arch == Architectures.MINIMAX_M2,
                arch == Architectures.LFM2 ? Optional.of(adjustedFeedForward(config)) : Optional.empty(),
                arch.extras().latentAttention().isPresent(), arch == Architectures.STARCODER, arch == Architectures.INTERNLM2);
        List<PlannedTensor> out = new ArrayList<>();
        Optional<Stacks> stacks = arch.experts().map(e -> new Stacks(arch, e, config, blockCount, outtype, request.encoder()));
        Optional<PackedExpertTensors> packed = arch.extras().packedExperts()
                .map(e -> new PackedExpertTensors(arch, e, config, blockCount, request.source()));
        // generate_extra_tensors comes first in prepare_tensors' chain
        packed.ifPresent(p -> out.addAll(p.mxfp4(order)));
        Map<?, ?> rope = ropeParameters(arch, config);
        if (arch == Architectures.EXAONE4 && RopeFreqs.isLlama3(rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type"))
                && rope.get("factor") == null) {
            // Exaone4Model.generate_extra_tensors defaults the factor to 16, LlamaModel's (RopeFreqs') to 8
            throw badKey("rope_scaling", "is llama3 without a factor: the converter takes 16 for EXAONE 4, which amn does not guess");
        }
        if (arch.llama3Rope()) RopeFreqs.llama3(config, rope, ropeTheta(config, rope).flatMap(HfConfig::number)).ifPresent(out::add);
        Optional<LongRope> longRope = arch == Architectures.PHI3 ? LongRope.phi3(config) : Optional.empty();
        longRope.ifPresent(l -> out.addAll(l.tensors()));
        List<String> notes = new ArrayList<>();
        Optional<Long> positionRowsCut = arch == Architectures.XLM_ROBERTA ? positionOffset(asStored) : Optional.empty();
        if (arch == Architectures.GEMMA_EMBEDDING) denseModules(files).ifPresent(notes::add);
        Yarn.untruncatedNote(arch.gguf(), rope).ifPresent(notes::add);
        if (arch == Architectures.INTERNLM2 && "dynamic".equals(rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type"))) {
            notes.add("rope_scaling dynamic: transformers' InternLM2 raises the rope base past max_position_embeddings, llama.cpp "
                    + "runs the plain rope (the converter writes no scaling): the same up to "
                    + HfConfig.integer(config, "max_position_embeddings").map(String::valueOf).orElse("max_position_embeddings") + " tokens");
        }
        if (arch.extras().unappliedWindow()) HfConfig.integer(config, "sliding_window").filter(n -> n > 0).ifPresent(n ->
                notes.add("sliding_window " + n + ": transformers' " + arch.hfNames().getFirst() + " attends within the last " + n
                        + " positions, llama.cpp's " + arch.gguf() + " over the whole context (the converter writes no window): "
                        + "the same up to " + n + " tokens"));
        java.util.SortedMap<String, Integer> leftOut = new java.util.TreeMap<>();
        Optional<Architecture.LatentAttention> latent = arch.extras().latentAttention();
        java.util.SortedMap<Long, Integer> beyond = new java.util.TreeMap<>();
        java.util.SortedMap<String, Integer> skippedByPrefix = new java.util.TreeMap<>();
        // Gemma3Model.modify_tensors cuts embed_tokens to the vocabulary it reads (none: --no-vocab without a tokenizer)
        Optional<Long> vocabularyRows = arch.extras().trimEmbeddings() ? Vocabulary.size(files, config) : Optional.empty();
        // tensors offered recovered, less those taken below: what is left out, not counted as recovered
        // (ExportedModel.notRecovered)
        java.util.Set<String> leftOutRecovered = new java.util.HashSet<>();
        for (DenseTensor input : inputs) {
            if (input.recoveredFrom().isPresent()) leftOutRecovered.add(input.name());
        }
        // ModelBase's fp8 dequantization drops the activation scales (static FP8's, as Ministral 3 and Devstral ship
        // them): llama.cpp computes in the weights' type and has no use for them
        boolean fp8 = stored.get("quantization_config") instanceof Map<?, ?> q && "fp8".equals(q.get("quant_method"));
        int activationScales = 0;
        int buffers = 0;
        LayerScalars scalars = new LayerScalars(arch.extras().layerScalars(), blockCount);
        for (DenseTensor input : inputs) {
            if (DROPPED.stream().anyMatch(input.name()::endsWith)) continue;
            if (arch.extras().buffers().stream().anyMatch(input.name()::endsWith)) {
                buffers++;
                continue;
            }
            if (fp8 && (input.name().endsWith(".activation_scale") || input.name().endsWith("_activation_scale"))) {
                activationScales++;
                continue;
            }
            Optional<String> textName = arch.extras().multimodal().map(m -> m.textName(input.name())).orElse(Optional.of(input.name()))
                    .map(n -> underModel(arch, n, blockCount));
            if (textName.isEmpty()) {
                String part = arch.extras().multimodal().get().leftOut().stream().filter(input.name()::startsWith).findFirst()
                        .orElse(input.name().substring(0, input.name().indexOf('.') + 1));
                leftOut.merge(part + "*", 1, Integer::sum);
                continue;
            }
            if (arch.extras().leftOut().isPresent() && arch.extras().leftOut().get().has(textName.get())) {
                String prefix = arch.extras().leftOut().get().prefixes().stream().filter(textName.get()::startsWith).findFirst().orElseThrow();
                skippedByPrefix.merge(prefix + "*", 1, Integer::sum);
                continue;
            }
            DenseTensor unrenamed = squeezed(arch, textName.get().equals(input.name()) ? input : renamed(input, textName.get()));
            // DeepseekV2Model's, Glm4MoeModel's and MiniMaxM2Model's modify_tensors: e_score_correction_bias is renamed
            // e_score_correction.bias (the name gguf-py maps); and the family's own renames
            DenseTensor mapped = groupedQkv(arch, config, transposed(arch, config, perHeadQkv(arch, config, suffixRenamed(arch,
                    unrenamed.name().endsWith(".e_score_correction_bias")
                    ? renamed(unrenamed, unrenamed.name().substring(0, unrenamed.name().length() - "_bias".length()) + ".bias")
                    : unrenamed))));
            if (arch.skipped().contains(mapped.name())) continue;
            if (latent.isPresent()) {
                // DeepseekV2Model.modify_tensors: the multi-token-prediction layers (from num_hidden_layers on) are skipped
                Matcher layer = MODEL_LAYER.matcher(mapped.name());
                if (layer.lookingAt() && layer.group(1).length() < 10 && Long.parseLong(layer.group(1)) >= blockCount) {
                    beyond.merge(Long.parseLong(layer.group(1)), 1, Integer::sum);
                    continue;
                }
            }
            leftOutRecovered.remove(input.name());
            if (scalars.take(mapped)) continue;
            if (arch == Architectures.INTERNLM2 && mapped.name().endsWith(".attention.wqkv.weight")) {
                // InternLM2Model.modify_tensors: the grouped wqkv split into q, k and v, q and k permuted as llama's
                requireFloats(mapped);
                long heads = HfConfig.integer(config, "num_attention_heads").orElseThrow(() -> badKey("num_attention_heads", "is missing"));
                long kv = HfConfig.integer(config, "num_key_value_heads").orElseThrow(() -> badKey("num_key_value_heads", "is missing"));
                long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                String prefix = mapped.name().substring(0, mapped.name().length() - "wqkv.weight".length());
                List<DenseTensor> parts = QkvRows.groupedParts(mapped, heads, kv, hidden, prefix);
                for (int i = 0; i < parts.size(); i++) {
                    DenseTensor part = parts.get(i);
                    String partName = arch.map(part.name(), (int) blockCount).orElseThrow(() -> unmapped(part.name(), blockCount, arch));
                    Optional<Long> ropeHeads = i == 0 ? Optional.of(heads) : i == 1 ? Optional.of(kv) : Optional.empty();
                    out.add(typed(part, partName, ropeHeads, Optional.empty(), outtype, request.encoder()));
                }
                continue;
            }
            if (latent.isPresent()) {
                if (mapped.name().endsWith("." + latent.get().kvB())) {
                    requireFloats(mapped);
                    for (DenseTensor part : latentSplit(mapped, latent.get(), config)) {
                        String partName = arch.map(part.name(), (int) blockCount).orElseThrow(() -> unmapped(part.name(), blockCount, arch));
                        out.add(typed(part, partName, Optional.empty(), Optional.empty(), outtype, request.encoder()));
                    }
                    continue;
                }
            }
            if (arch == Architectures.COHERE2 && mapped.name().endsWith(".bias")) {
                // Cohere2Model.modify_tensors: llama.cpp's cohere2 has no biases; the checkpoints' are zeros
                requireZeros(mapped);
                continue;
            }
            Optional<Architecture.FusedExperts> fusedExperts = arch.extras().fusedExperts();
            if (fusedExperts.isPresent() && fusedExperts.get().down(mapped.name())) {
                // Qwen2MoeModel.modify_tensors: transformers 5's down_proj [E, hidden, I] as it is, named .weight
                DenseTensor down = mapped.name().endsWith(".weight") ? mapped : renamed(mapped, mapped.name() + ".weight");
                requireFloats(down);
                String name = arch.map(down.name(), (int) blockCount).orElseThrow(() -> unmapped(down.name(), blockCount, arch));
                shapes.fusedDown(down, fusedExperts.get());
                stacks.ifPresent(st -> st.fused(down.name()));
                out.add(typed(down, name, Optional.empty(), Optional.empty(), outtype, request.encoder()));
                continue;
            }
            Optional<Architecture.RowHalves> fused = fusedExperts.flatMap(f -> f.gateUp(mapped.name()))
                    .or(() -> arch.extras().rowHalves().stream().filter(h -> mapped.name().endsWith(h.suffix())).findFirst());
            if (fused.isPresent()) {
                // GraniteMoeModel.modify_tensors: the halves of rows, gate then up, each written in the tensor's place
                requireFloats(mapped);
                stacks.ifPresent(st -> st.fused(mapped.name()));
                for (DenseTensor part : RowHalfTensors.split(mapped, fused.get(), config)) {
                    String partName = arch.map(part.name(), (int) blockCount).orElseThrow(() -> unmapped(part.name(), blockCount, arch));
                    out.add(typed(part, partName, Optional.empty(), Optional.empty(), outtype, request.encoder()));
                }
                continue;
            }
            if (stacks.isPresent() && stacks.get().take(mapped, out)) continue;
            if (packed.isPresent() && packed.get().take(mapped, out,
                    (d, gguf) -> typed(d, gguf, Optional.empty(), Optional.empty(), outtype, request.encoder()))) {
                continue;
            }
            String name = arch.map(mapped.name(), (int) blockCount).orElseThrow(() -> unmapped(mapped.name(), blockCount, arch));
            requireFloats(mapped);
            shapes.check(mapped);
            DenseTensor d = mapped;
            if (vocabularyRows.isPresent() && d.name().contains("embed_tokens.weight") && d.shape().rank() >= 1
                    && d.shape().dim(0) > vocabularyRows.get()) {
                notes.add(name + ": " + d.shape().dim(0) + " rows cut to the vocabulary's " + vocabularyRows.get()
                        + " (as the converter removes a Gemma 3 model's rows past its vocabulary)");
                d = ConvertedTensor.firstRows(d, vocabularyRows.get());
            }
            if (positionRowsCut.isPresent() && name.startsWith("position_embd.")) {
                // XLMRobertaModel.modify_tensors: positions start at pad_token_id + 1, so the rows before are cut
                d = ConvertedTensor.rowsFrom(d, Math.min(positionRowsCut.get(), d.shape().dim(0)));
            }
            Optional<Long> heads = Optional.empty();
            for (Architecture.RopeRows r : arch.ropeRows()) {
                if (d.name().endsWith(r.suffix())) heads = Optional.of(shapes.ropeHeads(d, r.keyValueHeads()));
            }
            out.add(typed(d, name, heads, arch.shift(d.name()), outtype, request.encoder()));
        }
        stacks.ifPresent(Stacks::requireAll);
        scalars.requireAll();
        requireUniqueNames(out, inputs, arch, blockCount);
        if (activationScales > 0) {
            notes.add("left out " + activationScales + " FP8 activation scale" + (activationScales == 1 ? "" : "s")
                    + " (static activation quantization, which the converter drops and llama.cpp does not use)");
        }
        if (buffers > 0) {
            notes.add("left out " + buffers + " buffer" + (buffers == 1 ? "" : "s") + " (" + String.join(", ", arch.extras().buffers())
                    + ": causal masks, not weights; llama.cpp masks by itself)");
        }
        if (!skippedByPrefix.isEmpty()) {
            int n = skippedByPrefix.values().stream().mapToInt(Integer::intValue).sum();
            notes.add("left out " + n + " tensor" + (n == 1 ? "" : "s") + " of the " + arch.extras().leftOut().orElseThrow().what()
                    + " (" + String.join(", ", skippedByPrefix.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).toList())
                    + "), which the converter skips and llama.cpp does not run");
        }
        if (!beyond.isEmpty()) {
            int n = beyond.values().stream().mapToInt(Integer::intValue).sum();
            notes.add("left out " + n + " tensor" + (n == 1 ? "" : "s") + " of layer" + (beyond.size() == 1 ? " " : "s ")
                    + String.join(", ", beyond.keySet().stream().map(String::valueOf).toList()) + " (past num_hidden_layers "
                    + blockCount + ": the checkpoint's multi-token-prediction layers, which the converter skips and llama.cpp "
                    + "does not run)");
        }
        if (!leftOut.isEmpty()) {
            int n = leftOut.values().stream().mapToInt(Integer::intValue).sum();
            notes.add("left out " + n + " tensor" + (n == 1 ? "" : "s") + " of the " + arch.extras().multimodal().orElseThrow().what()
                    + " (" + String.join(", ", leftOut.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).toList())
                    + "): the GGUF holds the text model, as llama.cpp's converter writes it (the converter writes the "
                    + "vision part apart, as an mmproj file, which amn does not)");
        }

        long params = 0;
        for (PlannedTensor t : out) params += t.elementCount();
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        kv.put("general.architecture", MetaValue.str(arch.gguf()));
        // written by generate_extra_tensors, which runs before the metadata is set
        longRope.ifPresent(l -> kv.put(arch.gguf() + ".rope.scaling.attn_factor", MetaValue.Real.f32(l.attnFactor())));
        // ApertusModel.modify_tensors writes its xIELU arrays as the tensors go by, before the metadata
        scalars.keys(kv);
        kv.put("general.type", MetaValue.str("model"));
        sampling(files, kv);
        ModelNaming naming = ModelNaming.of(Optional.ofNullable(config.get("_name_or_path")).filter(String.class::isInstance)
                .map(String.class::cast), folder, params, sizeLabel(out));
        putString(kv, "general.name", naming.name() == null ? folder : naming.name());
        putString(kv, "general.version", naming.version());
        putString(kv, "general.organization", naming.organization());
        putString(kv, "general.finetune", naming.finetune());
        putString(kv, "general.basename", naming.basename());
        putString(kv, "general.size_label", naming.sizeLabel());
        int fileType = fileType(outtype, config);
        hyperParameters(arch, files, config, blockCount, fileType, kv);
        kv.put("general.quantization_version", MetaValue.u32(2));
        if (request.vocabulary()) {
            switch (arch.vocabulary()) {
                case LLAMA -> Vocabulary.llama(files, config, kv);
                case SENTENCEPIECE -> Vocabulary.sentencePieceOnly(files, config, kv);
                case INTERNLM2 -> Vocabulary.internLm2(files, config, kv);
                case SENTENCEPIECE_PAD0_UNK1 -> {
                    Vocabulary.sentencePieceOnly(files, config, kv);
                    // NemotronModel.set_vocab: add_pad_token_id(0), add_unk_token_id(1), over what SpecialVocab wrote
                    kv.put("tokenizer.ggml.padding_token_id", MetaValue.u32(0));
                    kv.put("tokenizer.ggml.unknown_token_id", MetaValue.u32(1));
                }
                case SENTENCEPIECE_ELSE_GPT2 -> Vocabulary.sentencePieceElseGpt2(files, config, kv);
                case SENTENCEPIECE_SPACE_PREFIX_FROM_CONFIG -> Vocabulary.sentencePieceSpacePrefixFromConfig(files, config, kv);
                case GPT2 -> Vocabulary.gpt2(files, config, kv);
                case GEMMA -> Vocabulary.gemma(files, config, kv);
                case SENTENCEPIECE_NO_SPACE_PREFIX -> Vocabulary.sentencePieceNoSpacePrefix(files, config, kv);
                case SENTENCEPIECE_NO_SPACE_PREFIX_ELSE_GPT2 -> Vocabulary.sentencePieceNoSpacePrefixElseGpt2(files, config, kv);
                case PHI3 -> Vocabulary.phi3(files, config, kv);
                case GLM4 -> Vocabulary.glm4(files, config, kv);
                case BERT -> Vocabulary.bert(files, config, kv);
                case XLM_ROBERTA -> Vocabulary.xlmRoberta(files, config, kv);
            }
        } else {
            Vocabulary.none(kv);
        }
        java.util.Set<String> storedAsIs = packed.map(PackedExpertTensors::storedAsIs).orElse(java.util.Set.of());
        if (!storedAsIs.isEmpty()) {
            notes.add("the experts' MXFP4 weights (" + storedAsIs.size() + " tensors of the checkpoint) written as MXFP4, not "
                    + "recovered: their blocks re-laid into ggml's order, their values unchanged, whatever the output type, as the "
                    + "converter writes them" + (fileType == 38 ? " (general.file_type MOSTLY_MXFP4_MOE)" : ""));
        }
        java.util.Set<String> notRecovered = new java.util.HashSet<>(storedAsIs);
        notRecovered.addAll(leftOutRecovered);
        return new ExportedModel(out, kv, outtype, notes, notRecovered);
    }

    /**
     * {@code general.file_type}: the output type's, except that a checkpoint whose
     * {@code quantization_config} says {@code mxfp4} converted to F32, F16 or BF16 is
     * {@code MOSTLY_MXFP4_MOE} (38), as the converter's {@code prepare_metadata} sets it.
     */
    private static int fileType(String outtype, Map<?, ?> config) {
        boolean mxfp4 = config.get("quantization_config") instanceof Map<?, ?> q && "mxfp4".equals(q.get("quant_method"));
        return mxfp4 && !outtype.equals("q8_0") ? 38 : FILE_TYPE.get(outtype);
    }

    /** Every value of the small tensor {@code d} is 0 (or -0), else malformed naming it (the converter stops there). */
    private static void requireZeros(DenseTensor d) {
        if (!d.isNumeric() || d.elementCount() > 1 << 24) throw MalformedFileException.inTensor(d.name(), "is not a float bias of a size read here");
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            io.anamnesis.api.spi.DenseReader reader = io.anamnesis.api.spi.DenseReader.open(d, arena);
            float[] v = new float[(int) Math.min(d.elementCount(), 1 << 16)];
            for (long at = 0; at < d.elementCount(); at += v.length) {
                int n = (int) Math.min(v.length, d.elementCount() - at);
                reader.read(at, n, v, 0);
                for (int i = 0; i < n; i++) {
                    if (v[i] != 0) {
                        throw MalformedFileException.inTensor(d.name(), "holds " + v[i] + " at " + (at + i) + ": llama.cpp's cohere2 has no "
                                + "bias tensors, and the converter leaves out only biases that are all zero");
                    }
                }
            }
        }
    }

    /** {@code d} with its size-1 second dimension dropped, when the family's convolution weights are squeezed. */
    private static DenseTensor squeezed(Architecture arch, DenseTensor d) {
        if (arch.extras().convLayers().isEmpty() || d.shape().rank() != 3 || d.shape().dim(1) != 1) return d;
        if (arch.extras().convLayers().get().squeezed().stream().noneMatch(d.name()::endsWith)) return d;
        return ConvertedTensor.reshaped(d, io.anamnesis.api.Shape.of(d.shape().dim(0), d.shape().dim(2)));
    }

    /** {@code d} under the name {@code name} (a multimodal checkpoint's text tensor, its prefix removed). */
    private static DenseTensor renamed(DenseTensor d, String name) {
        return new DenseTensor(name, d.shape(), d.storedDType(), d.recoveredFrom(), d.asStored(), d.values(), d.keep());
    }

    /**
     * The config the converter reads for a text model: a {@code text_config} merged over the top
     * level ({@code TextModel.__init__}: {@code {**hparams, **text_config}}), the family's
     * config class's defaults filled into the text config first (as AutoConfig fills the
     * sub-config), or into the whole config when it has no text_config.
     */
    static Map<?, ?> textModelConfig(Architecture arch, Map<?, ?> config) {
        Map<?, ?> text = config.get("text_config") instanceof Map<?, ?> t ? t : null;
        Architecture.Extras extras = arch.extras();
        if (text == null && extras.configDefaults().isEmpty() && extras.configIgnored().isEmpty() && extras.configFrom().isEmpty()) {
            return config;
        }
        Map<Object, Object> merged = new LinkedHashMap<>();
        if (text != null) merged.putAll(config);
        Map<?, ?> own = text == null ? config : text;
        extras.configDefaults().forEach((k, v) -> {
            if (!own.containsKey(k)) merged.put(k, v);
        });
        merged.putAll(own);
        extras.configIgnored().forEach(merged::remove);
        extras.configFrom().forEach((key, from) -> HfConfig.find(merged, from).ifPresent(v -> merged.put(key, v)));
        return merged;
    }

    /**
     * {@code NomicBertModel.__init__}'s context length: {@code n_positions} 8192 with {@code max_trained_positions} 2048
     * (nomic-embed-text v1 and v1.5, trained for 2048 tokens) becomes 2048, 2048 with 2048 becomes 512; any other pair
     * stops the converter (exit 3 here). {@code max_trained_positions} is 2048 when absent, as the converter reads it.
     */
    private static Map<?, ?> nomicPositions(Map<?, ?> config) {
        long positions = HfConfig.integer(config, "n_positions").orElseThrow(() -> badKey("n_positions", "is missing"));
        long trained = HfConfig.integer(config, "max_trained_positions").orElse(2048L);
        long context;
        if (positions == 8192 && trained == 2048) {
            context = 2048;
        } else if (positions == 2048 && trained == 2048) {
            context = 512;
        } else {
            throw badKey("n_positions", "is " + positions + " with max_trained_positions " + trained + ": the converter knows "
                    + "nomic-embed-text's 8192 over 2048 (a context of 2048) and 2048 over 2048 (512), and stops on others");
        }
        Map<Object, Object> rewritten = new LinkedHashMap<>(config);
        rewritten.put("n_positions", context);
        return rewritten;
    }

    /**
     * {@code BertModel.__init__}'s classifier labels: config.json's {@code id2label} (transformers reads its keys as
     * integers), none when absent or when it is transformers' placeholder pair (two labels, the first LABEL_0); else
     * the labels in the order of their ids, as a string array. A key that is not an integer is exit 3.
     */
    private static Optional<MetaValue> classifierLabels(Map<?, ?> config) {
        if (!(config.get("id2label") instanceof Map<?, ?> labels) || labels.isEmpty()) return Optional.empty();
        java.util.TreeMap<Long, String> byId = new java.util.TreeMap<>();
        for (Map.Entry<?, ?> e : labels.entrySet()) {
            long id;
            try {
                id = Long.parseLong(String.valueOf(e.getKey()));
            } catch (NumberFormatException bad) {
                throw badKey("id2label", "has a key that is not an integer: " + e.getKey());
            }
            byId.put(id, String.valueOf(e.getValue()));
        }
        if (byId.size() == 2 && "LABEL_0".equals(byId.get(0L))) return Optional.empty();
        return Optional.of(new MetaValue.Array(MetaValue.Type.STRING, byId.values().stream().map(v -> (MetaValue) MetaValue.str(v)).toList()));
    }

    /** RoBERTa's position offset, {@code pad_token_id + 1}, when config.json has a padding id. */
    private static Optional<Long> positionOffset(Map<?, ?> config) {
        return HfConfig.integer(config, "pad_token_id").map(p -> p + 1);
    }

    /**
     * {@code _xlmroberta_tokenizer_init}'s context length: {@code max_position_embeddings} less the position offset
     * ({@code pad_token_id + 1}) when config.json has a padding id; the position rows are cut to match.
     */
    private static Map<?, ?> robertaPositions(Map<?, ?> config) {
        Optional<Long> offset = positionOffset(config);
        Optional<Long> positions = HfConfig.integer(config, "max_position_embeddings");
        if (offset.isEmpty() || positions.isEmpty()) return config;
        if (offset.get() < 0 || offset.get() > positions.get()) {
            throw badKey("pad_token_id", "is " + (offset.get() - 1) + ": RoBERTa's positions start at pad_token_id + 1, "
                    + "which max_position_embeddings " + positions.get() + " does not hold");
        }
        Map<Object, Object> rewritten = new LinkedHashMap<>(config);
        rewritten.put("max_position_embeddings", positions.get() - offset.get());
        return rewritten;
    }

    /**
     * What llama.cpp's nomic-bert does not compute, beyond the asserts of {@link Architectures#NOMIC_BERT}'s config
     * values: a scaled rotary embedding ({@code rotary_emb_scale_base}, which the converter asserts null, or a
     * {@code rotary_scaling_factor}, which it drops) and the mixture-of-experts layers of nomic-embed-text-v2-moe (exit 6).
     */
    private static void expectNomicBert(Map<?, ?> config) {
        for (String key : List.of("rotary_emb_scale_base", "rotary_scaling_factor")) {
            Object v = config.get(key);
            if (v != null && v != io.anamnesis.api.json.Json.NULL) {
                throw new UnsupportedFeatureException("config.json " + key + " is " + v + ": llama.cpp's nomic-bert rotates "
                        + "without scaling (the converter writes no scaling); not converted");
            }
        }
        if (HfConfig.integer(config, "moe_every_n_layers").filter(n -> n != 0).isPresent()) {
            throw new UnsupportedFeatureException("config.json moe_every_n_layers is set: the mixture-of-experts nomic-bert "
                    + "(nomic-embed-text-v2-moe, arch nomic-bert-moe) is not converted yet");
        }
    }

    /**
     * llama.cpp's llama4 L2-normalizes q and k in the layers with rope unless the model has 128
     * experts (Maverick, whose config.json says {@code use_qk_norm} false); no key says which. A
     * config.json that says otherwise (transformers' default is true) would run as another model
     * (exit 6).
     */
    private static void expectLlama4QkNorm(Map<?, ?> config) {
        Object v = config.get("use_qk_norm");
        boolean norm = v == null || v == io.anamnesis.api.json.Json.NULL || Boolean.TRUE.equals(v);
        long experts = HfConfig.integer(config, "num_local_experts").orElse(0L);
        if (norm != (experts != 128)) {
            throw new UnsupportedFeatureException("config.json use_qk_norm is " + norm + " with " + experts + " experts: llama.cpp's "
                    + "llama4 normalizes q and k unless the model has 128 experts (Maverick's), and no key says otherwise; not converted");
        }
    }

    /**
     * What llama.cpp's deepseek2 assumes of a DeepSeek model without keys to say so. It takes a model
     * for one with a single query projection ({@code q_lora_rank} null, DeepSeek-V2-Lite's) by its
     * layer count alone: 26 or 27 layers (and, in its newer builds, 48 with a vocabulary of 128256,
     * Kanana-2's); any other count must have the low-rank query pair, and those counts must not,
     * or llama.cpp would not load the file (exit 6). And DeepSeek-V2's own modeling code either
     * renormalizes the chosen experts' weights ({@code norm_topk_prob}) or scales them
     * ({@code routed_scaling_factor}), where llama.cpp does both: with both set the model would run
     * as another (exit 6).
     */
    private static void expectDeepSeekLayout(Architecture arch, Map<?, ?> stored, Map<?, ?> config, long blockCount) {
        Object rank = config.get("q_lora_rank");
        boolean singleQuery = rank == null || rank == io.anamnesis.api.json.Json.NULL;
        long vocab = HfConfig.integer(config, "vocab_size").orElse(0L);
        boolean lite = blockCount == 26 || blockCount == 27 || (blockCount == 48 && vocab == 128256);
        if (singleQuery && !lite) {
            throw new UnsupportedFeatureException("config.json q_lora_rank is null (one query projection, DeepSeek-V2-Lite's) with "
                    + blockCount + " layers: llama.cpp's deepseek2 takes a model for that layout only when it has 26 or 27 layers "
                    + "(or 48 with a 128256-token vocabulary), and would not load this file; not converted");
        }
        if (!singleQuery && lite) {
            throw new UnsupportedFeatureException("config.json q_lora_rank is " + rank + " (a low-rank query pair) with " + blockCount
                    + " layers: llama.cpp's deepseek2 takes a model of that many layers for one with a single query projection "
                    + "(DeepSeek-V2-Lite's), and would not load this file; not converted");
        }
        if (Boolean.FALSE.equals(config.get("rope_interleave"))) {
            throw new UnsupportedFeatureException("config.json rope_interleave is false: transformers then rotates the halves of "
                    + "each head's rotary part, where llama.cpp's " + arch.gguf() + " rotates adjacent pairs (the converter writes no "
                    + "permutation); the file would run as another model; not converted");
        }
        Object name = stored.get("architectures") instanceof List<?> l && !l.isEmpty() ? l.getFirst() : null;
        double scaling = HfConfig.number(config.get("routed_scaling_factor")).map(Number::doubleValue).orElse(1.0);
        if ("DeepseekV2ForCausalLM".equals(name) && Boolean.TRUE.equals(config.get("norm_topk_prob")) && scaling != 1.0) {
            throw new UnsupportedFeatureException("config.json norm_topk_prob is true and routed_scaling_factor " + scaling + ": "
                    + "DeepSeek-V2's modeling code renormalizes the chosen experts' weights instead of scaling them, and llama.cpp's "
                    + arch.gguf() + " would do both; not converted");
        }
    }

    /**
     * llama.cpp's command-r loads per-head q/k norms for Command R+ only, which it recognizes by
     * its 64 layers or more (there is no key for them): a config.json whose {@code use_qk_norm}
     * says otherwise gives a file llama.cpp does not load (exit 6).
     */
    private static void expectCommandRQkNorms(Map<?, ?> config, long blockCount) {
        boolean qkNorm = Boolean.TRUE.equals(config.get("use_qk_norm"));
        if (qkNorm != blockCount >= 64) {
            throw new UnsupportedFeatureException("config.json use_qk_norm is " + qkNorm + " with " + blockCount + " layers: llama.cpp's "
                    + "command-r loads q/k norms for 64 layers or more (Command R+) and for no other, so it would not load the file; "
                    + "not converted");
        }
    }

    /**
     * llama.cpp's exaone4 applies a sliding window for the 64-layer EXAONE 4.0 32B only, every
     * fourth layer global (without rope), whatever the file's pattern key says; for any other
     * layer count it runs every layer global with rope. A config.json with a sliding window and
     * another layer count, or another layout, gives a file llama.cpp runs as another model (exit 6).
     */
    private static void expectExaone4Window(Map<?, ?> config, long blockCount) {
        Object w = config.get("sliding_window");
        if (w == null || w == io.anamnesis.api.json.Json.NULL) return;
        if (blockCount != 64) {
            throw new UnsupportedFeatureException("config.json sliding_window is " + w + " with " + blockCount + " layers: llama.cpp's "
                    + "exaone4 applies a window to the 64-layer EXAONE 4.0 32B only and would run every layer global; not converted");
        }
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        ownKey(Architectures.EXAONE4, Architecture.OwnKey.EXAONE4_SLIDING_WINDOW, config, blockCount, 0, kv);
        if (kv.get("exaone4.attention.sliding_window_pattern") instanceof MetaValue.Array a) {
            for (int il = 0; il < a.values().size(); il++) {
                boolean local = ((MetaValue.Bool) a.values().get(il)).value();
                if (local != ((il + 1) % 4 != 0)) {
                    throw new UnsupportedFeatureException("config.json lays layer " + il + " out as " + (local ? "local" : "global")
                            + ": llama.cpp's exaone4 makes every fourth layer global (layers 3, 7, ...); not converted");
                }
            }
        }
    }

    /**
     * A family's layers without rope as llama.cpp lays them out without a key (smollm3's every
     * fourth): config.json's {@code no_rope_layer_interval} and {@code no_rope_layers}, when
     * given, must say the same, or llama.cpp would compute another model (exit 6); a
     * {@code no_rope_layers} that is not one 0 or 1 per layer is malformed (exit 3).
     */
    private static void expectNoRopeLayers(Architecture arch, Architecture.NoRopeLayers n, Map<?, ?> config, long blockCount) {
        String why = "llama.cpp's " + arch.gguf() + " leaves rope out of every " + n.period() + "th layer (layers "
                + (n.period() - 1) + ", " + (2 * n.period() - 1) + ", ...) and no key says otherwise; not converted";
        Object interval = config.get("no_rope_layer_interval");
        if (interval != null && interval != io.anamnesis.api.json.Json.NULL) {
            long i = HfConfig.asInteger(interval).orElseThrow(() -> badKey("no_rope_layer_interval", "is not an integer: " + interval));
            if (i != n.period()) throw new UnsupportedFeatureException("config.json no_rope_layer_interval is " + i + ": " + why);
        }
        Object layers = config.get("no_rope_layers");
        if (layers == null || layers == io.anamnesis.api.json.Json.NULL) return;
        if (!(layers instanceof List<?> list) || list.size() != blockCount) {
            throw badKey("no_rope_layers", "is not one 0 or 1 for each of the " + blockCount + " layers: " + layers);
        }
        for (int il = 0; il < list.size(); il++) {
            Object v = list.get(il);
            long flag = HfConfig.asInteger(v).filter(x -> x == 0 || x == 1)
                    .orElseThrow(() -> badKey("no_rope_layers", "holds " + v + ", not 0 or 1"));
            if ((flag == 1) != n.rope(il)) {
                throw new UnsupportedFeatureException("config.json no_rope_layers gives layer " + il + (flag == 1 ? "" : " no")
                        + " rope: " + why);
            }
        }
    }

    /**
     * A family's local and global layers as llama.cpp lays them out without a pattern key
     * (which the converter does not write): config.json's {@code sliding_window_pattern} must
     * be that period, or 1 (every layer global: then no sliding window is written), and
     * {@code layer_types}, when given, must be that layout; the local layers' rope must be
     * unscaled (llama.cpp scales only the global layers'), the global layers' linear or none;
     * the queries scaled as llama.cpp scales them; causal attention; no attention soft-cap (the
     * converter stops at one).
     */
    private static void expectLayers(Architecture arch, Architecture.SlidingWindow w, Map<?, ?> config, long blockCount) {
        String name = arch.hfNames().getFirst();
        Object p = config.get("sliding_window_pattern");
        long pattern = w.gemma3() ? HfConfig.asInteger(p).orElseThrow(() -> badKey("sliding_window_pattern", "is not an integer: " + p))
                : w.period();
        boolean allGlobal = pattern == 1;
        if (!allGlobal && pattern != w.period()) {
            throw new UnsupportedFeatureException("config.json sliding_window_pattern is " + pattern + ": llama.cpp's " + arch.gguf()
                    + " makes every " + w.period() + "th layer global (the converter writes no pattern), so " + name
                    + " is converted with a pattern of " + w.period() + " (or 1, every layer global) only");
        }
        Object types = config.get("layer_types");
        if (types != null && types != io.anamnesis.api.json.Json.NULL) {
            if (!(types instanceof List<?> list) || list.size() != blockCount) {
                throw badKey("layer_types", "is not a list of num_hidden_layers (" + blockCount + ") layer types");
            }
            for (int i = 0; i < list.size(); i++) {
                String want = allGlobal || i % w.period() == w.period() - 1 ? "full_attention" : "sliding_attention";
                if (!want.equals(list.get(i))) {
                    throw new UnsupportedFeatureException("config.json layer_types makes layer " + i + " " + list.get(i)
                            + ": llama.cpp's " + arch.gguf() + " makes it " + want + " (every " + (allGlobal ? "" : w.period() == 2 ? "second " : w.period() + "th ")
                            + "layer global); not converted");
                }
            }
        }
        if (!allGlobal) {
            Object window = config.get("sliding_window");
            HfConfig.asInteger(window).filter(v -> v > 0 && v <= 0xFFFF_FFFFL)
                    .orElseThrow(() -> badKey("sliding_window", "is not a positive GGUF uint32: " + window));
        }
        if (!w.gemma3()) {
            if (p != null && p != io.anamnesis.api.json.Json.NULL && HfConfig.asInteger(p).filter(v -> v == w.period()).isEmpty()) {
                throw new UnsupportedFeatureException("config.json sliding_window_pattern is " + p + ": llama.cpp's " + arch.gguf()
                        + " makes every " + w.period() + "th layer global (the converter writes no pattern); not converted");
            }
            return;
        }
        boolean bidirectional = Boolean.TRUE.equals(config.get("use_bidirectional_attention"));
        if (arch == Architectures.GEMMA_EMBEDDING) {
            if (!bidirectional) {
                throw new UnsupportedFeatureException("config.json use_bidirectional_attention is not true: llama.cpp's "
                        + arch.gguf() + " attends both ways, and a Gemma3TextModel that attends causally would run as another "
                        + "model; not converted");
            }
        } else if (bidirectional) {
            throw new UnsupportedFeatureException("config.json use_bidirectional_attention is true: llama.cpp's " + arch.gguf()
                    + " attends causally (EmbeddingGemma, Gemma3TextModel, is converted as gemma-embedding)");
        }
        Object softcap = config.get("attn_logit_softcapping");
        if (softcap != null && softcap != io.anamnesis.api.json.Json.NULL) {
            throw new UnsupportedFeatureException("config.json attn_logit_softcapping is " + softcap + ": " + name
                    + " has no attention soft-cap (the converter stops at one)");
        }
        Map<?, ?> rope = ropeParameters(arch, config);
        Object type = rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type");
        if (type != null && type != io.anamnesis.api.json.Json.NULL && !type.equals("default") && !type.equals("linear")) {
            throw new UnsupportedFeatureException("config.json rope scaling type " + type + " on " + arch.gguf() + " is not "
                    + "converted (linear and none are: llama.cpp scales only the global layers' rope)");
        }
        // llama.cpp's gemma3: queries scaled by 1/sqrt(head_dim), by 1/sqrt(hidden / heads) for its 62-layer 27B; its
        // gemma-embedding always by 1/sqrt(head_dim)
        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
        long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
        long headDim = HfConfig.integer(config, "head_dim").orElseThrow(() -> badKey("head_dim", "is missing"));
        boolean wide = blockCount == 62 && arch == Architectures.GEMMA3;
        long llamaCpp = wide ? hidden / heads : headDim;
        Object q = config.get("query_pre_attn_scalar");
        double scalar = HfConfig.number(q).orElseThrow(() -> badKey("query_pre_attn_scalar", "is not a number: " + q));
        if (scalar != llamaCpp) {
            throw new UnsupportedFeatureException("config.json query_pre_attn_scalar is "
                    + HfConfig.asInteger(q).map(String::valueOf).orElse(String.valueOf(q)) + ": llama.cpp's " + arch.gguf()
                    + " scales the queries by 1/sqrt(" + llamaCpp + ") (" + (wide ? "hidden_size / num_attention_heads"
                    + " for 62 layers" : "head_dim") + "); not converted");
        }
    }

    /**
     * The layers past {@code num_hidden_layers} a family writes and counts in {@code block_count}
     * ({@code Glm4MoeModel.__init__}: {@code hparams.get("num_nextn_predict_layers", 0)}), 0 for the others.
     */
    private static long extraLayers(Architecture arch, Map<?, ?> config) {
        Optional<String> key = arch.extras().extraLayers();
        if (key.isEmpty() || config.get(key.get()) == null) return 0;
        return HfConfig.integer(config, key.get()).filter(n -> n >= 0 && n <= 1024)
                .orElseThrow(() -> badKey(key.get(), "is not a small non-negative integer"));
    }

    /** {@link LatentAttentionTensors#split} with the sizes config.json gives (the key/value heads as stored, before the file's one). */
    private static List<DenseTensor> latentSplit(DenseTensor kvB, Architecture.LatentAttention attention, Map<?, ?> config) {
        long heads = HfConfig.integer(config, "num_key_value_heads").or(() -> HfConfig.integer(config, "num_attention_heads"))
                .filter(h -> h > 0 && h <= 1 << 24).orElseThrow(() -> badKey("num_key_value_heads", "is missing or not a positive "
                        + "integer up to 2^24"));
        long nope = positive(config, "qk_nope_head_dim"), v = positive(config, "v_head_dim"), rank = positive(config, "kv_lora_rank");
        return LatentAttentionTensors.split(kvB, attention, heads, nope, v, rank);
    }

    /** A positive size of config.json, at most 2^24 (so that products of a few of them cannot overflow). */
    private static long positive(Map<?, ?> config, String key) {
        return HfConfig.integer(config, key).filter(x -> x > 0 && x <= 1 << 24)
                .orElseThrow(() -> badKey(key, "is missing or not a positive integer up to 2^24"));
    }

    /** Tensor {@code d} under its GGUF {@code name}, in the type the converter gives it for {@code outtype}. */
    static PlannedTensor typed(DenseTensor d, String name, Optional<Long> heads, Optional<Architecture.Shift> shift,
                                       String outtype, ExportRequest.Encoder encoder) {
        boolean f32 = d.shape().rank() <= 1 || name.endsWith("_norm.weight") || !name.endsWith(".weight") || KEPT_F32.matcher(name).matches();
        if (f32 || outtype.equals("f32")) return ConvertedTensor.values(d, name, heads, shift);
        if (outtype.equals("q8_0")) {
            // gguf-py raises QuantError for a row that is not whole blocks; the converter then writes F16
            if (d.shape().lastDim() % 32 != 0) return ConvertedTensor.converted(d, name, heads, DType.F16, shift);
            DenseTensor dense = ConvertedTensor.dense(d, name, heads, shift);
            if (d.shape().rank() == 2 && d.shape().dim(0) == 1) {
                // gguf-py quantizes a one-row matrix (a reranker's cls.output of one label) where ggml counts it 1-D and
                // llama-quantize's rules keep it: its Q8_0 bytes are the first row's of that row twice, which they quantize
                PlannedTensor q = encoder.encode(ConvertedTensor.rowTwice(dense), "ggml:q8_0");
                return new PlannedTensor(q.name(), q.dtype(), d.shape(), q.granule(), q.producer());
            }
            return encoder.encode(dense, "ggml:q8_0");
        }
        return ConvertedTensor.converted(d, name, heads, outtype.equals("f16") ? DType.F16 : DType.BF16, shift);
    }

    /**
     * Stacked experts in the type the converter gives a 3-D weight for {@code outtype}: the
     * output type, F16 for Q8_0 rows that are not whole blocks.
     */
    private static PlannedTensor typedStack(List<DenseTensor> experts, String name, String outtype, ExportRequest.Encoder encoder) {
        return switch (outtype) {
            case "f32" -> ConvertedTensor.stacked(experts, name, DType.F32);
            case "f16" -> ConvertedTensor.stacked(experts, name, DType.F16);
            case "bf16" -> ConvertedTensor.stacked(experts, name, DType.BF16);
            case "q8_0" -> experts.getFirst().shape().lastDim() % 32 != 0 ? ConvertedTensor.stacked(experts, name, DType.F16)
                    : encoder.encode(ConvertedTensor.dense(ConvertedTensor.stacked(experts, name, DType.F32)), "ggml:q8_0");
            default -> throw new IllegalStateException(outtype);
        };
    }

    private static void requireFloats(DenseTensor d) {
        if (!d.isNumeric()) {
            throw UnsupportedFeatureException.inTensor(d.name(), "holds " + d.storedDType() + ", not floats; "
                    + "the converter writes float tensors only");
        }
    }

    /**
     * gguf-py's size label: {@code <experts>x<shared + one expert's parameters>} when the file
     * has stacked experts ({@code _exps.} tensors of three dimensions), else the total
     * ({@code get_total_parameter_count}, {@code size_label}); null without parameters.
     */
    static String sizeLabel(List<PlannedTensor> tensors) {
        long total = 0, shared = 0, expert = 0, expertSum = 0, stacksSeen = 0;
        for (PlannedTensor t : tensors) {
            long size = t.elementCount();
            total += size;
            if (t.name().contains("_exps.") && t.shape().rank() >= 3) {
                long n = t.shape().dim(t.name().contains(".bias") ? t.shape().rank() - 2 : t.shape().rank() - 3);
                expert += n == 0 ? 0 : size / n;
                expertSum += n;
                stacksSeen++;
            } else {
                shared += size;
            }
        }
        long experts = stacksSeen > 0 ? expertSum / stacksSeen : 0;
        if (experts > 0) return experts + "x" + ModelNaming.sizeLabel(shared + expert);
        return total > 0 ? ModelNaming.sizeLabel(total) : null;
    }

    private static Architecture architecture(Map<?, ?> config) {
        // get_model_architecture: a text_config's own architectures, when it names them, win
        Object list = config.get("text_config") instanceof Map<?, ?> text && text.get("architectures") instanceof List<?> l
                && !l.isEmpty() ? l : config.get("architectures");
        if (!(list instanceof List<?> l) || l.isEmpty() || !(l.getFirst() instanceof String name)) {
            throw new MalformedFileException("config.json has no architectures (the model class, e.g. LlamaForCausalLM)");
        }
        return Architectures.byHfName(name).orElseThrow(() -> new UnsupportedFeatureException("architecture " + name
                + " (config.json) is not supported; supported: " + String.join(", ", Architectures.supportedNames())));
    }

    /**
     * The converter's tensor order: the weight files in name order (gguf-py's
     * {@code SafetensorsLocal}, the files of the index when there is one), each file's tensors
     * sorted by name. The model's files are those the folder opened as ({@link ShardedArchive}).
     */
    private static List<String> converterOrder(TensorArchive source) {
        Map<String, String> part = new HashMap<>();
        if (source instanceof ShardedArchive model) {
            for (ShardedArchive.Shard s : model.shards()) {
                String file = String.valueOf(s.file().getFileName());
                for (TensorEntry e : s.archive().tensors()) part.put(e.name(), file);
            }
        }
        List<String> names = new ArrayList<>();
        for (TensorEntry e : source.tensors()) names.add(e.name());
        names.sort(Comparator.comparing((String n) -> part.getOrDefault(n, "")).thenComparing(Comparator.naturalOrder()));
        return names;
    }

    /** {@code --outtype auto}: the first stored tensor of two or more dimensions that is BF16 or F16 decides. */
    private static String auto(TensorArchive source, List<String> order) {
        Map<String, TensorEntry> byName = new HashMap<>();
        for (TensorEntry e : source.tensors()) byName.putIfAbsent(e.name(), e);
        for (String n : order) {
            TensorEntry e = byName.get(n);
            if (e.shape().rank() < 2) continue;
            if (e.dtype().equals(DType.BF16)) return "bf16";
            if (e.dtype().equals(DType.F16)) return "f16";
        }
        return "f16";
    }

    private static UnsupportedFeatureException unmapped(String name, long blockCount, Architecture arch) {
        Matcher m = LAYER.matcher(name);
        if (m.find() && m.group(1).length() < 10 && Long.parseLong(m.group(1)) >= blockCount) {
            throw MalformedFileException.inTensor(name, "config.json num_hidden_layers is " + blockCount
                    + ", but the model has a tensor of layer " + m.group(1));
        }
        return UnsupportedFeatureException.inTensor(name, "has no " + arch.gguf() + " GGUF name (the converter cannot map it)");
    }

    /** The generation config's sampling settings ({@code Metadata.load}), when the file reads as JSON. */
    private static void sampling(ModelFiles files, Map<String, MetaValue> kv) {
        Map<?, ?> g;
        try {
            g = files.json("generation_config.json").orElse(Map.of());
        } catch (MalformedFileException unreadable) {
            return; // gguf-py ignores a generation_config.json it cannot parse
        }
        if (g.get("sequence") instanceof String s && !s.isEmpty()) kv.put("general.sampling.sequence", MetaValue.str(s));
        int32(g, "top_k", "general.sampling.top_k", kv);
        float32(g, "top_p", "general.sampling.top_p", kv);
        float32(g, "min_p", "general.sampling.min_p", kv);
        float32(g, "xtc_probability", "general.sampling.xtc_probability", kv);
        float32(g, "xtc_threshold", "general.sampling.xtc_threshold", kv);
        float32(g, "temperature", "general.sampling.temp", kv);
        int32(g, "penalty_last_n", "general.sampling.penalty_last_n", kv);
        float32(g, "penalty_repeat", "general.sampling.penalty_repeat", kv);
        int32(g, "mirostat", "general.sampling.mirostat", kv);
        float32(g, "mirostat_tau", "general.sampling.mirostat_tau", kv);
        float32(g, "mirostat_eta", "general.sampling.mirostat_eta", kv);
    }

    private static void int32(Map<?, ?> g, String from, String key, Map<String, MetaValue> kv) {
        HfConfig.asInteger(g.get(from)).filter(v -> v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE)
                .ifPresent(v -> kv.put(key, MetaValue.i32(v)));
    }

    private static void float32(Map<?, ?> g, String from, String key, Map<String, MetaValue> kv) {
        HfConfig.number(g.get(from)).ifPresent(v -> kv.put(key, MetaValue.Real.f32(v.floatValue())));
    }

    private static void putString(Map<String, MetaValue> kv, String key, String value) {
        if (value != null && !value.isEmpty()) kv.put(key, MetaValue.str(value));
    }

    /**
     * The family's {@link Architecture#requiredConfig}: each present (a rope key may be in
     * {@code rope_parameters}/{@code rope_scaling}), else malformed naming it.
     */
    private static void requireConfig(Architecture arch, Map<?, ?> config) {
        for (String key : arch.requiredConfig()) {
            boolean present = HfConfig.find(config, List.of(key)).filter(v -> v != io.anamnesis.api.json.Json.NULL).isPresent()
                    || ropeParameters(arch, config).get(key) != null;
            if (!present) {
                throw badKey(key, "is missing; " + arch.hfNames().getFirst() + " needs it (the converter would take "
                        + "transformers' default for the model class, which amn does not guess)");
            }
        }
    }

    /** The family's {@link Architecture#refused} variants, recognized by name as the converter does. */
    private static void refuseVariants(Architecture arch, ModelFiles files, Map<?, ?> config, String folder) {
        if (arch.refused().isEmpty()) return;
        List<String> hints = new ArrayList<>();
        hints.add(folder);
        for (String k : List.of("_name_or_path", "model_type")) {
            if (config.get(k) instanceof String v) hints.add(v);
        }
        String readme = files.bytes("README.md").map(b -> new String(b, java.nio.charset.StandardCharsets.UTF_8)).orElse("")
                .toLowerCase(java.util.Locale.ROOT);
        for (Architecture.Variant v : arch.refused()) {
            boolean named = hints.stream().anyMatch(h -> h.toLowerCase(java.util.Locale.ROOT).contains(v.hint()));
            if (named || readme.contains("# " + v.hint())) {
                throw new UnsupportedFeatureException("the model is named as " + v.hint() + " (folder name, config.json or "
                        + "README.md): the converter writes it as " + v.what() + ", which is not converted yet");
            }
        }
    }

    /** {@code TextModel.set_gguf_parameters} and the family's own keys, in the converter's order. */
    private static void hyperParameters(Architecture arch, ModelFiles files, Map<?, ?> config, long blockCount, int fileType,
                                        Map<String, MetaValue> kv) {
        if (!arch.textModelKeys()) {
            ownParameters(arch, config, blockCount, fileType, kv);
            return;
        }
        String a = arch.gguf();
        // DistilBertModel.set_gguf_parameters writes BERT's epsilon before TextModel's keys (config.json has none)
        if (arch == Architectures.DISTILBERT) kv.put(a + ".attention.layer_norm_epsilon", MetaValue.Real.f32(1e-12f));
        kv.put(Architectures.BLOCK_COUNT.key(a), MetaValue.u32(blockCount));
        for (HyperParameter h : Architectures.COMMON) put(a, config, h, kv);
        // DeepseekV2Model.set_gguf_parameters: the absorbed latent attention is one key/value head
        if (arch.extras().latentAttention().isPresent()) kv.put(a + ".attention.head_count_kv", MetaValue.u32(1));
        arch.extras().convLayers().ifPresent(c -> kv.put(a + ".attention.head_count_kv", kvHeadsPerLayer(c, config, blockCount)));
        if (Boolean.FALSE.equals(config.get("is_causal"))) kv.put(a + ".attention.causal", new MetaValue.Bool(false));
        Map<?, ?> rope = ropeParameters(arch, config);
        Object type = rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type");
        if (type != null) {
            if (type.equals("linear") && HfConfig.number(rope.get("factor")).isPresent()) {
                kv.put(a + ".rope.scaling.type", MetaValue.str("linear"));
                kv.put(a + ".rope.scaling.factor", MetaValue.Real.f32(HfConfig.number(rope.get("factor")).get().floatValue()));
            } else if (RopeFreqs.isLlama3(type)) {
                // no key: LlamaModel.generate_extra_tensors writes rope_freqs.weight; other families drop the
                // scaling, and granite (a LlamaModel without a rope_freqs tensor in gguf-py) stops on it
                if (!arch.llama3Rope()) {
                    throw new UnsupportedFeatureException("config.json rope scaling type " + type + " on " + arch.gguf()
                            + ": the converter writes it as a rope_freqs tensor for llama and smollm3 only, and drops it or "
                            + "stops on it here");
                }
            } else if (Yarn.isYarn(type)) {
                Yarn.keys(a, rope, config.containsKey("rope_parameters") ? "rope_parameters" : "rope_scaling", ministral3(arch, config), kv);
            } else if (type.equals("dynamic") && arch == Architectures.INTERNLM2) {
                // no key: TextModel leaves dynamic NTK scaling to the model class, and InternLM2Model writes none (noted)
            } else if (type.equals("mrope") && isOneOf(arch, mropeFamilies())) {
                // no key: TextModel warns of an unknown type; the sections below are what llama.cpp reads
            } else if (!type.equals("default") && !type.equals("linear")) {
                throw new UnsupportedFeatureException("config.json rope scaling type " + type + " is not converted yet "
                        + "(linear, yarn, llama3 (llama) and none are)");
            }
        }
        if (rope.containsKey("mrope_section") && isOneOf(arch, mropeFamilies())) {
            kv.put(a + ".rope.dimension_sections", mropeSections(rope.get("mrope_section"), config));
        } else if (config.containsKey("mrope_section") || rope.containsKey("mrope_section")) {
            throw new UnsupportedFeatureException("config.json mrope_section is not converted yet for " + arch.gguf()
                    + " (it is for " + String.join(", ", mropeFamilies().stream().map(Architecture::gguf).sorted().distinct().toList()) + ")");
        } else if (isOneOf(arch, mropeRequired())) {
            // llama.cpp's qwen3vl and qwen3vlmoe read rope.dimension_sections as required: without them the file
            // would not load (the converter writes it anyway)
            throw badKey("rope_scaling", "has no mrope_section: llama.cpp's " + a + " needs the M-RoPE sections "
                    + "(rope.dimension_sections) to load the model");
        }
        ropeTheta(config, rope).flatMap(HfConfig::number).ifPresent(t -> kv.put(a + ".rope.freq_base", MetaValue.Real.f32(t.floatValue())));
        if (arch.extras().slidingWindow().isPresent()) {
            localRopeTheta(arch.extras().slidingWindow().get(), config).ifPresent(t -> kv.put(a + ".rope.freq_base_swa",
                    MetaValue.Real.f32(HfConfig.number(t).orElseThrow(() -> badKey("rope_local_base_freq", "is not a number: " + t))
                            .floatValue())));
        }
        put(a, config, Architectures.RMS_EPS, kv);
        put(a, config, Architectures.NORM_EPS, kv);
        expertKeys(arch, config, kv);
        Optional<Long> headDim = HfConfig.integer(config, "head_dim");
        headDim.ifPresent(h -> {
            kv.put(a + ".attention.key_length", MetaValue.u32(h));
            kv.put(a + ".attention.value_length", MetaValue.u32(h));
        });
        kv.put("general.file_type", MetaValue.u32(fileType));
        familyKeys(arch, files, config, headDim, blockCount, fileType, kv);
    }

    /**
     * LFM2's {@code attention.head_count_kv}: one int32 per layer of {@code layer_types}, 0 for a
     * convolution layer, {@code num_key_value_heads} for the others (the converter's list, which
     * gguf-py writes as an int32 array).
     */
    private static MetaValue kvHeadsPerLayer(Architecture.ConvLayers c, Map<?, ?> config, long blockCount) {
        long kvHeads = HfConfig.integer(config, "num_key_value_heads").filter(v -> v > 0 && v <= Integer.MAX_VALUE)
                .orElseThrow(() -> badKey("num_key_value_heads", "is missing or not a positive int32"));
        if (!(config.get("layer_types") instanceof List<?> types) || types.size() != blockCount) {
            throw badKey("layer_types", "is not a list of num_hidden_layers (" + blockCount + ") layer types");
        }
        List<MetaValue> perLayer = new ArrayList<>();
        for (Object t : types) perLayer.add(MetaValue.i32(c.convType().equals(t) ? 0 : kvHeads));
        return new MetaValue.Array(MetaValue.Type.I32, perLayer);
    }

    /**
     * {@code d} transposed when it is one of the family's weights stored {@code [in, out]} (GPT-2's {@code Conv1D}:
     * {@code GPT2Model.modify_tensors} transposes {@code c_attn}, {@code c_proj} and {@code c_fc}), or as it is; the
     * input width checked against config.json first ({@code n_embd}, or 4 x it for the MLP's {@code c_proj}).
     */
    private static DenseTensor transposed(Architecture arch, Map<?, ?> config, DenseTensor d) {
        if (arch.extras().transposed().stream().noneMatch(d.name()::endsWith)) return d;
        requireFloats(d);
        String hiddenKey = config.containsKey("n_embd") ? "n_embd" : "hidden_size";
        long hidden = HfConfig.integer(config, hiddenKey).orElseThrow(() -> badKey(hiddenKey, "is missing"));
        boolean down = d.name().endsWith("mlp.c_proj.weight");
        long in = down ? 4 * hidden : hidden;
        if (d.shape().rank() != 2 || d.shape().dim(0) != in) {
            throw MalformedFileException.inTensor(d.name(), "has shape " + d.shape() + ", but config.json's " + hiddenKey + " " + hidden
                    + " makes a Conv1D weight [in, out] of " + in + " rows" + (down ? " (4 x " + hiddenKey + ")" : ""));
        }
        return PackedExpertTensors.transposed(d, d.name(), 1, 0);
    }

    /**
     * {@code d} re-laid when it is one of the family's grouped fused q/k/v ({@link Architecture.Extras#groupedQkv}),
     * or as it is. Falcon's ({@code FalconModel.modify_tensors}): stored as {@code num_kv_heads} groups, each its
     * queries then one key and one value head ({@code [kv, heads / kv + 2, head_dim]} rows), written as every query,
     * then every key, then every value ({@link QkvRows#grouped}); {@code num_kv_heads} ({@code n_head_kv}) is 1 when
     * config.json has neither, as the converter reads it.
     */
    private static DenseTensor groupedQkv(Architecture arch, Map<?, ?> config, DenseTensor d) {
        if (arch.extras().groupedQkv().stream().noneMatch(d.name()::endsWith)) return d;
        requireFloats(d);
        String headsKey = config.containsKey("num_attention_heads") || !config.containsKey("n_head") ? "num_attention_heads" : "n_head";
        long heads = HfConfig.integer(config, headsKey).orElseThrow(() -> badKey(headsKey, "is missing"));
        String kvKey = config.containsKey("num_kv_heads") || !config.containsKey("n_head_kv") ? "num_kv_heads" : "n_head_kv";
        long kv = HfConfig.integer(config, kvKey).orElse(1L);
        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
        if (kv <= 0 || heads <= 0 || heads % kv != 0 || hidden % heads != 0) {
            throw badKey(kvKey, "is " + kv + " with " + headsKey + " " + heads + " and hidden_size " + hidden
                    + ": not whole groups of query heads of a whole head size");
        }
        return QkvRows.grouped(d, heads, kv, hidden, headsKey, kvKey);
    }

    /** {@code d} with its rows in three blocks when it is one of the family's per-head fused q/k/v ({@code GPTNeoXModel}'s), or as it is. */
    private static DenseTensor perHeadQkv(Architecture arch, Map<?, ?> config, DenseTensor d) {
        if (arch.extras().perHeadQkv().stream().noneMatch(d.name()::endsWith)) return d;
        requireFloats(d);
        // GPT-NeoX's keys, or BLOOM's (n_head; n_embed in older configs)
        String headsKey = config.containsKey("num_attention_heads") || !config.containsKey("n_head") ? "num_attention_heads" : "n_head";
        String hiddenKey = config.containsKey("hidden_size") || !config.containsKey("n_embed") ? "hidden_size" : "n_embed";
        long heads = HfConfig.integer(config, headsKey).orElseThrow(() -> badKey(headsKey, "is missing"));
        long hidden = HfConfig.integer(config, hiddenKey).orElseThrow(() -> badKey(hiddenKey, "is missing"));
        return QkvRows.blocks(d, heads, hidden, headsKey, hiddenKey);
    }

    /** {@code d} under the name the family's {@link Architecture.Extras#suffixRenames} give it, or as it is. */
    private static DenseTensor suffixRenamed(Architecture arch, DenseTensor d) {
        for (var r : arch.extras().suffixRenames().entrySet()) {
            if (d.name().endsWith(r.getKey())) {
                return renamed(d, d.name().substring(0, d.name().length() - r.getKey().length()) + r.getValue());
            }
        }
        return d;
    }

    /** Whether the folder is a Ministral 3 ({@code Ministral3Model} checks the text config's {@code model_type}). */
    private static boolean ministral3(Architecture arch, Map<?, ?> config) {
        return arch == Architectures.MISTRAL3 && "ministral3".equals(config.get("model_type"));
    }

    // Methods, not static sets: a set hashes each family's whole table (the record's generated
    // hashCode over every component, whose method handles the AOT cache does not keep: 70 ms of
    // every run), and a static field naming a family would build every family's table in this
    // class's initializer, which every command runs when the providers are loaded (an inspect
    // needs none of them).

    /** The families whose rope parameters may carry M-RoPE sections ({@code mrope_section}), written as TextModel writes them. */
    private static List<Architecture> mropeFamilies() {
        return List.of(Architectures.QWEN2VL, Architectures.QWEN3VL, Architectures.QWEN3VLMOE);
    }

    /** The families llama.cpp loads only with M-RoPE sections. */
    private static List<Architecture> mropeRequired() {
        return List.of(Architectures.QWEN3VL, Architectures.QWEN3VLMOE);
    }

    private static boolean isOneOf(Architecture arch, List<Architecture> families) {
        for (Architecture a : families) {
            if (a == arch) return true;
        }
        return false;
    }

    /**
     * {@code <arch>.rope.dimension_sections}: {@code mrope_section} padded with zeros to four
     * int32s (time, height, width, extra; {@code add_rope_dimension_sections}, which writes the
     * first four); they must add up to half the rotary width, as llama.cpp's M-RoPE takes them.
     */
    private static MetaValue mropeSections(Object sections, Map<?, ?> config) {
        if (!(sections instanceof List<?> list) || list.isEmpty()) throw badKey("mrope_section", "is not a list of section widths: " + sections);
        List<MetaValue> out = new ArrayList<>();
        long sum = 0;
        for (Object v : list) {
            long w = HfConfig.asInteger(v).filter(x -> x >= 0 && x <= Integer.MAX_VALUE)
                    .orElseThrow(() -> badKey("mrope_section", "holds " + v + ", not a width"));
            if (out.size() < 4) {
                out.add(MetaValue.i32(w));
                sum += w;
            }
        }
        while (out.size() < 4) out.add(MetaValue.i32(0));
        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
        long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
        long headDim = HfConfig.integer(config, "head_dim").orElse(hidden / heads);
        if (2 * sum != headDim) {
            throw badKey("mrope_section", "adds up to " + sum + ", not half of the head (" + headDim + "): llama.cpp's M-RoPE "
                    + "would rotate another share of it");
        }
        return new MetaValue.Array(MetaValue.Type.I32, out);
    }

    /**
     * The local layers' rope base: the rope parameters' {@code sliding_attention} part's
     * {@code rope_theta}, else the first of the family's local rope keys
     * ({@code TextModel.__init__} puts the latter into the former).
     */
    private static Optional<Object> localRopeTheta(Architecture.SlidingWindow w, Map<?, ?> config) {
        Object r = config.containsKey("rope_parameters") ? config.get("rope_parameters") : config.get("rope_scaling");
        if (r instanceof Map<?, ?> m && m.get("sliding_attention") instanceof Map<?, ?> local && local.get("rope_theta") != null) {
            return Optional.of(local.get("rope_theta"));
        }
        return HfConfig.find(config, w.localTheta()).filter(v -> v != io.anamnesis.api.json.Json.NULL);
    }

    /**
     * TextModel's expert keys: {@code expert_count} and {@code expert_used_count}, both
     * {@code add_uint32}, each when config.json has it. A family without
     * {@link Architecture#experts} refuses a count (the converter would write the experts
     * unstacked, or not at all); the expert-group and gating-function keys are refused (not
     * checked against llama.cpp).
     */
    private static void expertKeys(Architecture arch, Map<?, ?> config, Map<String, MetaValue> kv) {
        String a = arch.gguf();
        if (arch.experts().map(Architecture.Experts::grouped).orElse(false)) {
            groupedExpertKeys(a, config, kv);
            return;
        }
        if (!counted(config)) return;
        for (String k : List.of("n_group", "topk_group", "score_function", "scoring_func", "score_func", "moe_router_activation",
                "moe_router_activation_func")) {
            if (config.get(k) != null && config.get(k) != io.anamnesis.api.json.Json.NULL) {
                throw new UnsupportedFeatureException("config.json " + k + " (expert groups or gating function) is not converted yet");
            }
        }
        put(a, config, EXPERT_COUNT, kv);
        put(a, config, EXPERT_USED_COUNT, kv);
    }

    /**
     * TextModel's expert keys as DeepSeek's configs give them: the used count, the expert groups
     * and the gating function (llama.cpp's deepseek2 reads all three). Its graph selects groups
     * by the sum of each group's two best biased scores, DeepSeek-V3's {@code noaux_tc}; V2's
     * {@code group_limited_greedy} takes each group's best score, so with more than one group it
     * would run as another model (exit 6).
     */
    private static void groupedExpertKeys(String a, Map<?, ?> config, Map<String, MetaValue> kv) {
        put(a, config, EXPERT_COUNT, kv);
        put(a, config, EXPERT_USED_COUNT, kv);
        put(a, config, HyperParameter.u32("{arch}.expert_group_count", "n_group"), kv);
        put(a, config, HyperParameter.u32("{arch}.expert_group_used_count", "topk_group"), kv);
        long groups = HfConfig.integer(config, "n_group").orElse(1L);
        Object method = config.get("topk_method");
        if (groups > 1 && method != null && !"noaux_tc".equals(method)) {
            throw new UnsupportedFeatureException("config.json topk_method is " + method + " with n_group " + groups + ": llama.cpp's "
                    + a + " chooses expert groups by the sum of each group's two best scores (noaux_tc, DeepSeek-V3's), and would run "
                    + "this model's routing as another; not converted");
        }
        Optional<Object> gating = HfConfig.find(config, List.of("score_function", "scoring_func", "score_func", "moe_router_activation",
                "moe_router_activation_func")).filter(x -> x != io.anamnesis.api.json.Json.NULL);
        if (gating.isPresent()) {
            Object g = gating.get();
            long type = "sigmoid".equals(g) ? 2 : "softmax".equals(g) ? 1 : -1;
            if (type < 0) throw badKey("scoring_func", "is " + g + ", not softmax or sigmoid (the gating functions the converter writes)");
            kv.put(a + ".expert_gating_func", MetaValue.u32(type));
        }
    }

    private static boolean counted(Map<?, ?> config) {
        return HfConfig.find(config, EXPERT_COUNT.hfKeys()).filter(v -> v != io.anamnesis.api.json.Json.NULL).isPresent();
    }

    /** An expert count in a family without {@link Architecture#experts}: its experts would not be stacked. */
    private static void refuseUnstackedExperts(Architecture arch, Map<?, ?> config) {
        if (counted(config) && arch.experts().isEmpty() && arch.extras().packedExperts().isEmpty()
                && arch.extras().rowHalves().stream().noneMatch(h -> h.experts().isPresent())) {
            throw new UnsupportedFeatureException("mixture-of-experts " + arch.hfNames().getFirst() + " models are not converted "
                    + "yet (experts: " + String.join(", ", Architectures.ALL.stream().filter(x -> x.experts().isPresent())
                    .flatMap(x -> x.hfNames().stream()).toList()) + ")");
        }
    }

    private static final HyperParameter EXPERT_COUNT = HyperParameter.u32("{arch}.expert_count", "num_local_experts", "num_experts");
    private static final HyperParameter EXPERT_USED_COUNT =
            HyperParameter.u32("{arch}.expert_used_count", "num_experts_per_tok", "num_experts_per_token", "top_k_experts");

    /**
     * gguf-py maps a decoder's tensors saved without the {@code model.} prefix (from the base model class, as
     * Qwen3-Embedding's checkpoints are) as it maps the prefixed ones: {@code embed_tokens}, {@code norm} and each
     * block's {@code layers.N.} norms, attention and MLP projections and q/k norms. Such a name is taken as its
     * {@code model.} form when the family maps that form.
     */
    private static String underModel(Architecture arch, String name, long blockCount) {
        if (!BARE_DECODER_NAME.matcher(name).matches()) return name;
        String prefixed = "model." + name;
        return arch.map(prefixed, (int) blockCount).isPresent() ? prefixed : name;
    }

    private static final Pattern BARE_DECODER_NAME = Pattern.compile("(embed_tokens|norm|layers\\.\\d+\\.(input_layernorm|post_attention_layernorm"
            + "|pre_feedforward_layernorm|post_feedforward_layernorm"
            + "|self_attn\\.(q_proj|k_proj|v_proj|o_proj|q_norm|k_norm)|mlp\\.(up_proj|gate_proj|down_proj)))\\.(weight|bias)");

    /** A config.json number the family's keys are computed from: missing or not a number is exit 3. */
    private static double requiredNumber(Map<?, ?> config, String key) {
        Object v = config.get(key);
        return HfConfig.number(v).filter(x -> Double.isFinite(x.doubleValue())).map(Number::doubleValue)
                .orElseThrow(() -> badKey(key, v == null ? "is missing" : "is not a finite number: " + v));
    }

    /**
     * The head size of the families whose rope dimension count the converter computes from hidden / heads, and whose
     * llama.cpp graph takes the head size to be that: EXAONE 3 (llama.cpp's exaone asserts it) and Nemotron (its q and
     * output projections loaded as hidden x hidden). A {@code head_dim} apart from hidden / heads (Minitron-8B's) is a
     * model llama.cpp would not run.
     */
    private static void expectWholeHeadRope(Architecture arch, Map<?, ?> config) {
        Optional<Long> headDim = HfConfig.integer(config, "head_dim");
        if (headDim.isEmpty()) return;
        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
        long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
        if (headDim.get() != hidden / heads) {
            throw new UnsupportedFeatureException("config.json head_dim is " + headDim.get() + ", not hidden_size / "
                    + "num_attention_heads (" + hidden / heads + "): llama.cpp's " + arch.gguf() + " takes heads of hidden / "
                    + "heads; not converted");
        }
    }

    /** MPT's nested {@code attn_config}, which the converter reads (exit 3 without it). */
    private static Map<?, ?> mptAttentionConfig(Map<?, ?> config) {
        if (config.get("attn_config") instanceof Map<?, ?> m) return m;
        throw badKey("attn_config", "is missing or not an object (mpt's attention settings, which the converter reads)");
    }

    /**
     * What llama.cpp's mpt computes, checked against config.json: ALiBi (no rotary or learned positions), multi-head,
     * grouped-query or multi-query attention without q/k LayerNorms at the default scale, no biases, LayerNorms, the
     * GELU MLP, no logit scale. Each other setting is a model llama.cpp's mpt would run as another: exit 6 naming it.
     */
    private static void expectMpt(Map<?, ?> config) {
        Map<?, ?> attn = mptAttentionConfig(config);
        java.util.function.BiConsumer<String, String> refuse = (key, why) -> {
            throw new UnsupportedFeatureException("config.json " + key + ": " + why + "; not converted");
        };
        if (!Boolean.TRUE.equals(attn.get("alibi"))) refuse.accept("attn_config.alibi", "is not true (llama.cpp's mpt computes ALiBi)");
        if (Boolean.TRUE.equals(attn.get("qk_ln")) || Boolean.TRUE.equals(attn.get("qk_gn"))) {
            refuse.accept("attn_config.qk_ln", "q/k LayerNorms are not converted for mpt");
        }
        Object type = attn.get("attn_type");
        if (type != null && !List.of("multihead_attention", "grouped_query_attention", "multiquery_attention").contains(type)) {
            refuse.accept("attn_config.attn_type", "is " + type);
        }
        Object scale = attn.get("softmax_scale");
        if (scale != null && scale != io.anamnesis.api.json.Json.NULL) refuse.accept("attn_config.softmax_scale", "is set (llama.cpp's "
                + "mpt scales by 1 / sqrt(head size))");
        if (Boolean.TRUE.equals(attn.get("prefix_lm"))) refuse.accept("attn_config.prefix_lm", "is true (llama.cpp's mpt is causal)");
        if (!Boolean.TRUE.equals(config.get("no_bias"))) refuse.accept("no_bias", "is not true (biases are not converted for mpt)");
        if (!Boolean.FALSE.equals(config.get("learned_pos_emb"))) {
            refuse.accept("learned_pos_emb", "is not false (MPT's default is true: learned positions are not converted for mpt)");
        }
        Object logitScale = config.get("logit_scale");
        if (logitScale != null && logitScale != io.anamnesis.api.json.Json.NULL) refuse.accept("logit_scale", "is set");
        Object norm = config.get("norm_type");
        if (norm != null && !List.of("low_precision_layernorm", "layernorm").contains(norm)) refuse.accept("norm_type", "is " + norm);
        if (config.get("ffn_config") instanceof Map<?, ?> ffn) {
            Object ffnType = ffn.get("ffn_type");
            if (ffnType != null && !"mptmlp".equals(ffnType)) refuse.accept("ffn_config.ffn_type", "is " + ffnType);
            if (ffn.get("ffn_act_fn") != null && ffn.get("ffn_act_fn") != io.anamnesis.api.json.Json.NULL) {
                refuse.accept("ffn_config.ffn_act_fn", "is set (llama.cpp's mpt computes GELU)");
            }
        }
    }

    /** The family's experts' {@link Architecture.ConfigValue}s: each value as llama.cpp's graph assumes it, else refused naming it. */
    private static void expectConfig(Architecture arch, List<Architecture.ConfigValue> values, Map<?, ?> config) {
        for (Architecture.ConfigValue c : values) {
            Object v = config.get(c.key());
            if (v == null || v == io.anamnesis.api.json.Json.NULL) {
                if (c.required()) throw badKey(c.key(), "is missing; " + arch.hfNames().getFirst() + " needs it " + c.value()
                        + ": " + c.why());
                continue;
            }
            boolean same = switch (c.value()) {
                case Boolean b -> b.equals(v);
                case Long n -> HfConfig.asInteger(v).filter(n::equals).isPresent();
                case Double x -> HfConfig.number(v).filter(y -> y.doubleValue() == x).isPresent();
                case List<?> l -> v instanceof List<?> got && got.equals(l);
                case String text -> text.equals(v);
                default -> throw new IllegalStateException(c.toString());
            };
            if (!same) {
                throw new UnsupportedFeatureException("config.json " + c.key() + " is " + v + ", not " + c.value() + ": "
                        + c.why() + "; not converted");
            }
        }
    }

    /** The family's {@link Architecture#extraKeys}, in its order. */
    private static void familyKeys(Architecture arch, ModelFiles files, Map<?, ?> config, Optional<Long> headDim,
                                   long blockCount, int fileType, Map<String, MetaValue> kv) {
        String a = arch.gguf();
        for (Architecture.FamilyKey k : arch.extraKeys()) {
            switch (k) {
                case HyperParameter h -> put(a, config, h, kv);
                case Architecture.RopeDimensionCount r -> {
                    long ropeDim = headDim.orElseGet(() -> {
                        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                        long heads = HfConfig.integer(config, "num_attention_heads")
                                .orElseThrow(() -> badKey("num_attention_heads", "is missing"));
                        if (heads <= 0) throw badKey("num_attention_heads", heads + " is not positive");
                        return hidden / heads;
                    });
                    kv.put(a + ".rope.dimension_count", MetaValue.u32(ropeDim));
                }
                case Architecture.PoolingType p -> poolingType(files).ifPresent(t -> kv.put(a + ".pooling_type", MetaValue.u32(t)));
                case Architecture.OwnKey o -> ownKey(arch, o, config, blockCount, fileType, kv);
            }
        }
    }

    /**
     * The keys of a family with its own {@code set_gguf_parameters} (gemma's, gemma2's, phi3's), all in
     * {@link Architecture#extraKeys}, in its order. Phi3's longrope/su {@code rope_scaling} is
     * {@link LongRope}'s (tensors and key written apart from these); any other scaling, or one
     * in {@code rope_parameters} (which the converter does not read for phi3), is refused.
     */
    private static void ownParameters(Architecture arch, Map<?, ?> config, long blockCount, int fileType,
                                      Map<String, MetaValue> kv) {
        String a = arch.gguf();
        Map<?, ?> rope = ropeParameters(arch, config);
        Object scaling = config.get("rope_scaling");
        Object type = rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type");
        boolean longRope = arch == Architectures.PHI3 && LongRope.declared(config);
        if (!longRope && ((scaling != null && scaling != io.anamnesis.api.json.Json.NULL) || (type != null && !type.equals("default")))) {
            String named = type == null ? "without a type" : "type " + type;
            throw new UnsupportedFeatureException("config.json rope scaling " + named + " on " + a + " is not converted yet"
                    + (a.equals("phi3") ? (config.containsKey("rope_parameters") ? " (in rope_parameters, which the converter "
                    + "does not read for phi3: it would drop the scaling)" : "") + "; a Phi-3 with a longrope/su rope_scaling "
                    + "(128k) or none (4k) is" : ""));
        }
        if (config.containsKey("rope_parameters") && rope.containsKey("mrope_section")) {
            throw new UnsupportedFeatureException("config.json mrope_section is not converted yet");
        }
        for (Architecture.FamilyKey k : arch.extraKeys()) {
            switch (k) {
                case HyperParameter h -> put(a, config, h, kv);
                case Architecture.OwnKey o -> ownKey(arch, o, config, blockCount, fileType, kv);
                case Architecture.RopeDimensionCount r -> throw new IllegalStateException("rope dimension count of " + a);
                case Architecture.PoolingType p -> throw new IllegalStateException("pooling type of " + a);
            }
        }
    }

    /** One of the keys a family writes itself ({@link Architecture.OwnKey}). */
    private static void ownKey(Architecture arch, Architecture.OwnKey o, Map<?, ?> config, long blockCount, int fileType,
                               Map<String, MetaValue> kv) {
        String a = arch.gguf();
        switch (o) {
            case BLOCK_COUNT -> kv.put(Architectures.BLOCK_COUNT.key(a), MetaValue.u32(blockCount));
            case ROPE_FREQ_BASE -> kv.put(a + ".rope.freq_base", MetaValue.Real.f32(ropeTheta(config, ropeParameters(arch, config))
                    .flatMap(HfConfig::number).orElseThrow(() -> badKey("rope_theta", "is missing or not a number"))
                    .floatValue()));
            case FILE_TYPE -> kv.put("general.file_type", MetaValue.u32(fileType));
            case PARTIAL_ROPE_DIMENSION_COUNT -> kv.put(a + ".rope.dimension_count", MetaValue.u32(partialRopeDims(config)));
            case SLIDING_WINDOW -> {
                Object w = config.get("sliding_window");
                long window = w == null || w == io.anamnesis.api.json.Json.NULL ? 0 : HfConfig.asInteger(w)
                        .filter(v -> v >= 0 && v <= 0xFFFF_FFFFL)
                        .orElseThrow(() -> badKey("sliding_window", "is not a GGUF uint32: " + w));
                kv.put(a + ".attention.sliding_window", MetaValue.u32(window));
            }
            case FINAL_LOGIT_SOFTCAPPING -> {
                Object cap = config.get("final_logit_softcapping");
                if (cap == null || cap == io.anamnesis.api.json.Json.NULL) return;
                double v = HfConfig.number(cap).orElseThrow(() -> badKey("final_logit_softcapping", "is not a number: " + cap));
                if (v != 0) kv.put(a + ".final_logit_softcapping", MetaValue.Real.f32((float) v));
            }
            case ADJUSTED_FEED_FORWARD_LENGTH -> kv.put(a + ".feed_forward_length", MetaValue.u32(adjustedFeedForward(config)));
            case ROPE_SCALING_NONE -> kv.put(a + ".rope.scaling.type", MetaValue.str("none"));
            case EXAONE4_SLIDING_WINDOW -> {
                Object w = config.get("sliding_window");
                if (w == null || w == io.anamnesis.api.json.Json.NULL) return;
                kv.put(a + ".attention.sliding_window", MetaValue.u32(HfConfig.asInteger(w).filter(v -> v >= 0 && v <= 0xFFFF_FFFFL)
                        .orElseThrow(() -> badKey("sliding_window", "is not a GGUF uint32: " + w))));
                List<MetaValue> local = new ArrayList<>();
                Object types = config.get("layer_types"), pattern = config.get("sliding_window_pattern");
                if (types instanceof List<?> list) {
                    if (list.size() != blockCount) throw badKey("layer_types", "is not a list of num_hidden_layers (" + blockCount + ") layer types");
                    for (Object t : list) local.add(new MetaValue.Bool("sliding_attention".equals(t)));
                } else if (pattern instanceof String p && !p.isEmpty()) {
                    for (long il = 0; il < blockCount; il++) local.add(new MetaValue.Bool(p.charAt((int) (il % p.length())) == 'L'));
                } else if (pattern != null && pattern != io.anamnesis.api.json.Json.NULL && !(pattern instanceof String)) {
                    long period = HfConfig.asInteger(pattern).filter(v -> v > 0)
                            .orElseThrow(() -> badKey("sliding_window_pattern", "is not a positive integer or a string: " + pattern));
                    for (long il = 0; il < blockCount; il++) local.add(new MetaValue.Bool((il + 1) % period != 0));
                }
                if (!local.isEmpty()) kv.put(a + ".attention.sliding_window_pattern", new MetaValue.Array(MetaValue.Type.BOOL, local));
            }
            case ROTARY_PCT_DIMENSION_COUNT -> {
                long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                        .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
                // cohere2's and gptneox's rotary_pct, stablelm's partial_rotary_factor (rope_pct under its older keys)
                String key = java.util.stream.Stream.of("rotary_pct", "partial_rotary_factor", "rope_pct").filter(config::containsKey)
                        .findFirst().orElse("rotary_pct");
                Object p = config.get(key);
                double pct = HfConfig.number(p).filter(v -> v > 0 && v <= 1)
                        .orElseThrow(() -> badKey(key, "is missing or not a number in (0, 1]: " + p));
                kv.put(a + ".rope.dimension_count", MetaValue.u32((long) (pct * (hidden / heads))));
            }
            case HEAD_SHARE_ROPE_DIMENSION_COUNT -> {
                long head = HfConfig.integer(config, "head_dim").orElseGet(() -> {
                    long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                    long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                            .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
                    return hidden / heads;
                });
                Map<?, ?> rope = ropeParameters(arch, config);
                Object f = rope.get("partial_rotary_factor");
                double factor = f == null ? 0.5 : HfConfig.number(f).filter(v -> v > 0 && v <= 1)
                        .orElseThrow(() -> badKey("partial_rotary_factor", "is not a number in (0, 1]: " + f));
                Object top = config.get("partial_rotary_factor");
                if (f == null && top != null && HfConfig.number(top).filter(v -> v == factor).isEmpty()) {
                    throw new UnsupportedFeatureException("config.json partial_rotary_factor is " + top + " at the top level, where "
                            + "the converter does not read it (it takes the rope parameters', else 0.5): the file would rotate "
                            + "another share of each head; not converted");
                }
                long dims = (long) (head * factor);
                if (dims % 2 != 0 || dims <= 0) throw badKey("partial_rotary_factor", "gives " + dims + " rotary dimensions of a head of "
                        + head + ", not a positive even number");
                kv.put(a + ".rope.dimension_count", MetaValue.u32(dims));
            }
            case SLIDING_WINDOW_PATTERN_WHEN_WINDOWED -> {
                if (!config.containsKey("sliding_window")) return;
                Object w = config.get("sliding_window");
                kv.put(a + ".attention.sliding_window", MetaValue.u32(HfConfig.asInteger(w).filter(v -> v >= 0 && v <= 0xFFFF_FFFFL)
                        .orElseThrow(() -> badKey("sliding_window", "is not a GGUF uint32: " + w))));
                List<MetaValue> local = new ArrayList<>();
                Object types = config.get("layer_types");
                if (types != null && types != io.anamnesis.api.json.Json.NULL) {
                    if (!(types instanceof List<?> list) || list.size() != blockCount) {
                        throw badKey("layer_types", "is not a list of num_hidden_layers (" + blockCount + ") layer types");
                    }
                    for (Object t : list) {
                        if (!"sliding_attention".equals(t) && !"full_attention".equals(t)) {
                            throw new UnsupportedFeatureException("config.json layer_types holds " + t + ": llama.cpp's " + a
                                    + " has sliding_attention and full_attention layers only; not converted");
                        }
                        local.add(new MetaValue.Bool("sliding_attention".equals(t)));
                    }
                } else {
                    for (long il = 0; il < blockCount; il++) local.add(new MetaValue.Bool((il + 1) % 4 != 0));
                }
                kv.put(a + ".attention.sliding_window_pattern", new MetaValue.Array(MetaValue.Type.BOOL, local));
            }
            case LATENT_KEY_LENGTH -> kv.put(a + ".attention.key_length",
                    MetaValue.u32(positive(config, "kv_lora_rank") + positive(config, "qk_rope_head_dim")));
            case HEAD_KEY_LENGTH_MLA -> kv.put(a + ".attention.key_length_mla",
                    MetaValue.u32(positive(config, "qk_nope_head_dim") + positive(config, "qk_rope_head_dim")));
            case EXPERT_WEIGHTS_NORM_WHEN_SET -> {
                if (Boolean.TRUE.equals(config.get("norm_topk_prob"))) kv.put(a + ".expert_weights_norm", new MetaValue.Bool(true));
            }
            case YARN_LOG_MULTIPLIER_FROM_MSCALE -> {
                Object m = ropeParameters(arch, config).get("mscale_all_dim");
                if (m == null || m == io.anamnesis.api.json.Json.NULL) return;
                double all = HfConfig.number(m).orElseThrow(() -> badKey("mscale_all_dim", "is not a number: " + m));
                kv.put(a + ".rope.scaling.yarn_log_multiplier", MetaValue.Real.f32((float) (0.1 * all)));
            }
            case TOP_LEVEL_HEAD_SHARE_ROPE_DIMENSION_COUNT -> {
                long head = HfConfig.integer(config, "head_dim")
                        .orElseGet(() -> positive(config, "hidden_size") / positive(config, "num_attention_heads"));
                Object f = config.get("partial_rotary_factor");
                double factor = f == null ? 0.5 : HfConfig.number(f).filter(v -> v > 0 && v <= 1)
                        .orElseThrow(() -> badKey("partial_rotary_factor", "is not a number in (0, 1]: " + f));
                long dims = (long) (head * factor);
                if (dims % 2 != 0 || dims <= 0) throw badKey("partial_rotary_factor", "gives " + dims + " rotary dimensions of a head of "
                        + head + ", not a positive even number");
                kv.put(a + ".rope.dimension_count", MetaValue.u32(dims));
            }
            case EXPERT_GATING_SIGMOID -> kv.put(a + ".expert_gating_func", MetaValue.u32(2));
            case RMS_EPS_1E5 -> kv.put(a + ".attention.layer_norm_rms_epsilon", MetaValue.Real.f32(1e-5f));
            case ERNIE_SHARED_FEED_FORWARD_LENGTH -> {
                long shared = HfConfig.integer(config, "moe_num_shared_experts").orElse(0L);
                Optional<Long> ff = HfConfig.integer(config, "intermediate_size"), kvHeads = HfConfig.integer(config, "num_key_value_heads");
                if (shared <= 0 || ff.isEmpty() || kvHeads.isEmpty()) return;
                if (kvHeads.get() <= 0) throw badKey("num_key_value_heads", "is not positive");
                long width = ff.get() / kvHeads.get();
                long experts = HfConfig.integer(config, "moe_intermediate_size").orElse(0L) * shared;
                if (width != experts) {
                    throw new UnsupportedFeatureException("config.json intermediate_size " + ff.get() + " // num_key_value_heads "
                            + kvHeads.get() + " = " + width + " is the shared experts' width the converter writes, but they are "
                            + "moe_intermediate_size x moe_num_shared_experts = " + experts + " wide: llama.cpp would not load the file; "
                            + "not converted");
                }
                kv.put(a + ".expert_shared_feed_forward_length", MetaValue.u32(width));
            }
            case FOUR_HIDDEN_FEED_FORWARD_LENGTH -> {
                // phi2's keys, gpt2's (n_embd; n_inner, null for 4 x n_embd) or bloom's (n_embed in older configs)
                String hiddenKey = config.containsKey("hidden_size") ? "hidden_size" : config.containsKey("n_embd") ? "n_embd"
                        : config.containsKey("n_embed") ? "n_embed" : "hidden_size";
                String widthKey = config.containsKey("intermediate_size") || !config.containsKey("n_inner") ? "intermediate_size" : "n_inner";
                long hidden = HfConfig.integer(config, hiddenKey).orElseThrow(() -> badKey(hiddenKey, "is missing"));
                Optional<Long> ff = HfConfig.integer(config, widthKey);
                if (ff.isPresent() && ff.get() != 4 * hidden) {
                    throw badKey(widthKey, "is " + ff.get() + ", but the converter writes " + a + "'s feed-forward width as "
                            + "4 x " + hiddenKey + " (" + 4 * hidden + "): llama.cpp would not load the MLP");
                }
                kv.put(a + ".feed_forward_length", MetaValue.u32(4 * hidden));
            }
            case NO_BOS_TOKEN -> kv.put("tokenizer.ggml.add_bos_token", new MetaValue.Bool(false));
            case ONE_KEY_VALUE_HEAD -> kv.put(a + ".attention.head_count_kv", MetaValue.u32(1));
            case OLMO_LAYER_NORM_EPSILON -> kv.put(a + ".attention.layer_norm_epsilon", MetaValue.Real.f32(1e-5f));
            case EXPERT_WEIGHTS_SCALE_ONE -> kv.put(a + ".expert_weights_scale", MetaValue.Real.f32(1.0f));
            case NOT_CAUSAL -> kv.put(a + ".attention.causal", new MetaValue.Bool(false));
            case CLASSIFIER_LABELS -> classifierLabels(config).ifPresent(l -> kv.put(a + ".classifier.output_labels", l));
            case META_AI_LAYOUT -> kv.put(a + ".tensor_data_layout", new MetaValue.Str("Meta AI original pth"));
            case MPT_FEED_FORWARD_LENGTH -> {
                long hidden = HfConfig.integer(config, "d_model").orElseThrow(() -> badKey("d_model", "is missing"));
                Object ratio = config.get("expansion_ratio");
                if (ratio != null && HfConfig.number(ratio).filter(r -> r == 4).isEmpty()) {
                    throw new UnsupportedFeatureException("config.json expansion_ratio is " + ratio + ": the converter writes mpt's "
                            + "feed-forward width as 4 x d_model, and llama.cpp would not load another; not converted");
                }
                kv.put(a + ".feed_forward_length", MetaValue.u32(4 * hidden));
            }
            case MPT_ATTENTION_CONFIG -> {
                Map<?, ?> attn = mptAttentionConfig(config);
                Object kvHeads = attn.get("kv_n_heads");
                if (kvHeads != null && kvHeads != io.anamnesis.api.json.Json.NULL) {
                    long n = HfConfig.asInteger(kvHeads).filter(x -> x >= 0 && x <= 0xFFFF_FFFFL)
                            .orElseThrow(() -> badKey("attn_config.kv_n_heads", "is not a GGUF uint32: " + kvHeads));
                    if (n != 0) kv.put(a + ".attention.head_count_kv", MetaValue.u32(n));
                }
                kv.put(a + ".attention.layer_norm_epsilon", MetaValue.Real.f32(1e-5f));
                if (!attn.containsKey("clip_qkv")) throw badKey("attn_config.clip_qkv", "is missing (the converter reads it; null for none)");
                Object clip = attn.get("clip_qkv");
                if (clip != io.anamnesis.api.json.Json.NULL) {
                    kv.put(a + ".attention.clamp_kqv", MetaValue.Real.f32(HfConfig.number(clip)
                            .orElseThrow(() -> badKey("attn_config.clip_qkv", "is not a number: " + clip)).floatValue()));
                }
                Object bias = attn.get("alibi_bias_max");
                kv.put(a + ".attention.max_alibi_bias", MetaValue.Real.f32(HfConfig.number(bias)
                        .orElseThrow(() -> badKey("attn_config.alibi_bias_max", "is missing or not a number: " + bias)).floatValue()));
            }
            case NEMOTRON_ROPE_DIMENSION_COUNT -> {
                String key = java.util.stream.Stream.of("partial_rotary_factor", "rope_pct", "rope_percent").filter(config::containsKey)
                        .findFirst().orElse("partial_rotary_factor");
                double pct = requiredNumber(config, key);
                long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                long heads = HfConfig.integer(config, "num_attention_heads").filter(h -> h > 0)
                        .orElseThrow(() -> badKey("num_attention_heads", "is missing or not positive"));
                if (pct <= 0 || pct > 1) throw badKey(key, "is " + pct + ", not in (0, 1]");
                kv.put(a + ".rope.dimension_count", MetaValue.u32((long) (pct * hidden) / heads));
            }
            case MINICPM_SCALES -> {
                double scaleEmb = requiredNumber(config, "scale_emb"), scaleDepth = requiredNumber(config, "scale_depth");
                double base = requiredNumber(config, "dim_model_base");
                long layers = HfConfig.integer(config, "num_hidden_layers").filter(n -> n > 0)
                        .orElseThrow(() -> badKey("num_hidden_layers", "is missing or not positive"));
                long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
                if (base == 0) throw badKey("dim_model_base", "is 0 (the logit scale divides by it)");
                kv.put(a + ".embedding_scale", MetaValue.Real.f32((float) scaleEmb));
                kv.put(a + ".residual_scale", MetaValue.Real.f32((float) (scaleDepth / Math.pow(layers, 0.5))));
                kv.put(a + ".logit_scale", MetaValue.Real.f32((float) (hidden / base)));
            }
            case FALCON_CONTEXT_AND_LAYOUT -> {
                kv.put(a + ".context_length", MetaValue.u32(2048));
                kv.put(a + ".tensor_data_layout", new MetaValue.Str("jploski"));
            }
            case FALCON_KEY_VALUE_HEADS -> {
                String key = config.containsKey("num_kv_heads") || !config.containsKey("n_head_kv") ? "num_kv_heads" : "n_head_kv";
                Object v = config.get(key);
                long heads = v == null || v == io.anamnesis.api.json.Json.NULL ? 1 : HfConfig.asInteger(v).filter(h -> h > 0 && h <= 0xFFFF_FFFFL)
                        .orElseThrow(() -> badKey(key, "is not a positive GGUF uint32: " + v));
                kv.put(a + ".attention.head_count_kv", MetaValue.u32(heads));
            }
            case PARALLEL_RESIDUAL -> {
                Object v = config.get("use_parallel_residual");
                if (v != null && v != io.anamnesis.api.json.Json.NULL && !(v instanceof Boolean)) {
                    throw badKey("use_parallel_residual", "is not true or false: " + v);
                }
                kv.put(a + ".use_parallel_residual", new MetaValue.Bool(!Boolean.FALSE.equals(v)));
            }
            case MINISTRAL3_SCALING -> {
                if (!ministral3(arch, config)) return;
                Map<?, ?> rope = ropeParameters(arch, config);
                Object type = rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type");
                if (!Yarn.isYarn(type)) throw badKey("rope_parameters", "rope_type is " + type + ": Ministral 3's must be yarn");
                Object all = rope.get("mscale_all_dim"), beta = rope.get("llama_4_scaling_beta");
                kv.put(a + ".rope.scaling.yarn_log_multiplier", MetaValue.Real.f32(HfConfig.number(all).orElseThrow(() ->
                        badKey("rope_parameters", "mscale_all_dim is missing or not a number: " + all)).floatValue()));
                kv.put(a + ".attention.temperature_scale", MetaValue.Real.f32(HfConfig.number(beta).orElseThrow(() ->
                        badKey("rope_parameters", "llama_4_scaling_beta is missing or not a number: " + beta)).floatValue()));
            }
            case DEEPSTACK_LAYER_COUNT -> {
                Object vision = config.get("vision_config");
                Object indexes = vision instanceof Map<?, ?> v ? v.get("deepstack_visual_indexes") : null;
                if (indexes != null && indexes != io.anamnesis.api.json.Json.NULL && !(indexes instanceof List<?>)) {
                    throw badKey("vision_config.deepstack_visual_indexes", "is not a list of layer numbers: " + indexes);
                }
                kv.put(a + ".n_deepstack_layers", MetaValue.u32(indexes instanceof List<?> l ? l.size() : 0));
            }
            case EXPERT_WEIGHTS_NORM_WHEN_GIVEN -> {
                Object n = config.get("norm_topk_prob");
                if (n == null || n == io.anamnesis.api.json.Json.NULL) return;
                if (!(n instanceof Boolean b)) throw badKey("norm_topk_prob", "is not true or false: " + n);
                kv.put(a + ".expert_weights_norm", new MetaValue.Bool(b));
            }
            case SLIDING_WINDOW_UNLESS_ALL_GLOBAL -> {
                if (HfConfig.integer(config, "sliding_window_pattern").filter(p -> p == 1).isPresent()) return;
                Object w = config.get("sliding_window");
                kv.put(a + ".attention.sliding_window", MetaValue.u32(HfConfig.asInteger(w).filter(v -> v >= 0 && v <= 0xFFFF_FFFFL)
                        .orElseThrow(() -> badKey("sliding_window", "is missing or not a GGUF uint32: " + w))));
            }
        }
    }

    /**
     * LFM2's feed-forward width as the converter computes it ({@code _add_feed_forward_length}):
     * {@code block_ff_dim} (else {@code intermediate_size}); with {@code block_auto_adjust_ff_dim}
     * {@code int(2 x ff / 3)}, times {@code block_ffn_dim_multiplier} when it is set, rounded up
     * to a multiple of {@code block_multiple_of}.
     */
    static long adjustedFeedForward(Map<?, ?> config) {
        String from = config.containsKey("block_ff_dim") ? "block_ff_dim" : "intermediate_size";
        long ff = HfConfig.integer(config, from).filter(v -> v > 0).orElseThrow(() -> badKey("block_ff_dim", "is missing or not positive"));
        for (String key : List.of("block_auto_adjust_ff_dim", "block_ffn_dim_multiplier", "block_multiple_of")) {
            if (!config.containsKey(key)) throw badKey(key, "is missing (the converter reads it)");
        }
        if (Boolean.TRUE.equals(config.get("block_auto_adjust_ff_dim"))) {
            ff = (long) (2.0 * ff / 3);
            Object m = config.get("block_ffn_dim_multiplier");
            if (m != null && m != io.anamnesis.api.json.Json.NULL) {
                double mult = HfConfig.number(m).orElseThrow(() -> badKey("block_ffn_dim_multiplier", "is not a number: " + m));
                ff = (long) (mult * ff);
            }
            long multiple = HfConfig.integer(config, "block_multiple_of").filter(v -> v > 0)
                    .orElseThrow(() -> badKey("block_multiple_of", "is not a positive integer"));
            ff = multiple * ((ff + multiple - 1) / multiple);
        }
        if (ff < 0 || ff > 0xFFFF_FFFFL) throw badKey(from, "gives a feed-forward width of " + ff + ", not a GGUF uint32");
        return ff;
    }

    /** {@code int(partial_rotary_factor * hidden_size) // num_attention_heads} (phi3), the factor 1.0 when absent. */
    static long partialRopeDims(Map<?, ?> config) {
        long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
        long heads = HfConfig.integer(config, "num_attention_heads").orElseThrow(() -> badKey("num_attention_heads", "is missing"));
        if (heads <= 0) throw badKey("num_attention_heads", heads + " is not positive");
        Object f = config.get("partial_rotary_factor");
        double factor = f == null ? 1.0 : HfConfig.number(f).filter(v -> v > 0 && v <= 1)
                .orElseThrow(() -> badKey("partial_rotary_factor", "is not a number in (0, 1]: " + f));
        long dims = (long) (factor * hidden) / heads;
        if (dims % 2 != 0 || dims > hidden / heads) {
            throw badKey("partial_rotary_factor", "gives " + dims + " rotary dimensions per head of " + hidden / heads
                    + ", not an even number within the head");
        }
        return dims;
    }

    /** A sentence-transformers folder's modules.json, its list of modules; none without the file. */
    private static List<?> sentenceTransformersModules(ModelFiles files) {
        Optional<byte[]> modules = files.bytes("modules.json");
        if (modules.isEmpty()) return List.of();
        if (!(parseJson("modules.json", modules.get(), files) instanceof List<?> l)) {
            throw new MalformedFileException("modules.json is not a JSON list of modules");
        }
        return l;
    }

    /**
     * A note naming the sentence-transformers Dense modules of modules.json, when there are any: the converter leaves
     * them out unless given {@code --sentence-transformers-dense-modules}, so llama.cpp's embeddings of the file are the
     * pooled ones before those layers.
     */
    private static Optional<String> denseModules(ModelFiles files) {
        List<String> dense = new ArrayList<>();
        for (Object m : sentenceTransformersModules(files)) {
            if (m instanceof Map<?, ?> mod && "sentence_transformers.models.Dense".equals(mod.get("type"))) {
                dense.add(String.valueOf(mod.get("path")));
            }
        }
        if (dense.isEmpty()) return Optional.empty();
        return Optional.of("left out the sentence-transformers Dense module" + (dense.size() == 1 ? " " : "s ") + String.join(", ", dense)
                + ", as the converter does without --sentence-transformers-dense-modules: llama.cpp's embeddings of this file "
                + "are the pooled ones before " + (dense.size() == 1 ? "that layer" : "those layers"));
    }

    /**
     * {@code _try_set_pooling_type}: the first Pooling module of a sentence-transformers
     * {@code modules.json}, and that module's {@code config.json} mode, tried in the
     * converter's order: mean 1, CLS 2, last token 3. Empty without modules.json or a Pooling
     * module.
     */
    private static Optional<Long> poolingType(ModelFiles files) {
        String path = null;
        for (Object m : sentenceTransformersModules(files)) {
            if (m instanceof Map<?, ?> mod && "sentence_transformers.models.Pooling".equals(mod.get("type"))) {
                if (!(mod.get("path") instanceof String p)) throw new MalformedFileException("modules.json: the Pooling module has no path");
                path = p;
                break;
            }
        }
        if (path == null) return Optional.empty();
        if (path.isEmpty() || path.startsWith("/") || path.contains("\\") || List.of(path.split("/")).contains("..")) {
            throw new MalformedFileException("modules.json: the Pooling module's path " + path + " is not a folder inside the model's");
        }
        String name = path + "/config.json";
        Optional<byte[]> bytes = files.bytes(name);
        if (bytes.isEmpty()) throw new MalformedFileException("modules.json names a Pooling module in " + path + ", which has no config.json");
        Object pc = parseJson(name, bytes.get(), files);
        if (!(pc instanceof Map<?, ?> pooling)) throw new MalformedFileException(name + " is not a JSON object");
        String[] modes = {"pooling_mode_mean_tokens", "pooling_mode_cls_token", "pooling_mode_lasttoken"};
        for (int i = 0; i < modes.length; i++) {
            if (!pooling.containsKey(modes[i])) throw new MalformedFileException(name + " has no " + modes[i]);
            if (Boolean.TRUE.equals(pooling.get(modes[i]))) return Optional.of((long) i + 1);
        }
        throw new UnsupportedFeatureException(name + ": only mean, CLS and last-token pooling are converted (as the converter)");
    }

    private static Object parseJson(String name, byte[] bytes, ModelFiles files) {
        try {
            return io.anamnesis.api.json.Json.parse(new String(bytes, java.nio.charset.StandardCharsets.UTF_8),
                    files.limits().maxNestingDepth());
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException(name + " is not valid JSON: " + e.getMessage(), e);
        }
    }

    /** The rope theta: the rope parameters' {@code rope_theta}, else the first of TextModel's names for it. */
    private static Optional<Object> ropeTheta(Map<?, ?> config, Map<?, ?> rope) {
        return Optional.ofNullable(rope.get("rope_theta"))
                .or(() -> HfConfig.find(config, List.of("global_rope_theta", "rope_global_theta", "rope_theta_global",
                        "rope_theta", "rotary_emb_base")));
    }

    /**
     * {@code rope_parameters} (or {@code rope_scaling}), its {@code full_attention} part when it
     * has one. A {@code sliding_attention} part is taken by a family with local layers
     * ({@link Architecture.Extras#slidingWindow}), its rope unscaled (llama.cpp scales no
     * local layer's rope); refused for the others.
     */
    private static Map<?, ?> ropeParameters(Architecture arch, Map<?, ?> config) {
        Object r = config.containsKey("rope_parameters") ? config.get("rope_parameters") : config.get("rope_scaling");
        if (!(r instanceof Map<?, ?> m)) return Map.of();
        if (m.containsKey("sliding_attention")) {
            if (arch.extras().slidingWindow().isEmpty()) {
                throw new UnsupportedFeatureException("sliding-window rope parameters are not converted yet for " + arch.gguf());
            }
            if (m.get("sliding_attention") instanceof Map<?, ?> local) {
                Object type = local.get("rope_type") != null ? local.get("rope_type") : local.get("type");
                if ((type != null && !type.equals("default")) || local.get("factor") != null) {
                    throw new UnsupportedFeatureException("config.json sliding_attention rope scaling " + (type == null ? "" : type + " ")
                            + "on " + arch.gguf() + " is not converted: llama.cpp scales no local layer's rope");
                }
            }
        }
        return m.get("full_attention") instanceof Map<?, ?> full ? full : m;
    }

    private static void put(String arch, Map<?, ?> config, HyperParameter h, Map<String, MetaValue> kv) {
        Optional<Object> v = HfConfig.find(config, h.hfKeys()).filter(x -> x != io.anamnesis.api.json.Json.NULL);
        if (v.isEmpty()) {
            if (h.required()) {
                // each key the converter would take it from, in its order
                throw badKey(h.hfKeys().getFirst(), "is missing" + (h.hfKeys().size() == 1 ? "" : " (and so are "
                        + String.join(", ", h.hfKeys().subList(1, h.hfKeys().size())) + ", which the converter would take in its "
                        + "place)") + ": it gives " + h.key(arch));
            }
            return;
        }
        String from = h.hfKeys().stream().filter(config::containsKey).findFirst().orElseThrow();
        switch (h.type()) {
            case U32 -> {
                long n = HfConfig.asInteger(v.get()).orElseThrow(() -> badKey(from, "is not an integer: " + v.get()));
                if (n < 0 || n > 0xFFFF_FFFFL) throw badKey(from, n + " does not fit a GGUF uint32");
                kv.put(h.key(arch), MetaValue.u32(n));
            }
            case F32 -> {
                double x = HfConfig.number(v.get()).orElseThrow(() -> badKey(from, "is not a number: " + v.get()));
                // the converter's "if x := hparams.get(...)": a zero is not written
                if (h.unlessZero() && x == 0) return;
                kv.put(h.key(arch), MetaValue.Real.f32((float) x));
            }
        }
    }

    private static long required(Map<?, ?> config, HyperParameter h) {
        Object v = HfConfig.find(config, h.hfKeys()).orElseThrow(() -> badKey(h.hfKeys().get(1), "is missing"));
        return HfConfig.asInteger(v).orElseThrow(() -> badKey(h.hfKeys().get(1), "is not an integer: " + v));
    }

    static MalformedFileException badKey(String key, String why) {
        return new MalformedFileException("config.json " + key + " " + why);
    }

    /**
     * A mixture of experts' per-expert tensors, held per block as {@code modify_tensors} holds
     * them until the block's last one comes, then planned as one stacked tensor per projection
     * ({@link ConvertedTensor#stacked}: nothing is read until the file is written). Each expert
     * is checked against config.json (expert number, feed-forward width, hidden size), and at
     * the end every block must have had all its experts: the converter would write a file
     * llama.cpp cannot load without them.
     */
    private static final class Stacks {
        private final Architecture arch;
        private final Architecture.Experts experts;
        private final java.util.function.Function<String, Optional<Architecture.Experts.Name>> expertName;
        private final Map<?, ?> config;
        private final long blockCount, count;
        private final String countKey, outtype;
        private final ExportRequest.Encoder encoder;
        private final Map<Integer, Map<String, DenseTensor>> held = new HashMap<>();
        private final java.util.Set<Integer> stacked = new java.util.HashSet<>();

        Stacks(Architecture arch, Architecture.Experts experts, Map<?, ?> config, long blockCount, String outtype,
               ExportRequest.Encoder encoder) {
            this.arch = arch;
            this.experts = experts;
            this.expertName = experts.matcher();
            this.config = config;
            this.blockCount = blockCount;
            this.outtype = outtype;
            this.encoder = encoder;
            this.countKey = experts.count().hfKeys().stream().filter(config::containsKey).findFirst()
                    .orElse(experts.count().hfKeys().getLast());
            this.count = HfConfig.integer(config, countKey).filter(n -> n > 0 && n <= Integer.MAX_VALUE)
                    .orElseThrow(() -> badKey(countKey, "is missing or not a positive number of experts"));
        }

        /** Holds {@code d} when it is an expert's tensor, adding the block's stacks to {@code out} with its last one. */
        boolean take(DenseTensor d, List<PlannedTensor> out) {
            Optional<Architecture.Experts.Name> match = expertName.apply(d.name());
            if (match.isEmpty()) {
                if (d.name().endsWith("." + experts.router()) && d.shape().rank() == 2 && d.shape().dim(0) != count) {
                    throw badKey(countKey, "is " + count + ", but the router " + d.name() + " has " + d.shape().dim(0)
                            + " rows (one per expert)");
                }
                return false;
            }
            Architecture.Experts.Name x = match.get();
            // not the name the converter looks up (leading zeros), or a block beyond block_count: not mapped
            if (!experts.name(x.block(), x.expert(), x.projection()).equals(d.name()) || x.block() >= blockCount) return false;
            if (x.expert() >= count) {
                throw MalformedFileException.inTensor(d.name(), "is expert " + x.expert() + ", but config.json " + countKey
                        + " is " + count + " (experts 0 to " + (count - 1) + ")");
            }
            requireFloats(d);
            check(d, x.projection());
            if (stacked.contains(x.block())) {
                throw MalformedFileException.inTensor(d.name(), "is one expert of block " + x.block() + ", whose experts are "
                        + "stored fused as well (or stacked already)");
            }
            Map<String, DenseTensor> block = held.computeIfAbsent(x.block(), b -> new HashMap<>());
            block.put(d.name(), d);
            if (block.size() < count * experts.projections().size()) return true;
            for (Architecture.Experts.Projection p : experts.projections()) {
                List<DenseTensor> list = new ArrayList<>();
                for (long xid = 0; xid < count; xid++) list.add(block.get(experts.name(x.block(), xid, p)));
                String stack = experts.stackedName(x.block(), p);
                String name = arch.map(stack, (int) blockCount).orElseThrow(() -> new IllegalStateException(stack + " unmapped"));
                out.add(typedStack(list, name, outtype, encoder));
            }
            held.remove(x.block());
            stacked.add(x.block());
            return true;
        }

        /** An expert's projection is a matrix of the feed-forward width by hidden_size, as config.json says. */
        private void check(DenseTensor d, Architecture.Experts.Projection p) {
            if (d.shape().rank() != 2) {
                throw MalformedFileException.inTensor(d.name(), "has shape " + d.shape() + ", not a matrix (an expert's projection)");
            }
            long width = HfConfig.integer(config, experts.width()).orElseThrow(() -> badKey(experts.width(), "is missing"));
            long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> badKey("hidden_size", "is missing"));
            long w = d.shape().dim(p.widthRows() ? 0 : 1), h = d.shape().dim(p.widthRows() ? 1 : 0);
            if (w != width) {
                throw badKey(experts.width(), "is " + width + ", but " + d.name() + " has " + w + (p.widthRows() ? " rows" : " columns"));
            }
            if (h != hidden) {
                throw badKey("hidden_size", "is " + hidden + ", but " + d.name() + " has " + h + (p.widthRows() ? " columns" : " rows"));
            }
        }

        /**
         * Notes that the block of {@code hfName} stores its experts fused (transformers 5's layout): there is
         * nothing of it to stack, and per-expert tensors beside them would be written twice.
         */
        void fused(String hfName) {
            Matcher layer = MODEL_LAYER.matcher(hfName);
            if (!layer.lookingAt() || layer.group(1).length() > 9) return;
            int bid = Integer.parseInt(layer.group(1));
            if (held.containsKey(bid)) {
                throw MalformedFileException.inTensor(hfName, "holds block " + bid + "'s experts fused, and the block has "
                        + "experts stored one by one as well");
            }
            stacked.add(bid);
        }

        /** Every block's experts were stacked; else the first missing expert tensor, by name. */
        void requireAll() {
            long dense = experts.denseLead().map(k -> HfConfig.integer(config, k).filter(n -> n >= 0)
                    .orElseThrow(() -> badKey(k, "is missing or negative"))).orElse(0L);
            for (int bid = (int) Math.min(dense, blockCount); bid < blockCount; bid++) {
                if (stacked.contains(bid)) continue;
                Map<String, DenseTensor> block = held.getOrDefault(bid, Map.of());
                for (long xid = 0; xid < count; xid++) {
                    for (Architecture.Experts.Projection p : experts.projections()) {
                        String name = experts.name(bid, xid, p);
                        if (!block.containsKey(name)) {
                            throw new MalformedFileException("the model has no tensor " + name + ": block " + bid + " has "
                                    + block.size() + " of its " + count + " experts' " + experts.projections().size()
                                    + " projections (config.json " + countKey + " " + count + "), which "
                                    + arch.hfNames().getFirst() + " stacks per block");
                        }
                    }
                }
            }
        }
    }

    /**
     * A family's {@link Architecture.LayerScalar}s: each one-value tensor read as it comes (a float, as the
     * converter's {@code .float().item()} reads it) and left out of the tensors; the arrays written as keys in
     * the order they were completed; a layer without its value is refused (the converter would write no key,
     * and llama.cpp would not load the file).
     */
    private static final class LayerScalars {
        private final List<Architecture.LayerScalar> specs;
        private final long blockCount;
        private final Map<Architecture.LayerScalar, float[]> values = new HashMap<>();
        private final Map<Architecture.LayerScalar, java.util.BitSet> seen = new HashMap<>();
        private final List<Architecture.LayerScalar> completed = new ArrayList<>();

        LayerScalars(List<Architecture.LayerScalar> specs, long blockCount) {
            this.specs = specs;
            this.blockCount = blockCount;
        }

        /** Takes {@code d} when it is one of the scalars of a layer below block_count. */
        boolean take(DenseTensor d) {
            for (Architecture.LayerScalar spec : specs) {
                if (!d.name().endsWith("." + spec.suffix())) continue;
                Matcher layer = MODEL_LAYER.matcher(d.name());
                if (!layer.lookingAt() || layer.group(1).length() > 9 || !d.name().equals("model.layers." + layer.group(1) + "." + spec.suffix())) {
                    return false;
                }
                int bid = Integer.parseInt(layer.group(1));
                if (bid >= blockCount) return false;
                if (d.shape().elementCount() != 1) {
                    throw MalformedFileException.inTensor(d.name(), "has shape " + d.shape() + ", not one value (" + spec.key() + ")");
                }
                requireFloats(d);
                float v;
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    java.lang.foreign.MemorySegment one = arena.allocate(4, 4);
                    ConvertedTensor.values(d, d.name(), Optional.empty()).producer().open(arena).fill(0, 1, one);
                    v = one.get(io.anamnesis.api.numeric.LittleEndian.F32, 0);
                }
                values.computeIfAbsent(spec, s -> new float[(int) blockCount])[bid] = v;
                java.util.BitSet got = seen.computeIfAbsent(spec, s -> new java.util.BitSet());
                got.set(bid);
                if (got.cardinality() == blockCount && !completed.contains(spec)) completed.add(spec);
                return true;
            }
            return false;
        }

        void requireAll() {
            for (Architecture.LayerScalar spec : specs) {
                java.util.BitSet got = seen.getOrDefault(spec, new java.util.BitSet());
                int missing = got.nextClearBit(0);
                if (missing < blockCount) {
                    throw new MalformedFileException("the model has no tensor model.layers." + missing + "." + spec.suffix()
                            + ": the converter writes " + spec.key() + " from every layer's, and llama.cpp needs it");
                }
            }
        }

        void keys(Map<String, MetaValue> kv) {
            for (Architecture.LayerScalar spec : completed) {
                List<MetaValue> list = new ArrayList<>();
                for (float v : values.get(spec)) list.add(MetaValue.Real.f32(v));
                kv.put(spec.key(), new MetaValue.Array(MetaValue.Type.F32, list));
            }
        }
    }

    /**
     * What config.json says the tensors' shapes are, checked as each tensor is mapped: a
     * config that disagrees with the weights would give a file llama.cpp refuses or runs
     * wrongly, so it is refused naming the key.
     */
    /**
     * Two tensors of the folder that become one GGUF name (a checkpoint carrying both
     * {@code model.layers.0...} and {@code layers.0...}, say): the converter's writer refuses a
     * duplicated name too. A parse error naming the sources, before anything is written.
     */
    static void requireUniqueNames(List<PlannedTensor> out, List<DenseTensor> inputs, Architecture arch, long blockCount) {
        Set<String> seen = new HashSet<>();
        for (PlannedTensor t : out) {
            if (seen.add(t.name())) continue;
            List<String> sources = inputs.stream().map(DenseTensor::name)
                    .filter(n -> arch.map(underModel(arch, n, blockCount), (int) blockCount).filter(t.name()::equals).isPresent())
                    .toList();
            throw new MalformedFileException("the folder has two tensors that both become '" + t.name() + "' in the GGUF"
                    + (sources.size() > 1 ? " (" + String.join(" and ", sources) + ")" : "")
                    + "; a GGUF holds each name once (the converter refuses it too): remove one of them");
        }
    }

    private static final class Shapes {
        private final Map<?, ?> config;
        /** q/k norms over the whole projection (olmo2's), not one head's elements (qwen3's, gemma3's). */
        private final boolean wholeQkNorms;
        /** LFM2's feed-forward width, adjusted from config.json as the converter writes it. */
        private final Optional<Long> adjustedFeedForward;

        /** DeepSeek's latent attention: its projections' sizes come from its own keys, not from the head size. */
        private final boolean latent;

        /** GPTBigCode's multi-query attention: {@code c_attn} is the query and one key/value head. */
        private final boolean multiQuery;

        /** InternLM2's own names: {@code model.tok_embeddings}, {@code output}, {@code feed_forward.w1/w3/w2} (LFM2's too, adjusted). */
        private final boolean internLm2;

        Shapes(Map<?, ?> config, boolean wholeQkNorms, Optional<Long> adjustedFeedForward, boolean latent, boolean multiQuery,
               boolean internLm2) {
            this.config = config;
            this.wholeQkNorms = wholeQkNorms;
            this.adjustedFeedForward = adjustedFeedForward;
            this.latent = latent;
            this.multiQuery = multiQuery;
            this.internLm2 = internLm2;
        }

        // Compiled once per run: String.matches compiled 13 patterns again for every tensor, and the
        // JIT spent 0.1-0.17 s of its one C2 thread on java.util.regex while a 1 GiB
        // convert's workers waited for their kernels (docs/benchmarks.md).
        private static final Pattern DISTILBERT_QKV =
                Pattern.compile("(distilbert\\.)?transformer\\.layer\\.\\d+\\.attention\\.[qkv]_lin\\.weight");
        private static final Pattern DISTILBERT_OUT =
                Pattern.compile("(distilbert\\.)?transformer\\.layer\\.\\d+\\.attention\\.out_lin\\.weight");
        private static final Pattern DISTILBERT_LIN1 = Pattern.compile("(distilbert\\.)?transformer\\.layer\\.\\d+\\.ffn\\.lin1\\.weight");
        private static final Pattern DISTILBERT_LIN2 = Pattern.compile("(distilbert\\.)?transformer\\.layer\\.\\d+\\.ffn\\.lin2\\.weight");
        private static final Pattern NOMIC_QKV = Pattern.compile("encoder\\.layers\\.\\d+\\.attn\\.Wqkv\\.weight");
        private static final Pattern NOMIC_FC1 = Pattern.compile("encoder\\.layers\\.\\d+\\.mlp\\.fc1[12]\\.weight");
        private static final Pattern NOMIC_FC2 = Pattern.compile("encoder\\.layers\\.\\d+\\.mlp\\.fc2\\.weight");
        private static final Pattern BERT_ATTENTION = Pattern.compile(
                "(bert\\.)?encoder\\.layer\\.\\d+\\.attention\\.(self\\.(query|key|value)|output\\.dense)\\.weight");
        private static final Pattern BERT_NORM = Pattern.compile(
                "(bert\\.)?(embeddings|encoder\\.layer\\.\\d+\\.(attention\\.)?output)\\.LayerNorm\\.(weight|bias|gamma|beta)");
        private static final Pattern BERT_INTERMEDIATE =
                Pattern.compile("(bert\\.)?encoder\\.layer\\.\\d+\\.intermediate\\.dense\\.weight");
        private static final Pattern BERT_OUTPUT = Pattern.compile("(bert\\.)?encoder\\.layer\\.\\d+\\.output\\.dense\\.weight");
        private static final Pattern FEED_FORWARD_W1_W3 = Pattern.compile(".*feed_forward\\.w[13]\\.weight");
        private static final Pattern KEY_VALUE_PROJECTION = Pattern.compile(".*self_attn\\.[kv]_proj\\.(weight|bias)");

        void check(DenseTensor d) {
            String n = d.name();
            if (latent && n.contains(".self_attn.")) {
                latentAttention(d);
            } else if (n.equals("model.embed_tokens.weight") || n.equals("lm_head.weight")) {
                expect(d, 1, config.containsKey("hidden_size") ? "hidden_size" : config.containsKey("dim") ? "dim" : "n_embd", "columns");
                expect(d, 0, "vocab_size", "rows");
            } else if (n.endsWith("embeddings.word_embeddings.weight") || n.endsWith("embeddings.position_embeddings.weight")
                    || n.endsWith("embeddings.token_type_embeddings.weight")) {
                // BERT's word, position and token type embeddings (Nomic's BERT names the width n_embd)
                expect(d, 1, config.containsKey("hidden_size") || !config.containsKey("n_embd") ? "hidden_size" : "n_embd", "columns");
                expect(d, 0, n.contains("word_") ? "vocab_size" : n.contains("position_") ? "max_position_embeddings"
                        : "type_vocab_size", "rows");
            } else if (DISTILBERT_QKV.matcher(n).matches()
                    || DISTILBERT_OUT.matcher(n).matches()) {
                // DistilBERT's attention
                expect(d, 0, "dim", "rows");
                expect(d, 1, "dim", "columns");
                Optional<Long> dim = HfConfig.integer(config, "dim"), heads = HfConfig.integer(config, "n_heads");
                if (dim.isPresent() && heads.isPresent() && (heads.get() <= 0 || dim.get() % heads.get() != 0)) {
                    throw badKey("n_heads", "is " + heads.get() + ", which does not divide dim " + dim.get() + " into heads");
                }
            } else if (DISTILBERT_LIN1.matcher(n).matches()) {
                expect(d, 0, "hidden_dim", "rows");
                expect(d, 1, "dim", "columns");
            } else if (DISTILBERT_LIN2.matcher(n).matches()) {
                expect(d, 0, "dim", "rows");
                expect(d, 1, "hidden_dim", "columns");
            } else if (NOMIC_QKV.matcher(n).matches()) {
                // Nomic's BERT: q, k and v in blocks of n_embd rows
                expect(d, 1, "n_embd", "columns");
                HfConfig.integer(config, "n_embd").ifPresent(h -> {
                    if (d.shape().rank() != 2 || d.shape().dim(0) != 3 * h) {
                        throw badKey("n_embd", "is " + h + ", but " + n + " has shape " + d.shape() + ", not the three blocks of q, "
                                + "k and v [" + 3 * h + ", " + h + "]");
                    }
                });
            } else if (NOMIC_FC1.matcher(n).matches()) {
                expect(d, 0, "n_inner", "rows");
                expect(d, 1, "n_embd", "columns");
            } else if (NOMIC_FC2.matcher(n).matches()) {
                expect(d, 0, "n_embd", "rows");
                expect(d, 1, "n_inner", "columns");
            } else if (BERT_ATTENTION.matcher(n).matches()) {
                expect(d, 0, "hidden_size", "rows");
                expect(d, 1, "hidden_size", "columns");
                if (n.contains(".self.")) attentionRows(d, "num_attention_heads");
            } else if (BERT_NORM.matcher(n).matches()) {
                expect(d, 0, "hidden_size", "elements");
            } else if (BERT_INTERMEDIATE.matcher(n).matches()) {
                expect(d, 0, "intermediate_size", "rows");
                expect(d, 1, "hidden_size", "columns");
            } else if (BERT_OUTPUT.matcher(n).matches()) {
                expect(d, 0, "hidden_size", "rows");
                expect(d, 1, "intermediate_size", "columns");
            } else if (n.equals("word_embeddings.weight") || n.equals("transformer.word_embeddings.weight")) {
                // BLOOM's embeddings
                expect(d, 1, config.containsKey("hidden_size") ? "hidden_size" : "n_embed", "columns");
                expect(d, 0, "vocab_size", "rows");
            } else if (n.equals("wte.weight") || n.equals("transformer.wte.weight")) {
                // GPT-2's token embeddings (and EXAONE 3's and MPT's, whose configs name the width hidden_size and d_model)
                expect(d, 1, config.containsKey("hidden_size") ? "hidden_size" : config.containsKey("d_model") ? "d_model" : "n_embd",
                        "columns");
                expect(d, 0, "vocab_size", "rows");
            } else if (n.endsWith("attn.Wqkv.weight") && config.get("attn_config") instanceof Map<?, ?> attn) {
                // MPT's fused q/k/v in blocks: the query heads, then kv_n_heads key and value heads (the heads without it)
                long hidden = HfConfig.integer(config, "d_model").orElseThrow(() -> badKey("d_model", "is missing"));
                long heads = HfConfig.integer(config, "n_heads").filter(h -> h > 0).orElseThrow(() -> badKey("n_heads", "is missing"));
                long kv = HfConfig.asInteger(attn.get("kv_n_heads")).filter(k -> k > 0).orElse(heads);
                long rows = hidden % heads == 0 ? (heads + 2 * kv) * (hidden / heads) : -1;
                if (d.shape().rank() != 2 || d.shape().dim(0) != rows || d.shape().dim(1) != hidden) {
                    throw badKey(attn.containsKey("kv_n_heads") ? "attn_config.kv_n_heads" : "n_heads", "gives " + heads + " heads and "
                            + kv + " key/value heads of " + (hidden / heads) + " in d_model " + hidden + ", but " + n + " has shape "
                            + d.shape() + ", not [" + rows + ", " + hidden + "]");
                }
            } else if (internLm2 && (n.equals("model.tok_embeddings.weight") || n.equals("output.weight"))) {
                expect(d, 1, "hidden_size", "columns");
                expect(d, 0, "vocab_size", "rows");
            } else if (internLm2 && (n.endsWith("feed_forward.w1.weight") || n.endsWith("feed_forward.w3.weight"))) {
                expect(d, 0, "intermediate_size", "rows");
                expect(d, 1, "hidden_size", "columns");
            } else if (internLm2 && n.endsWith("feed_forward.w2.weight")) {
                expect(d, 1, "intermediate_size", "columns");
            } else if (n.endsWith("attn.attention.q_proj.weight")) {
                // EXAONE 3's attention
                attentionRows(d, "num_attention_heads");
            } else if (n.endsWith("attn.attention.k_proj.weight") || n.endsWith("attn.attention.v_proj.weight")) {
                attentionRows(d, config.containsKey("num_key_value_heads") ? "num_key_value_heads" : "num_attention_heads");
            } else if (n.endsWith("mlp.c_fc_0.weight") || n.endsWith("mlp.c_fc_1.weight")) {
                // EXAONE 3's gate and up projections (c_proj, its down projection, with StarCoder2's below)
                expect(d, 0, "intermediate_size", "rows");
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("mlp.c_proj.weight") && config.containsKey("intermediate_size")) {
                expect(d, 1, "intermediate_size", "columns");
            } else if (multiQuery && n.endsWith("attn.c_attn.weight")) {
                // GPTBigCode's multi-query attention: the query, then one key and one value head
                long hidden = HfConfig.integer(config, "n_embd").orElseThrow(() -> badKey("n_embd", "is missing"));
                long heads = HfConfig.integer(config, "n_head").orElseThrow(() -> badKey("n_head", "is missing"));
                long rows = heads > 0 && hidden % heads == 0 ? hidden + 2 * (hidden / heads) : -1;
                if (d.shape().rank() != 2 || d.shape().dim(0) != rows || d.shape().dim(1) != hidden) {
                    throw badKey("n_head", "is " + heads + " (heads of " + (heads > 0 ? hidden / heads : "?") + " in n_embd " + hidden
                            + "), but " + n + " has shape " + d.shape() + ", not the query and one key/value head [" + rows + ", "
                            + hidden + "]");
                }
            } else if (n.equals("wpe.weight") || n.equals("transformer.wpe.weight")) {
                expect(d, 1, "n_embd", "columns");
                expect(d, 0, config.containsKey("n_ctx") ? "n_ctx" : "n_positions", "rows (positions; llama.cpp reads as many as "
                        + "the context length)");
            } else if (n.endsWith("mlp.gate_proj.weight") || n.endsWith("mlp.up_proj.weight")) {
                expect(d, 0, "intermediate_size", "rows");
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("mlp.down_proj.weight")) {
                expect(d, 1, "intermediate_size", "columns");
            } else if (n.endsWith("block_sparse_moe.output_linear.weight") || n.endsWith("block_sparse_moe.router.layer.weight")
                    || n.endsWith("shared_mlp.output_linear.weight")) {
                graniteMoe(d);
            } else if (adjustedFeedForward.isPresent() && FEED_FORWARD_W1_W3.matcher(n).matches() && d.shape().rank() == 2
                    && d.shape().dim(0) != adjustedFeedForward.get()) {
                throw badKey("block_ff_dim", "gives a feed-forward width of " + adjustedFeedForward.get() + " (adjusted as the converter "
                        + "writes it), but " + n + " has " + d.shape().dim(0) + " rows; llama.cpp would not load the file");
            } else if (n.endsWith("self_attn.q_layernorm.weight") || n.endsWith("self_attn.k_layernorm.weight")) {
                // LFM2's per-head q/k norms
                headDim().ifPresent(h -> {
                    if (d.shape().rank() != 1 || d.shape().dim(0) != h) {
                        throw badKey("num_attention_heads", "gives heads of " + h + ", but " + n + " has shape " + d.shape()
                                + " (one weight per head element)");
                    }
                });
            } else if (n.endsWith("_layernorm.weight") || n.equals("model.norm.weight")) {
                expect(d, 0, "hidden_size", "elements");
            } else if (n.endsWith("self_attn.qkv_proj.weight")) {
                fusedQkvRows(d);
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("mlp.gate_up_proj.weight")) {
                Optional<Long> ff = HfConfig.integer(config, "intermediate_size");
                if (ff.isPresent() && d.shape().rank() == 2 && d.shape().dim(0) != 2 * ff.get()) {
                    throw MalformedFileException.inTensor(n, "has " + d.shape().dim(0) + " rows, but the fused gate and up "
                            + "projections of config.json intermediate_size " + ff.get() + " are " + 2 * ff.get());
                }
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("self_attn.q_proj.weight") || n.endsWith("self_attn.q_proj.bias")) {
                attentionRows(d, "num_attention_heads");
            } else if (KEY_VALUE_PROJECTION.matcher(n).matches()) {
                attentionRows(d, config.containsKey("num_key_value_heads") ? "num_key_value_heads" : "num_attention_heads");
            } else if (wholeQkNorms && (n.endsWith("self_attn.q_norm.weight") || n.endsWith("self_attn.k_norm.weight"))) {
                attentionRows(d, n.endsWith("q_norm.weight") || !config.containsKey("num_key_value_heads")
                        ? "num_attention_heads" : "num_key_value_heads");
            } else if (n.endsWith("self_attn.q_norm.weight") || n.endsWith("self_attn.k_norm.weight")) {
                headDim().ifPresent(h -> {
                    // one per head (Command R+'s [heads, head_dim]) or one for every head
                    boolean perHead = d.shape().rank() == 2 && d.shape().dim(1) == h
                            && HfConfig.integer(config, n.endsWith("q_norm.weight") || !config.containsKey("num_key_value_heads")
                            ? "num_attention_heads" : "num_key_value_heads").filter(x -> x == d.shape().dim(0)).isPresent();
                    if (!perHead && (d.shape().rank() != 1 || d.shape().dim(0) != h)) {
                        throw badKey(config.containsKey("head_dim") ? "head_dim" : "num_attention_heads", "gives heads of " + h
                                + ", but " + n + " has shape " + d.shape() + " (one weight per head element)");
                    }
                });
            }
        }

        /**
         * The fused q/k/v rows: {@code num_attention_heads + 2 x num_key_value_heads} heads of
         * {@code hidden_size / num_attention_heads} (what llama.cpp's phi3 takes apart).
         */
        private void fusedQkvRows(DenseTensor d) {
            Optional<Long> hidden = HfConfig.integer(config, "hidden_size"), heads = HfConfig.integer(config, "num_attention_heads"),
                    kv = HfConfig.integer(config, "num_key_value_heads");
            if (hidden.isEmpty() || heads.isEmpty() || kv.isEmpty() || heads.get() <= 0 || d.shape().rank() != 2) return;
            long headDim = hidden.get() / heads.get();
            long rows = (heads.get() + 2 * kv.get()) * headDim;
            if (d.shape().dim(0) != rows) {
                throw MalformedFileException.inTensor(d.name(), "has " + d.shape().dim(0) + " rows, but config.json's "
                        + "num_attention_heads " + heads.get() + " and num_key_value_heads " + kv.get() + " with heads of "
                        + headDim + " (hidden_size / num_attention_heads) make " + rows + " fused q, k, v rows");
            }
        }

        /**
         * DeepSeek's attention: every head's query is {@code qk_nope_head_dim + qk_rope_head_dim}
         * rows (through {@code q_lora_rank} when it is set), the compressed keys and values
         * {@code kv_lora_rank + qk_rope_head_dim}, the output reads {@code v_head_dim} per head.
         */
        private void latentAttention(DenseTensor d) {
            String n = d.name();
            if (d.shape().rank() == 0) return;
            long heads = positive(config, "num_attention_heads");
            long queryHead = positive(config, "qk_nope_head_dim") + positive(config, "qk_rope_head_dim");
            Optional<Long> qRank = HfConfig.integer(config, "q_lora_rank");
            if (n.endsWith("self_attn.q_proj.weight") || n.endsWith("self_attn.q_b_proj.weight")) {
                if (d.shape().dim(0) != heads * queryHead) {
                    throw badKey("num_attention_heads", "is " + heads + " with query heads of qk_nope_head_dim + qk_rope_head_dim = "
                            + queryHead + ", but " + n + " has " + d.shape().dim(0) + " rows");
                }
                if (n.endsWith("q_b_proj.weight")) qRank.ifPresent(r -> expectEqual(d, 1, r, "q_lora_rank", "columns"));
                else expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("self_attn.q_a_proj.weight")) {
                qRank.ifPresent(r -> expectEqual(d, 0, r, "q_lora_rank", "rows"));
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("self_attn.q_a_layernorm.weight")) {
                qRank.ifPresent(r -> expectEqual(d, 0, r, "q_lora_rank", "elements"));
            } else if (n.endsWith("self_attn.kv_a_proj_with_mqa.weight")) {
                expectEqual(d, 0, positive(config, "kv_lora_rank") + positive(config, "qk_rope_head_dim"), "kv_lora_rank",
                        "rows (kv_lora_rank + qk_rope_head_dim)");
                expect(d, 1, "hidden_size", "columns");
            } else if (n.endsWith("self_attn.kv_a_layernorm.weight")) {
                expectEqual(d, 0, positive(config, "kv_lora_rank"), "kv_lora_rank", "elements");
            } else if (n.endsWith("self_attn.o_proj.weight")) {
                expect(d, 0, "hidden_size", "rows");
                if (d.shape().rank() == 2) {
                    expectEqual(d, 1, heads * positive(config, "v_head_dim"), "v_head_dim", "columns (num_attention_heads x v_head_dim)");
                }
            }
        }

        private void expectEqual(DenseTensor d, int dim, long want, String key, String what) {
            if (d.shape().rank() <= dim || d.shape().dim(dim) != want) {
                throw badKey(key, "gives " + want + " " + what + ", but " + d.name() + " has shape " + d.shape());
            }
        }

        /** config.json {@code head_dim}, else {@code hidden_size / num_attention_heads}, when the config says. */
        private Optional<Long> headDim() {
            Optional<Long> h = HfConfig.integer(config, "head_dim");
            if (h.isPresent()) return h;
            Optional<Long> hidden = HfConfig.integer(config, "hidden_size"), heads = HfConfig.integer(config, "num_attention_heads");
            if (hidden.isEmpty() || heads.isEmpty() || heads.get() <= 0) return Optional.empty();
            return Optional.of(hidden.get() / heads.get());
        }

        /** q/k/v rows are {@code key} heads of {@link #headDim} each (what llama.cpp loads). */
        private void attentionRows(DenseTensor d, String key) {
            Optional<Long> heads = HfConfig.integer(config, key), h = headDim();
            if (heads.isEmpty() || h.isEmpty() || d.shape().rank() == 0) return;
            if (d.shape().dim(0) != heads.get() * h.get()) {
                throw badKey(key, "is " + heads.get() + " with heads of " + h.get() + (config.containsKey("head_dim") ? " (head_dim)" : "")
                        + ", but " + d.name() + " has " + d.shape().dim(0) + " rows");
            }
        }

        /** transformers 5's fused down projection of a block's experts: {@code [experts, hidden, width]}. */
        void fusedDown(DenseTensor d, Architecture.FusedExperts f) {
            long[] want = new long[3];
            List<String> keys = List.of(f.count(), "hidden_size", f.width());
            for (int i = 0; i < 3; i++) {
                String key = keys.get(i);
                want[i] = HfConfig.integer(config, key).orElseThrow(() -> badKey(key, "is missing (needed for " + d.name() + ")"));
            }
            if (!d.shape().equals(Shape.of(want))) {
                throw MalformedFileException.inTensor(d.name(), "has shape " + d.shape() + ", but config.json " + String.join(", ", keys)
                        + " make it " + Shape.of(want) + " (the block's experts' down projections)");
            }
        }

        /** Granite MoE's router {@code [E, hidden]}, experts' down projections {@code [E, hidden, I]} and shared one {@code [hidden, S]}. */
        private void graniteMoe(DenseTensor d) {
            String n = d.name();
            List<String> keys = n.endsWith("router.layer.weight") ? List.of("num_local_experts", "hidden_size")
                    : n.endsWith("shared_mlp.output_linear.weight") ? List.of("hidden_size", "shared_intermediate_size")
                    : List.of("num_local_experts", "hidden_size", "intermediate_size");
            long[] want = new long[keys.size()];
            for (int i = 0; i < want.length; i++) {
                String key = keys.get(i);
                want[i] = HfConfig.integer(config, key).orElseThrow(() -> badKey(key, "is missing (needed for " + n + ")"));
            }
            if (!d.shape().equals(Shape.of(want))) {
                throw MalformedFileException.inTensor(n, "has shape " + d.shape() + ", but config.json " + String.join(", ", keys)
                        + " make it " + Shape.of(want));
            }
        }

        private void expect(DenseTensor d, int dim, String key, String what) {
            Optional<Long> v = HfConfig.integer(config, key);
            if (v.isEmpty() || d.shape().rank() <= dim) return;
            if (d.shape().dim(dim) != v.get()) {
                throw badKey(key, "is " + v.get() + ", but " + d.name() + " has " + d.shape().dim(dim) + " " + what);
            }
        }

        /** The head count of a rope-permuted tensor, checked against its rows (and config.json head_dim). */
        long ropeHeads(DenseTensor d, boolean keyValue) {
            String key = keyValue && config.containsKey("num_key_value_heads") ? "num_key_value_heads" : "num_attention_heads";
            long heads = HfConfig.integer(config, key).orElseThrow(() -> badKey(key, "is missing (needed to reorder " + d.name() + ")"));
            long rows = d.shape().rank() == 0 ? 1 : d.shape().dim(0);
            if (heads <= 0 || rows % (2 * heads) != 0) {
                throw badKey(key, "is " + heads + ", but " + d.name() + " has " + rows + " rows, not two halves of each head");
            }
            Optional<Long> headDim = HfConfig.integer(config, "head_dim");
            if (headDim.isPresent() && rows / heads != headDim.get()) {
                throw badKey(key, "is " + heads + " and head_dim " + headDim.get() + ", but " + d.name() + " has " + rows + " rows");
            }
            return heads;
        }
    }
}
