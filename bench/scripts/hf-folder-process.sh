#!/usr/bin/env bash
# The whole-process check of issue 17: `amn convert` of a 1 GiB-of-weights BF16 llama folder
# (bench's LlamaFolderInput: hidden 2048, intermediate 5632, 9 layers, vocabulary 32000) to a
# GGUF at 2 threads, against `cp` of the output.
#
#   bench/scripts/hf-folder-process.sh AMN WORK_DIR [ROUNDS] [DTYPE] [TOKENIZER_MODEL]
#
# AMN is the launcher (cli/target/amn/bin/amn after `./build`); bench/target/benchmarks.jar must
# exist (`./build mvn -o -pl bench -am package -DskipTests`). DTYPE is convert's --dtype (q8_0 by
# default). TOKENIZER_MODEL is a SentencePiece model copied into the folder (default: the one of
# the hf-to-gguf corpus, ../shared/corpus-hf beside the repository). WORK_DIR gets the folder
# (1.0 GiB, kept for later runs) and, one at a time, the outputs (removed at the end). Each round:
# the input read (`cat`) and 4 GiB pre-touched (this VM hands idle memory back to the host),
# then `cp` of the previous output and `amn convert`, both under GNU time (wall, user, sys, peak
# RSS), the load average printed beside them. AMN_KERNELS and AMN_JAVA_OPTS pass through.
set -euo pipefail
usage='usage: hf-folder-process.sh AMN WORK_DIR [ROUNDS] [DTYPE] [TOKENIZER_MODEL]'
amn=${1:?$usage}
work=${2:?$usage}
rounds=${3:-3}
dtype=${4:-q8_0}
here=$(cd "$(dirname "$0")/../.." && pwd)
tokenizer=${5:-$here/../shared/corpus-hf/hf-to-gguf/gen-bf16-to-q8_0/input/tokenizer.model}
jar=$here/bench/target/benchmarks.jar
java=${JAVA:-java}

mkdir -p "$work"
input=$work/llama-1g
if [ ! -f "$input/model.safetensors" ]; then
  "$java" -cp "$jar" io.anamnesis.bench.LlamaFolderInput "$input" "$tokenizer"
fi
out=$work/out.gguf
copy=$work/copy.gguf
trap 'rm -f "$out" "$copy"' EXIT

# shellcheck source=process-rounds.sh
. "$here/bench/scripts/process-rounds.sh"
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) CPUs, --dtype $dtype, kernels=${AMN_KERNELS:-launcher default}"
time_rounds "$rounds" "$input/model.safetensors" "$out" "$copy" \
  "$amn" convert "$input" --to gguf --dtype "$dtype" -o "$out" --threads 2 --quiet
