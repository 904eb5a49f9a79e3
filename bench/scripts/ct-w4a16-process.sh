#!/usr/bin/env bash
# The whole-process check of issue 13: `amn remember` of a 1 GiB-output compressed-tensors
# W4A16 checkpoint (bench's CompressedTensorsInput: 12 x [4096, 11008] pack-quantized int4,
# group 128, BF16 scales) to BF16 at 2 threads, against `cp` of the output.
#
#   bench/scripts/ct-w4a16-process.sh AMN WORK_DIR [ROUNDS] [AMN_KERNELS]
#
# AMN is the launcher (cli/target/amn/bin/amn after `./build mvn -o -pl cli -am package
# -DskipTests`); bench/target/benchmarks.jar must exist (`-pl bench -am package`). WORK_DIR
# gets the input (266 MiB, kept for later runs) and, one at a time, the 1.08 GB outputs
# (removed at the end). Each round: the input read (`cat`) and 4 GiB pre-touched (this VM
# hands idle memory back to the host), then `cp` of the previous output and `amn remember`,
# both under GNU time (wall, user, sys, peak RSS), the load average printed beside them.
# AMN_KERNELS (default: the launcher's own) is passed through, e.g. scalar or auto.
set -euo pipefail
amn=${1:?usage: ct-w4a16-process.sh AMN WORK_DIR [ROUNDS] [AMN_KERNELS]}
work=${2:?usage: ct-w4a16-process.sh AMN WORK_DIR [ROUNDS] [AMN_KERNELS]}
rounds=${3:-3}
kernels=${4:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
jar=$here/bench/target/benchmarks.jar
java=${JAVA:-java}

mkdir -p "$work"
input=$work/w4a16/model.safetensors
if [ ! -f "$input" ]; then
  "$java" -cp "$jar" io.anamnesis.bench.CompressedTensorsInput "$work/w4a16"
fi
out=$work/out.safetensors
copy=$work/copy.safetensors
trap 'rm -f "$out" "$copy"' EXIT

# shellcheck source=process-rounds.sh
. "$here/bench/scripts/process-rounds.sh"
if [ -n "$kernels" ]; then export AMN_KERNELS=$kernels; fi
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) CPUs, kernels=${kernels:-launcher default}"
time_rounds "$rounds" "$input" "$out" "$copy" "$amn" remember "$input" -o "$out" --to bf16 --threads 2 --quiet
