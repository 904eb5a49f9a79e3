# Sourced by the whole-process scripts (ct-w4a16-process.sh, hf-folder-process.sh): their
# rounds of `cp` of the output and `amn` under GNU time, on a warm page cache and pre-touched
# memory. Needs $java (a java launcher) set by the caller.

pretouch() { # fault in 4 GiB and let it go, so the runs do not pay the host for fresh pages
  "$java" -Xms4g -Xmx4g -XX:+AlwaysPreTouch -version >/dev/null 2>&1 || true
}

# time_rounds ROUNDS INPUT OUT COPY COMMAND...: COMMAND writes OUT from INPUT. Each round reads
# INPUT (`cat`) and pre-touches, times `cp OUT COPY` (the first round runs COMMAND once before,
# so that there is an OUT to copy), then reads INPUT again, pre-touches and times COMMAND.
time_rounds() {
  local rounds=$1 input=$2 out=$3 copy=$4 r
  local fmt='wall %e s  user %U s  sys %S s  peak RSS %M KiB'
  shift 4
  for r in $(seq 1 "$rounds"); do
    cat "$input" >/dev/null
    pretouch
    if [ "$r" = 1 ]; then "$@"; fi
    cat "$out" >/dev/null
    echo "round $r  load: $(cut -d' ' -f1-3 /proc/loadavg)"
    /usr/bin/time -f "  cp   $fmt" cp "$out" "$copy"
    rm -f "$copy"
    cat "$input" >/dev/null
    pretouch
    rm -f "$out"
    /usr/bin/time -f "  amn  $fmt" "$@"
  done
}
