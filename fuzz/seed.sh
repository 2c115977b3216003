#!/usr/bin/env bash
# Regenerate the fuzz seed corpora in fuzz/corpus/<target>/ (git-ignored):
#   - small chunks made by oxblosc itself (examples/make_seeds.rs), and
#   - copies of the C-Blosc2 compat vectors (*.cdata) smaller than 40 KB,
#   - frame_open: the compat frames (*.b2frame), tests/fuzz/corpus/*.b2frame and the frame
#     crate's golden frames (crates/oxblosc-frame/tests/data/golden, files only).
# Usage: fuzz/seed.sh   (SHARED=/path/to/shared overrides ../shared)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shared="${SHARED:-${OXBLOSC_SHARED:-$here/../../shared}}"
cd "$here"
cargo run --quiet --example make_seeds -- corpus
vec="$shared/vectors/c-blosc2-compat"
if [ -d "$vec" ]; then
  n=0
  for f in "$vec"/*.cdata; do
    [ "$(stat -c %s "$f")" -lt 40960 ] || continue
    b="vec-$(basename "$f" .cdata)"
    cp "$f" "corpus/decompress/$b"
    # getitem: odd mode byte + 28-byte parameter head (seed) + the chunk.
    { printf '\x01'; head -c 24 /dev/zero; printf '\x2a\x00\x00\x00'; cat "$f"; } > "corpus/getitem/$b"
    n=$((n + 1))
  done
  echo "copied $n vectors (< 40 KB) from $vec"
else
  echo "no vectors at $vec (set SHARED=...)" >&2
fi

# Frames for frame_open (missing directories are skipped).
mkdir -p corpus/frame_open corpus/frame_ops
n=0
for f in "$vec"/*.b2frame "$here"/../tests/fuzz/corpus/*.b2frame "$here"/../crates/oxblosc-frame/tests/data/golden/*; do
  [ -f "$f" ] || continue
  case "$f" in *.txt) continue ;; esac
  cp "$f" "corpus/frame_open/frame-$(basename "$f")"
  n=$((n + 1))
done
echo "copied $n frames into corpus/frame_open"

# b2nd frames for nd_open: the C-Blosc2 b2nd vectors (generated array frames come from make_seeds).
mkdir -p corpus/nd_open corpus/nd_slices
for f in "$vec"/plugins/test_data/*.b2nd; do
  [ -f "$f" ] && cp "$f" "corpus/nd_open/vec-$(basename "$f")"
done

# nd_filters: the saved NDCELL/NDMEAN chunks (block shape prefix + python-blosc2 chunk).
mkdir -p corpus/nd_filters
cp regressions/nd_filters/* corpus/nd_filters/

# zfp_acc / zfp_prec / zfp_rate: python-blosc2 ZFP streams (selector, meta, block shape prefix).
for t in zfp_acc zfp_prec zfp_rate; do
  mkdir -p "corpus/$t"
  cp "regressions/$t"/* "corpus/$t/"
done
