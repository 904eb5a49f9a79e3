#!/usr/bin/env python3
"""llama.cpp's own tokenizer on a GGUF's vocabulary: llama_tokenize() of libllama, through the
oracles' llama_ref.py (its library, its struct checks).

    ORACLE_CACHE=... python3 llama_tokenize.py ORACLES_DIR MODEL.gguf < strings.json

strings.json is a JSON list of strings; prints a JSON list of token-id lists, each with the
special tokens llama.cpp adds (add_special) and special tokens in the text parsed as such
(parse_special), which is what a Hugging Face tokenizer's encode(text) does.
"""
import ctypes as C
import json
import sys

sys.path.insert(0, sys.argv[1])
import llama_ref  # noqa: E402

lib = llama_ref.Llama.get()
L = lib.lib
L.llama_tokenize.restype = C.c_int32
L.llama_tokenize.argtypes = [C.c_void_p, C.c_char_p, C.c_int32, C.POINTER(C.c_int32), C.c_int32, C.c_bool, C.c_bool]
mp = llama_ref.LlamaModelParams.from_buffer_copy(bytes(lib.defaults["llama_model_default_params"]))
mp.vocab_only = True
mp.n_gpu_layers = 0
model = L.llama_model_load_from_file(sys.argv[2].encode(), mp)
if not model:
    sys.exit("llama.cpp could not load " + sys.argv[2] + ":\n" + "".join(lib.log)[-4000:])
vocab = L.llama_model_get_vocab(model)
out = []
for s in json.load(sys.stdin):
    b = s.encode("utf-8")
    n = len(b) + 8
    buf = (C.c_int32 * n)()
    k = L.llama_tokenize(vocab, b, len(b), buf, n, True, True)
    if k < 0:
        sys.exit("llama_tokenize failed for " + repr(s))
    out.append(list(buf[:k]))
L.llama_model_free(model)
print(json.dumps(out))
