#!/usr/bin/env python3
"""An independent forward pass of a Hugging Face BERT encoder folder (BertModel, BertForMaskedLM), to check what
`amn convert --to gguf` writes against what llama.cpp computes from it: the output of every token (the model's last
hidden states, llama.cpp's embeddings with pooling NONE) and the sentence embedding of the folder's pooling
(sentence-transformers' modules.json; llama.cpp's sequence embedding). NumPy only; written from BERT's description
(the original paper and Hugging Face's modeling conventions), not from amn's code or the converter's.

    python3 encoder_reference.py make bert DIR [--tokenizer DIR] [--seed N] [--pooling mean|cls] [--masked-lm] [--gamma-beta]
        a tiny random BERT folder: config.json (bert-base-uncased's keys: absolute positions, gelu, layer_norm_eps
        1e-12, type_vocab_size 2), model.safetensors (BF16): embeddings (word, position, token type, LayerNorm), 2
        layers (q/k/v, attention output and its LayerNorm, intermediate, output and its LayerNorm, all with biases),
        the pooler; hidden 64, 4 heads, intermediate 256, 64 positions. With --tokenizer, that folder's
        tokenizer.json, tokenizer_config.json and vocab.txt are copied and its vocabulary is the model's (30522 for
        bert-base-uncased's, which bert_uncased_tokenizer.py makes); else 512 tokens and no tokenizer. --pooling adds
        modules.json and 1_Pooling/config.json as sentence-transformers saves them. --masked-lm saves it as
        BertForMaskedLM does: every name under bert., the masked-language-model head (cls.predictions.*). --gamma-beta
        names the LayerNorms' parameters gamma and beta, as checkpoints of the first BERT releases do.
    python3 encoder_reference.py make nomic-bert DIR [--tokenizer DIR] [--seed N] [--pooling mean|cls]
        a tiny random NomicBertModel folder: config.json as nomic-embed-text-v1.5's (n_embd, n_head, n_inner, n_layer,
        n_positions 8192 over max_trained_positions 2048, rotary_emb_base 1000, swiglu, no biases, post-norm; the
        vocabulary padded to a multiple of 64), model.safetensors (BF16): word and token type embeddings, emb_ln, per
        layer attn.Wqkv (q, k, v in blocks), attn.out_proj, norm1, mlp.fc11 / fc12 / fc2, norm2; hidden 64, 4 heads,
        intermediate 192.
    python3 encoder_reference.py make xlm-roberta DIR --sp SENTENCEPIECE_MODEL [--seed N] [--pooling mean|cls] [--prefix]
        a tiny random XLMRobertaModel folder: config.json as xlm-roberta-base's (pad_token_id 1, positions from 2,
        max_position_embeddings 66, type_vocab_size 1, layer_norm_eps 1e-5), BERT's tensors (under roberta. with
        --prefix), the SentencePiece unigram model as sentencepiece.bpe.model, its vocabulary (pieces + 2: fairseq's
        shift of one and <mask>), a tokenizer.json with the added tokens and RobertaProcessing, tokenizer_config.json.
    python3 encoder_reference.py make distilbert DIR [--tokenizer DIR] [--seed N] [--pooling mean|cls] [--masked-lm]
        a tiny random DistilBertModel folder: config.json as distilbert-base-uncased's (dim, hidden_dim, n_heads,
        n_layers, activation gelu, no epsilon), its tensors (embeddings without token types; transformer.layer.N with
        q_lin/k_lin/v_lin/out_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm); --masked-lm saves it as
        DistilBertForMaskedLM does (distilbert. names, vocab_transform/vocab_layer_norm/vocab_projector).
    python3 encoder_reference.py compare DIR GGUF ORACLES [--tokens 101,7592,...] [--weights f32|f16] [--variant gelu-erf]
        (an EmbeddingGemma folder, decoder_reference.py make embeddinggemma's, is computed by decoder_reference.py's
        Gemma 3 attending both ways)
        llama.cpp's per-token outputs and pooled embedding of GGUF (the oracles' llama_ref.py library), against this
        forward pass of DIR, printed as max abs / max relative differences. llama.cpp's bert computes GELU's tanh
        approximation, which ggml's CPU code looks up in an F16 table: that is the default here; --variant gelu-tanh
        computes the approximation in full, --variant gelu-erf the exact GELU transformers computes; no-positions,
        no-token-types, kv-swapped, positions-from-0 (XLM-RoBERTa's rows not cut), interleaved-rope and gate-up-swapped
        (nomic-bert's) are deliberately wrong models, to see how far a mistake lands. --weights f16 rounds the matrices to F16 first (what a --dtype f16 GGUF holds).
"""
import argparse
import ctypes as C
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_reference import f16, gelu_tanh, layer_norm, read_safetensors, sentencepiece_pieces, write_folder  # noqa: E402


def wordpiece_vocab(tokenizer):
    """The vocabulary size of a folder made with TOKENIZER's tokenizer.json (its top id + 1), or 512 without one."""
    if not tokenizer:
        return 512
    tj = json.load(open(os.path.join(tokenizer, "tokenizer.json"), encoding="utf-8"))
    return max(tj["model"]["vocab"].values()) + 1


def bert_tensors(w, vocab, hidden, layers, inter, positions, types, g="weight", b="bias"):
    """BERT's tensors (embeddings, the pooler, each layer's attention and MLP with their LayerNorms, parameters named g
    and b), each drawn by w(*shape, s=scale) in one fixed order."""
    t = {"embeddings.word_embeddings.weight": w(vocab, hidden, s=0.5),
         "embeddings.position_embeddings.weight": w(positions, hidden, s=0.3),
         "embeddings.token_type_embeddings.weight": w(types, hidden, s=0.3),
         f"embeddings.LayerNorm.{g}": 1 + w(hidden, s=0.2), f"embeddings.LayerNorm.{b}": w(hidden, s=0.1),
         "pooler.dense.weight": w(hidden, hidden), "pooler.dense.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            t[p + f"attention.self.{n}.weight"], t[p + f"attention.self.{n}.bias"] = w(hidden, hidden), w(hidden, s=0.2)
        t[p + "attention.output.dense.weight"], t[p + "attention.output.dense.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + f"attention.output.LayerNorm.{g}"], t[p + f"attention.output.LayerNorm.{b}"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = w(inter, hidden), w(inter, s=0.3)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = w(hidden, inter), w(hidden, s=0.1)
        t[p + f"output.LayerNorm.{g}"], t[p + f"output.LayerNorm.{b}"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
    return t


def make_bert(out, tokenizer=None, seed=0, pooling=None, masked_lm=False, gamma_beta=False):
    rng = np.random.default_rng(seed)
    vocab = wordpiece_vocab(tokenizer)
    hidden, layers, heads, inter, positions = 64, 2, 4, 256, 64
    arch = "BertForMaskedLM" if masked_lm else "BertModel"
    config = {"architectures": [arch], "model_type": "bert", "vocab_size": vocab, "hidden_size": hidden,
              "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": inter,
              "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": positions, "type_vocab_size": 2, "initializer_range": 0.02,
              "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute", "use_cache": True,
              "classifier_dropout": None, "torch_dtype": "float32", "transformers_version": "4.41.2"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    g, b = ("gamma", "beta") if gamma_beta else ("weight", "bias")
    t = bert_tensors(w, vocab, hidden, layers, inter, positions, 2, g, b)
    if masked_lm:
        t = {"bert." + k: v for k, v in t.items() if not k.startswith("pooler.")}
        t["cls.predictions.bias"] = w(vocab, s=0.1)
        t["cls.predictions.transform.dense.weight"], t["cls.predictions.transform.dense.bias"] = w(hidden, hidden), w(hidden)
        t[f"cls.predictions.transform.LayerNorm.{g}"], t[f"cls.predictions.transform.LayerNorm.{b}"] = 1 + w(hidden), w(hidden)
    write_folder(out, t, config, tokenizer=tokenizer)
    if tokenizer and os.path.exists(os.path.join(tokenizer, "vocab.txt")):
        with open(os.path.join(tokenizer, "vocab.txt"), "rb") as a, open(os.path.join(out, "vocab.txt"), "wb") as c:
            c.write(a.read())
    write_pooling(out, pooling, hidden)


def make_xlm_roberta(out, sp_model, seed=0, pooling=None, prefix=False, reranker=False):
    rng = np.random.default_rng(seed)
    pieces = sentencepiece_pieces(sp_model)
    vocab = len(pieces) + 2
    hidden, layers, heads, inter, positions = 64, 2, 4, 256, 66
    config = {"architectures": ["XLMRobertaModel"], "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
              "classifier_dropout": None, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter, "layer_norm_eps": 1e-05,
              "max_position_embeddings": positions, "model_type": "xlm-roberta", "num_attention_heads": heads,
              "num_hidden_layers": layers, "output_past": True, "pad_token_id": 1, "position_embedding_type": "absolute",
              "torch_dtype": "float32", "transformers_version": "4.41.2", "type_vocab_size": 1, "use_cache": True,
              "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = bert_tensors(w, vocab, hidden, layers, inter, positions, 1)
    if prefix or reranker:
        t = {"roberta." + k: v for k, v in t.items()}
    if reranker:
        # XLMRobertaForSequenceClassification (bge-reranker's layout): no pooler, a classification head of one label
        t = {k: v for k, v in t.items() if ".pooler." not in k}
        t["classifier.dense.weight"], t["classifier.dense.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t["classifier.out_proj.weight"], t["classifier.out_proj.bias"] = w(1, hidden, s=0.5), w(1, s=0.1)
        config = dict(config, architectures=["XLMRobertaForSequenceClassification"], id2label={"0": "LABEL_0"},
                      label2id={"LABEL_0": 0})
    write_folder(out, t, config)
    with open(sp_model, "rb") as a, open(os.path.join(out, "sentencepiece.bpe.model"), "wb") as c:
        c.write(a.read())
    # fairseq's ids: <s> <pad> </s> <unk>, then piece j (from 3) at j + 1, <mask> last
    specials = [("<s>", 0), ("<pad>", 1), ("</s>", 2), ("<unk>", 3), ("<mask>", vocab - 1)]
    model_vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]] + [[p, s] for p, s in pieces[3:]] + [["<mask>", 0.0]]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None,
                 "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": c == "<mask>", "rstrip": False,
                                   "normalized": False, "special": True} for c, i in specials],
                 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": ""},
                                                                    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
                 "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
                 "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True,
                                    "add_prefix_space": True},
                 "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
                 "model": {"type": "Unigram", "unk_id": 3, "vocab": model_vocab, "byte_fallback": False}}
    json.dump(tokenizer, open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)
    json.dump({"bos_token": "<s>", "clean_up_tokenization_spaces": True, "cls_token": "<s>", "eos_token": "</s>",
               "mask_token": "<mask>", "model_max_length": 512, "pad_token": "<pad>", "sep_token": "</s>",
               "tokenizer_class": "XLMRobertaTokenizer", "unk_token": "<unk>"},
              open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
    write_pooling(out, pooling, hidden)


def make_distilbert(out, tokenizer=None, seed=0, pooling=None, masked_lm=False):
    rng = np.random.default_rng(seed)
    vocab = wordpiece_vocab(tokenizer)
    hidden, layers, heads, inter, positions = 64, 2, 4, 256, 64
    arch = "DistilBertForMaskedLM" if masked_lm else "DistilBertModel"
    config = {"activation": "gelu", "architectures": [arch], "attention_dropout": 0.1, "dim": hidden, "dropout": 0.1,
              "hidden_dim": inter, "initializer_range": 0.02, "max_position_embeddings": positions, "model_type": "distilbert",
              "n_heads": heads, "n_layers": layers, "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
              "sinusoidal_pos_embds": False, "tie_weights_": True, "torch_dtype": "float32", "transformers_version": "4.41.2",
              "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"embeddings.word_embeddings.weight": w(vocab, hidden, s=0.5),
         "embeddings.position_embeddings.weight": w(positions, hidden, s=0.3),
         "embeddings.LayerNorm.weight": 1 + w(hidden, s=0.2), "embeddings.LayerNorm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"transformer.layer.{i}."
        for n in ("q_lin", "k_lin", "v_lin", "out_lin"):
            t[p + f"attention.{n}.weight"], t[p + f"attention.{n}.bias"] = w(hidden, hidden), w(hidden, s=0.2)
        for n in ("sa_layer_norm", "output_layer_norm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "ffn.lin1.weight"], t[p + "ffn.lin1.bias"] = w(inter, hidden), w(inter, s=0.3)
        t[p + "ffn.lin2.weight"], t[p + "ffn.lin2.bias"] = w(hidden, inter), w(hidden, s=0.1)
    if masked_lm:
        t = {"distilbert." + k: v for k, v in t.items()}
        t["vocab_transform.weight"], t["vocab_transform.bias"] = w(hidden, hidden), w(hidden)
        t["vocab_layer_norm.weight"], t["vocab_layer_norm.bias"] = 1 + w(hidden), w(hidden)
        t["vocab_projector.bias"] = w(vocab)
    write_folder(out, t, config, tokenizer=tokenizer)
    write_pooling(out, pooling, hidden)


def make_nomic_bert(out, tokenizer=None, seed=0, pooling=None):
    rng = np.random.default_rng(seed)
    vocab = (wordpiece_vocab(tokenizer) + 63) // 64 * 64   # nomic pads its vocabulary to a multiple of 64
    hidden, layers, heads, inter = 64, 2, 4, 192
    config = {"activation_function": "swiglu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
              "auto_map": {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
                           "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"},
              "bos_token_id": None, "causal": False, "dense_seq_output": True, "embd_pdrop": 0.0, "eos_token_id": None,
              "fused_bias_fc": True, "fused_dropout_add_ln": True, "initializer_range": 0.02, "layer_norm_epsilon": 1e-12,
              "max_trained_positions": 2048, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "model_type": "nomic_bert",
              "n_embd": hidden, "n_head": heads, "n_inner": inter, "n_layer": layers, "n_positions": 8192,
              "pad_vocab_size_multiple": 64, "parallel_block": False, "parallel_block_tied_norm": False, "prenorm": False,
              "qkv_proj_bias": False, "reorder_and_upcast_attn": False, "resid_pdrop": 0.0, "rotary_emb_base": 1000,
              "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_emb_scale_base": None,
              "rotary_scaling_factor": None, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
              "summary_activation": None, "summary_first_dropout": 0.0, "summary_proj_to_labels": True,
              "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
              "transformers_version": "4.34.0", "type_vocab_size": 2, "use_cache": True, "use_flash_attn": True,
              "use_rms_norm": False, "use_xentropy": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"embeddings.word_embeddings.weight": w(vocab, hidden, s=0.5), "embeddings.token_type_embeddings.weight": w(2, hidden, s=0.3),
         "emb_ln.weight": 1 + w(hidden, s=0.2), "emb_ln.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"encoder.layers.{i}."
        t[p + "attn.Wqkv.weight"] = w(3 * hidden, hidden)
        t[p + "attn.out_proj.weight"] = w(hidden, hidden)
        t[p + "mlp.fc11.weight"], t[p + "mlp.fc12.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.fc2.weight"] = w(hidden, inter)
        for n in ("norm1", "norm2"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)
    write_pooling(out, pooling, hidden)


def write_pooling(out, pooling, hidden):
    """modules.json and 1_Pooling/config.json as sentence-transformers saves them, when a pooling is asked for."""
    if not pooling:
        return
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    json.dump(modules, open(os.path.join(out, "modules.json"), "w"), indent=2)
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    json.dump({"word_embedding_dimension": hidden, "pooling_mode_cls_token": pooling == "cls",
               "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": False, "include_prompt": True},
              open(os.path.join(out, "1_Pooling", "config.json"), "w"), indent=2)


def nomic_bert_forward(cfg, W, toks, weights="f32", variant=None):
    """NomicBertModel's last hidden states (token type 0, no padding) in float64, as its remote code computes them with
    prenorm false: word + token type 0 embeddings, emb_ln; per layer Wqkv's output as q, k, v blocks of heads, the
    rotate-half rope over whole heads (base rotary_emb_base), softmax(q k^T / sqrt(d)) v both ways, out_proj,
    norm1(x + that); norm2(h + fc2(fc11(h) * silu(fc12(h)))). --variant interleaved-rope rotates adjacent pairs,
    gate-up-swapped takes fc11 as the gate."""
    H, hidden = cfg["n_head"], cfg["n_embd"]
    d = hidden // H
    eps = cfg.get("layer_norm_epsilon", 1e-12)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 and "token_type" not in k else v) for k, v in W.items()}
    T = len(toks)
    inv = float(cfg["rotary_emb_base"]) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def rope(x):
        if variant == "interleaved-rope":
            a, b = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
            return out
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    def ln(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    x = W["embeddings.word_embeddings.weight"][np.array(toks)] + W["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "emb_ln")
    for i in range(cfg["n_layer"]):
        p = f"encoder.layers.{i}."
        qkv = x @ W[p + "attn.Wqkv.weight"].T
        q, k, v = (y.reshape(T, H, d) for y in np.split(qkv, 3, axis=-1))
        q, k = rope(q), rope(k)
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = np.einsum("htu,uhd->thd", s, v).reshape(T, hidden)
        x = ln(x + a @ W[p + "attn.out_proj.weight"].T, p + "norm1")
        up, gate = x @ W[p + "mlp.fc11.weight"].T, x @ W[p + "mlp.fc12.weight"].T
        if variant == "gate-up-swapped":
            up, gate = gate, up
        x = ln(x + (up * (gate / (1 + np.exp(-gate)))) @ W[p + "mlp.fc2.weight"].T, p + "norm2")
    return x


def bert_forward(cfg, W, toks, weights="f32", variant=None):
    """The last hidden states of BertModel (token type 0 everywhere, no padding) in float64: word + position + token
    type 0 embeddings, LayerNorm; per layer softmax(q k^T / sqrt(d)) v over all tokens (both ways), its output dense,
    LayerNorm(x + that); LayerNorm(h + output(gelu(intermediate(h)))). The LayerNorm parameters under either name."""
    from math import erf
    W = {k.removeprefix("bert.").removeprefix("roberta.").replace(".gamma", ".weight").replace(".beta", ".bias"): v
         for k, v in W.items()}
    if cfg["architectures"][0].startswith("DistilBert"):
        # DistilBERT's names and keys as BERT's; it has no token type embeddings
        names = [("distilbert.", ""), ("transformer.layer.", "encoder.layer."), ("attention.q_lin", "attention.self.query"),
                 ("attention.k_lin", "attention.self.key"), ("attention.v_lin", "attention.self.value"),
                 ("attention.out_lin", "attention.output.dense"), ("sa_layer_norm", "attention.output.LayerNorm"),
                 ("ffn.lin1", "intermediate.dense"), ("ffn.lin2", "output.dense"), ("output_layer_norm", "output.LayerNorm")]
        renamed = {}
        for k, v in W.items():
            for a, b in names:
                k = k.replace(a, b)
            renamed[k] = v
        W = renamed
        W["embeddings.token_type_embeddings.weight"] = np.zeros((1, cfg["dim"]))
        cfg = dict(cfg, num_attention_heads=cfg["n_heads"], hidden_size=cfg["dim"], num_hidden_layers=cfg["n_layers"],
                   layer_norm_eps=1e-12)
    # RoBERTa's positions start past the padding id (no token here is padding)
    offset = cfg.get("pad_token_id", 0) + 1 if cfg["architectures"][0].startswith("XLMRoberta") else 0
    if variant == "positions-from-0":
        offset = 0
    H, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    d = hidden // H
    eps = cfg.get("layer_norm_eps", 1e-12)
    if weights == "f16":
        keep = ("position_embeddings", "token_type_embeddings")
        W = {k: (f16(v) if v.ndim == 2 and not any(s in k for s in keep) else v) for k, v in W.items()}
    T = len(toks)

    def ln(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def dense(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    def gelu(x):
        if variant == "gelu-erf":
            return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
        if variant == "gelu-tanh":
            return gelu_tanh(x)
        # ggml's CPU GELU: the tanh approximation looked up in an F16 table by the F16 of x, below |x| 10
        return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))

    x = W["embeddings.word_embeddings.weight"][np.array(toks)]
    if variant != "no-positions":
        x = x + W["embeddings.position_embeddings.weight"][offset:offset + T]
    if variant != "no-token-types":
        x = x + W["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(x, p + f"attention.self.{n}").reshape(T, H, d) for n in ("query", "key", "value"))
        if variant == "kv-swapped":
            k, v = v, k
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = np.einsum("htu,uhd->thd", s, v).reshape(T, hidden)
        x = ln(x + dense(a, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        x = ln(x + dense(gelu(dense(x, p + "intermediate.dense")), p + "output.dense"), p + "output.LayerNorm")
    return x


def pooling_of(folder):
    path = os.path.join(folder, "modules.json")
    if not os.path.exists(path):
        return None
    for m in json.load(open(path)):
        if m["type"] == "sentence_transformers.models.Pooling":
            c = json.load(open(os.path.join(folder, m["path"], "config.json")))
            return "mean" if c["pooling_mode_mean_tokens"] else "cls" if c["pooling_mode_cls_token"] else None
    return None


def llama_embeddings(gguf, toks, oracles, kinds):
    """llama.cpp's outputs of toks as one sequence, the model loaded once and a context made for each of kinds:
    "tokens" each token's (LLAMA_POOLING_TYPE_NONE), "pooled" the sequence's (the model's pooling), "rank" the reranking
    head's score (LLAMA_POOLING_TYPE_RANK). Returns {kind: float64 array}."""
    sys.path.insert(0, oracles)
    import llama_ref  # noqa: E402
    ll = llama_ref.Llama.get()
    L = ll.lib
    L.llama_get_embeddings_ith.restype = C.POINTER(C.c_float)
    L.llama_get_embeddings_ith.argtypes = [C.c_void_p, C.c_int32]
    L.llama_get_embeddings_seq.restype = C.POINTER(C.c_float)
    L.llama_get_embeddings_seq.argtypes = [C.c_void_p, C.c_int32]
    L.llama_model_n_embd.restype = C.c_int32
    L.llama_model_n_embd.argtypes = [C.c_void_p]
    mp = llama_ref.LlamaModelParams.from_buffer_copy(bytes(ll.defaults["llama_model_default_params"]))
    mp.n_gpu_layers, mp.load_mode, mp.use_extra_bufts, mp.check_tensors = 0, 0, False, True
    start = len(ll.log)
    model = L.llama_model_load_from_file(gguf.encode(), mp)
    if not model:
        raise RuntimeError(f"llama.cpp could not load {gguf}:\n" + "".join(ll.log[start:])[-4000:])
    n, e = len(toks), L.llama_model_n_embd(model)
    out = {}
    try:
        for kind in kinds:
            cp = llama_ref.LlamaContextParams.from_buffer_copy(bytes(ll.defaults["llama_context_default_params"]))
            cp.n_ctx = cp.n_batch = cp.n_ubatch = max(64, n)
            cp.n_threads = cp.n_threads_batch = 2
            cp.flash_attn_type = 0
            cp.no_perf = True
            cp.embeddings = True
            cp.pooling_type = {"tokens": 0, "pooled": -1, "rank": 4}[kind]
            ctx = L.llama_init_from_model(model, cp)
            if not ctx:
                raise RuntimeError("llama_init_from_model failed:\n" + "".join(ll.log[start:])[-4000:])
            try:
                arr = (C.c_int32 * n)(*toks)
                rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, n))
                if rc != 0:
                    raise RuntimeError(f"llama_decode returned {rc}:\n" + "".join(ll.log[start:])[-4000:])
                L.llama_synchronize(ctx)
                if kind == "tokens":
                    out[kind] = np.stack([np.ctypeslib.as_array(L.llama_get_embeddings_ith(ctx, i), shape=(e,))
                                          .astype(np.float64).copy() for i in range(n)])
                else:
                    width = 1 if kind == "rank" else e
                    out[kind] = np.ctypeslib.as_array(L.llama_get_embeddings_seq(ctx, 0), shape=(width,)).astype(np.float64).copy()
            finally:
                L.llama_free(ctx)
    finally:
        L.llama_model_free(model)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("arch", choices=["bert", "nomic-bert", "xlm-roberta", "distilbert"])
    m.add_argument("--sp")
    m.add_argument("--prefix", action="store_true")
    m.add_argument("--reranker", action="store_true", help="xlm-roberta: XLMRobertaForSequenceClassification's head")
    m.add_argument("dir")
    m.add_argument("--tokenizer")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--pooling", choices=["mean", "cls"])
    m.add_argument("--masked-lm", action="store_true")
    m.add_argument("--gamma-beta", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("gguf")
    c.add_argument("oracles")
    c.add_argument("--tokens", default="101,7,42,100,3,250,17,64,5,9,200,102")
    c.add_argument("--weights", choices=["f32", "f16"], default="f32")
    c.add_argument("--variant", choices=["gelu-erf", "gelu-tanh", "no-positions", "no-token-types", "kv-swapped",
                                         "interleaved-rope", "gate-up-swapped", "positions-from-0", "causal",
                                         "no-window"])
    a = ap.parse_args()
    if a.cmd == "make":
        if a.arch == "xlm-roberta" and a.reranker:
            make_xlm_roberta(a.dir, a.sp, a.seed, a.pooling, a.prefix, reranker=True)
        elif a.arch == "distilbert":
            make_distilbert(a.dir, a.tokenizer, a.seed, a.pooling, a.masked_lm)
        elif a.arch == "xlm-roberta":
            make_xlm_roberta(a.dir, a.sp, a.seed, a.pooling, a.prefix)
        elif a.arch == "nomic-bert":
            make_nomic_bert(a.dir, a.tokenizer, a.seed, a.pooling)
        else:
            make_bert(a.dir, a.tokenizer, a.seed, a.pooling, a.masked_lm, a.gamma_beta)
        return
    toks = [int(t) for t in a.tokens.split(",")]
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    W = {}
    for f in sorted(f for f in os.listdir(a.dir) if f.endswith(".safetensors")):
        W.update(read_safetensors(os.path.join(a.dir, f)))
    if cfg["architectures"][0] == "Gemma3TextModel":
        # EmbeddingGemma: decoder_reference.py's Gemma 3 attending both ways (ggml's F16 GELU table modelled; no cache)
        import decoder_reference
        want = decoder_reference.forward(a.dir, toks, a.weights, "f16", variant=a.variant)[1]
    else:
        forward = nomic_bert_forward if cfg["architectures"][0] == "NomicBertModel" else bert_forward
        want = forward(cfg, W, toks, a.weights, a.variant)
    rank = cfg["architectures"][0].endswith("ForSequenceClassification")
    pooling = pooling_of(a.dir)
    llama = llama_embeddings(a.gguf, toks, a.oracles, ["tokens"] + (["rank"] if rank else []) + (["pooled"] if pooling else []))
    got = llama["tokens"]
    diff = np.abs(got - want)
    res = {"gguf": os.path.basename(a.gguf), "tokens": toks, "variant": a.variant, "weights": a.weights,
           "tokens_max_abs_diff": float(diff.max()), "tokens_max_rel_diff": float(diff.max() / np.abs(want).max())}
    if rank:
        # RobertaClassificationHead on the first token: out_proj(tanh(dense(x)))
        Wh = {k: (f16(v) if a.weights == "f16" and v.ndim == 2 else v) for k, v in W.items()}
        h = np.tanh(want[0] @ Wh["classifier.dense.weight"].T + Wh["classifier.dense.bias"])
        score = h @ Wh["classifier.out_proj.weight"].T + Wh["classifier.out_proj.bias"]
        got_score = llama["rank"]
        res.update({"rank_score": float(got_score[0]), "rank_score_reference": float(score[0]),
                    "rank_abs_diff": float(abs(got_score[0] - score[0]))})
    if pooling:
        want_pooled = want.mean(0) if pooling == "mean" else want[0]
        got_pooled = llama["pooled"]
        d = np.abs(got_pooled - want_pooled)
        res.update({"pooling": pooling, "pooled_max_abs_diff": float(d.max()),
                    "pooled_max_rel_diff": float(d.max() / np.abs(want_pooled).max())})
    print(json.dumps(res))


if __name__ == "__main__":
    main()
