#!/bin/sh
# Records what was built, inside the image: the Configure line, the patches applied to
# the source, the engines asked for and the engine modules installed, `openssl version -a`
# and the number of ENDBR32/ENDBR64 instructions in libcrypto (objdump; 0 ENDBR32 is
# required on CPUs without the long-NOP space, such as the VIA C3).
set -eu
prefix="$1"
configure_line="$2"
patches="${3:-}"
engines="${4:-}"
out="$prefix/share/openssl-matrix"
mkdir -p "$out"
printf '%s\n' "$configure_line" > "$out/configure.txt"
printf '%s\n' "$patches" > "$out/patches.txt"
printf '%s\n' "$engines" > "$out/engines.txt"
(ls "$prefix"/lib/engines* "$prefix"/lib64/engines* 2>/dev/null || true) | grep '\.so' | sort > "$out/engine-modules.txt" || true
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/openssl" version -a > "$out/version.txt" 2>&1 || true
lib=$(ls "$prefix"/lib/libcrypto.so.* "$prefix"/lib64/libcrypto.so.* "$prefix"/lib/libcrypto.a "$prefix"/lib64/libcrypto.a 2>/dev/null | head -n 1 || true)
if [ -n "$lib" ]; then
  echo "$lib" > "$out/libcrypto.txt"
  objdump -d "$lib" | grep -c endbr32 > "$out/endbr32.txt" || echo 0 > "$out/endbr32.txt"
  objdump -d "$lib" | grep -c endbr64 > "$out/endbr64.txt" || echo 0 > "$out/endbr64.txt"
else
  echo unknown > "$out/endbr32.txt"; echo unknown > "$out/endbr64.txt"
fi
echo "openssl-matrix buildinfo: $(head -n 1 "$out/version.txt"); endbr32=$(cat "$out/endbr32.txt"); patches=${patches:-none}"
