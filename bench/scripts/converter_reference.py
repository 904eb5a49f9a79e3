#!/usr/bin/env python3
"""Runs llama.cpp's own convert_hf_to_gguf.py on a Hugging Face folder, with the vocabulary
step left out, so that what `amn convert --to gguf --no-vocab` writes can be compared with
it tensor for tensor and key for key. Nothing of the converter is copied here: it is
imported from CONVERTER_DIR (a folder holding convert_hf_to_gguf.py and gguf-py/, e.g.
exported from a llama.cpp checkout with `git show COMMIT:convert_hf_to_gguf.py` and
`git archive COMMIT gguf-py | tar -x`).

    python3 converter_reference.py convert CONVERTER_DIR MODEL_DIR OUT.gguf OUTTYPE [MODEL_DIR OUT.gguf OUTTYPE]...
        OUTTYPE one of f32, f16, bf16, q8_0, auto (the converter's --outtype). Writes each
        OUT.gguf (one process for all: torch is imported once) and prints nothing; a
        conversion that fails is reported on standard error ("FAILED OUT.gguf: why"), the
        others still run, and the exit status is 1.
    python3 converter_reference.py compare CONVERTER_DIR EXPECTED.gguf ACTUAL.gguf
        reads both with gguf-py's GGUFReader and prints one line per difference (key order,
        key type, key value, tensor order, name, ggml type, shape, bytes), then "identical"
        or "N differences"; exit status 0 only when identical. tokenizer.* keys are skipped.

What is stubbed, and why it does not touch what is compared:

- `transformers` (not installed here; stubbed even when it is, unless
  CONVERTER_REFERENCE_TRANSFORMERS=1, so that the result does not depend on its version).
  The converter imports `AutoConfig` and, in `ModelBase.load_hparams`, falls back to
  reading config.json as it is when `AutoConfig.from_pretrained` raises: the stub's
  `from_pretrained` raises, so the converter's hyper-parameters are config.json's keys,
  without the defaults a transformers config class would add (docs/hf-to-gguf.md says
  which matter). `AutoTokenizer` is only used by the vocabulary code, which does not run.
- The vocabulary: the model class's `set_vocab` (and that of a model class nested in it, to
  which it hands the work, as `Mistral3Model` does) (called last in
  `TextModel.prepare_metadata`, after every hyper-parameter and
  `general.quantization_version`) is replaced by one that writes
  `tokenizer.ggml.model = none`, as the converter's own `_set_vocab_none` does and as
  `amn convert --no-vocab` does, so that the whole files can be compared byte for byte.
  Everything `set_vocab` writes in the real converter is a `tokenizer.*` key. With
  CONVERTER_REFERENCE_VOCAB=1 the family's own `set_vocab` runs instead, for the vocabularies it
  reads without transformers (XLM-RoBERTa's sentencepiece.bpe.model, through the sentencepiece
  and protobuf packages), so that the whole files can be compared, vocabulary and all.
- torch older than 2.3 (Debian's 1.13 here; the converter's requirements pin 2.6) has no
  `uint16`/`uint32`/`uint64` and no `float8_e4m3fn`/`float8_e5m2`, which the converter
  names only as keys of its dtype tables (for byte swapping and for U16..U64 or FP8
  safetensors); each missing one is given a placeholder that matches no tensor. The
  folders compared hold F32, BF16 or F16 tensors, and U8 ones (gpt-oss's MXFP4 blocks and
  scales, which the converter repacks as bytes).
- `tqdm` (the progress bar of `write_tensors_to_file`) is replaced by a silent one when it
  is not installed.
- `safetensors` (its torch `load_file`, which EmbeddingGemma's `generate_extra_tensors` imports
  and calls only for the Dense modules of `--sentence-transformers-dense-modules`, a flag not
  given here) by a module whose `load_file` fails, when it is not installed.
- Logging is silenced below errors.
"""
import logging
import os
import sys
import types
from pathlib import Path


def _stub_modules():
    real = os.environ.get("CONVERTER_REFERENCE_TRANSFORMERS") == "1"
    if "transformers" not in sys.modules:
        try:
            if not real:
                raise ImportError("config.json as it is")
            import transformers  # noqa: F401
        except ImportError:
            t = types.ModuleType("transformers")

            class AutoConfig:
                @staticmethod
                def from_pretrained(*args, **kwargs):
                    raise OSError("transformers is not installed (converter_reference.py stub)")

            class AutoTokenizer:
                @staticmethod
                def from_pretrained(*args, **kwargs):
                    raise OSError("transformers is not installed (converter_reference.py stub)")

            t.AutoConfig = AutoConfig
            t.AutoTokenizer = AutoTokenizer
            sys.modules["transformers"] = t
    try:
        import tqdm  # noqa: F401
    except ImportError:
        q = types.ModuleType("tqdm")

        class tqdm:
            def __init__(self, *args, **kwargs):
                pass

            def update(self, n=1):
                pass

            def close(self):
                pass

            def set_description(self, *args, **kwargs):
                pass

        q.tqdm = tqdm
        sys.modules["tqdm"] = q
    try:
        import safetensors.torch  # noqa: F401
    except ImportError:
        # EmbeddingGemma's generate_extra_tensors imports safetensors.torch.load_file before it looks at any
        # sentence-transformers Dense module, which it reads only with --sentence-transformers-dense-modules
        st = types.ModuleType("safetensors")
        st_torch = types.ModuleType("safetensors.torch")

        def load_file(*args, **kwargs):
            raise OSError("safetensors is not installed (converter_reference.py stub)")

        st_torch.load_file = load_file
        st.torch = st_torch
        sys.modules["safetensors"] = st
        sys.modules["safetensors.torch"] = st_torch


class _MissingDtype:
    """A torch dtype this torch lacks: a dictionary key that no tensor's dtype equals."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<torch.{self.name}: not in this torch>"


def _stub_torch_dtypes():
    import torch
    for name in ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, _MissingDtype(name))


def _import_converter(converter_dir):
    converter_dir = Path(converter_dir).resolve()
    if not (converter_dir / "convert_hf_to_gguf.py").is_file():
        raise SystemExit(f"{converter_dir}: no convert_hf_to_gguf.py")
    sys.path.insert(0, str(converter_dir / "gguf-py"))
    sys.path.insert(0, str(converter_dir))
    _stub_modules()
    _stub_torch_dtypes()
    import convert_hf_to_gguf as conv
    return conv


def _no_vocab(self):
    self.gguf_writer.add_tokenizer_model("none")


def convert(converter_dir, jobs):
    conv = _import_converter(converter_dir)
    # before the converter's main() configures logging (basicConfig does nothing once a handler is there)
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    logging.getLogger().setLevel(logging.ERROR)
    failed = 0
    for model_dir, out, outtype in jobs:
        try:
            # the class main() will pick, as it picks it
            hparams = conv.ModelBase.load_hparams(Path(model_dir), False)
            arch = conv.get_model_architecture(hparams, conv.ModelType.TEXT)
            model_class = conv.ModelBase.from_model_architecture(arch, model_type=conv.ModelType.TEXT)
            if os.environ.get("CONVERTER_REFERENCE_VOCAB") != "1":
                model_class.set_vocab = _no_vocab
                # a class that hands its work to a nested one (Mistral3Model's Ministral3Model): that one's too
                for nested in vars(model_class).values():
                    if isinstance(nested, type) and issubclass(nested, conv.ModelBase):
                        nested.set_vocab = _no_vocab
            sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", str(out), "--outtype", outtype]
            conv.main()
        except BaseException as e:  # SystemExit too: main() exits on an unsupported model
            failed += 1
            print(f"FAILED {out}: {type(e).__name__}: {e}", file=sys.stderr)
    return 1 if failed else 0


def _field_value(field):
    """A key's value as (its type ids, the bytes of each of its value parts) from GGUFReader's field."""
    import numpy as np
    return [int(t) for t in field.types], [np.asarray(field.parts[i]).tobytes() for i in field.data]


def compare(converter_dir, expected, actual):
    converter_dir = Path(converter_dir).resolve()
    sys.path.insert(0, str(converter_dir / "gguf-py"))
    import numpy as np
    from gguf import GGUFReader

    e, a = GGUFReader(expected), GGUFReader(actual)
    diffs = []

    def keys(r):
        return [k for k in r.fields if not k.startswith("tokenizer.") and not k.startswith("GGUF.")]

    ek, ak = keys(e), keys(a)
    if ek != ak:
        diffs.append(f"key order: expected {ek}, actual {ak}")
    for k in ek:
        if k not in a.fields:
            diffs.append(f"key {k}: missing")
            continue
        et, ev = _field_value(e.fields[k])
        at, av = _field_value(a.fields[k])
        if et != at:
            diffs.append(f"key {k}: type {et}, actual {at}")
        elif ev != av:
            diffs.append(f"key {k}: value {e.fields[k].contents()!r}, actual {a.fields[k].contents()!r}")
    for k in ak:
        if k not in e.fields:
            diffs.append(f"key {k}: not in the expected file (value {a.fields[k].contents()!r})")
    for k in ("GGUF.version", "GGUF.tensor_count"):
        if k in e.fields and k in a.fields and e.fields[k].contents() != a.fields[k].contents():
            diffs.append(f"header {k}: {e.fields[k].contents()}, actual {a.fields[k].contents()}")

    en = [t.name for t in e.tensors]
    an = [t.name for t in a.tensors]
    if en != an:
        diffs.append(f"tensor order: expected {en}, actual {an}")
    at_ = {t.name: t for t in a.tensors}
    for t in e.tensors:
        u = at_.get(t.name)
        if u is None:
            diffs.append(f"tensor {t.name}: missing")
            continue
        if t.tensor_type != u.tensor_type:
            diffs.append(f"tensor {t.name}: type {t.tensor_type.name}, actual {u.tensor_type.name}")
            continue
        if list(t.shape) != list(u.shape):
            diffs.append(f"tensor {t.name}: shape {list(t.shape)}, actual {list(u.shape)}")
            continue
        if t.data_offset - e.data_offset != u.data_offset - a.data_offset:
            diffs.append(f"tensor {t.name}: offset {t.data_offset - e.data_offset}, actual {u.data_offset - a.data_offset}")
        eb, ab = np.asarray(t.data).tobytes(), np.asarray(u.data).tobytes()
        if eb != ab:
            n = sum(1 for x, y in zip(eb, ab) if x != y)
            first = next(i for i, (x, y) in enumerate(zip(eb, ab)) if x != y) if n else min(len(eb), len(ab))
            diffs.append(f"tensor {t.name} ({t.tensor_type.name}): {n} of {len(eb)} bytes differ, first at byte {first}")
    for name in an:
        if name not in set(en):
            diffs.append(f"tensor {name}: not in the expected file")

    for d in diffs:
        print(d)
    same_file = Path(expected).read_bytes() == Path(actual).read_bytes()
    if diffs:
        print(f"{len(diffs)} differences")
        return 1
    print("identical" + (" (whole file byte for byte)" if same_file else " (tokenizer.* keys aside)"))
    return 0


def main(argv):
    if len(argv) >= 6 and (len(argv) - 3) % 3 == 0 and argv[1] == "convert":
        args = argv[3:]
        return convert(argv[2], [tuple(args[i:i + 3]) for i in range(0, len(args), 3)])
    if len(argv) == 5 and argv[1] == "compare":
        return compare(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
