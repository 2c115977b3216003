#!/usr/bin/env bash
# Decision 0008: is the gap between zlib-rs / libz-ng-sys and C-Blosc2's level-5 deflate the
# algorithm or the compiler? Rebuild C-Blosc2's own libblosc2.a (python-blosc2 wheel) with
# zlib-ng's deflate_medium.c swapped for a compile by each compiler given (default: cc), and
# time its deflate on FILE (256 KiB blocks, level 5) before and after. Usage:
#   bench/native/zlib_ng_codegen.sh FILE [compiler ...]      (run `make native-peer` first)
set -euo pipefail
file=$1; shift
compilers=("${@:-cc}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
blosc2=$("$repo/.venv/bin/python" -c 'import blosc2, os; print(os.path.dirname(blosc2.__file__))')
zng=$(ls -d ~/.cargo/registry/src/*/libz-ng-sys-*/src/zlib-ng | sort -V | tail -1)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# zlib-ng's generated headers and its defines for this machine, from a configure-only cmake run.
cmake -S "$zng" -B "$work/cfg" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DZLIB_COMPAT=OFF \
  -DBUILD_TESTING=OFF >/dev/null
defs=$(sed -n 's/^C_DEFINES = //p' "$work/cfg/CMakeFiles/zlib-ng.dir/flags.make")
mkdir "$work/objs" && (cd "$work/objs" && ar x "$blosc2/lib/libblosc2.a")
time_it() {  # LABEL ARCHIVE
  cc -O2 -o "$work/deflate" "$repo/crates/oxblosc-chunk/examples/c/b2_deflate_speed.c" "$2" -lpthread -lm -ldl
  for round in 1 2 3; do echo "$1: $("$work/deflate" "$file" 5 5 | sed 's/.*zlib-ng //')"; done
}
time_it "C-Blosc2 as shipped" "$blosc2/lib/libblosc2.a"
for compiler in "${compilers[@]}"; do
  # shellcheck disable=SC2086
  $compiler $defs -I"$work/cfg" -I"$zng" -DNDEBUG -std=c11 -fPIC -O2 -c "$zng/deflate_medium.c" \
    -o "$work/objs/deflate_medium.c.o"
  rm -f "$work/swapped.a" && ar rcs "$work/swapped.a" "$work"/objs/*.o
  time_it "deflate_medium by $($compiler --version | head -1)" "$work/swapped.a"
done
