#!/usr/bin/env bash
# Run one fuzz target with AddressSanitizer on the stable toolchain.
#   fuzz/run.sh <decompress|roundtrip|getitem> [seconds=600] [extra libFuzzer args...]
# CFLAGS: the C codecs (zstd, lz4) are built by gcc and inherit -fsanitize=address from the
# cc crate. GCC promotes zstd's const local table `getAllMatchesFns` (zstd_opt.c) to a
# global but still poisons it "out of scope" on function exit, so two threads compressing
# at once report a bogus stack-use-after-scope (regressions/roundtrip/asan-false-positive-*).
# Turning off use-after-scope for C code removes that false positive; Rust keeps full ASan.
set -euo pipefail
cd "$(dirname "$0")"
t="${1:?target}"; secs="${2:-600}"; shift $(( $# < 2 ? $# : 2 ))
[ -d "corpus/$t" ] || ./seed.sh
export CFLAGS="${CFLAGS:--fno-sanitize-address-use-after-scope}"
RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=4096 -malloc_limit_mb=3000 -timeout=60 "$@"
