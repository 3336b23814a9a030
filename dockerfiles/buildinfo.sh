#!/bin/sh
# Records what was built, inside the image: the Configure line, `openssl version -a`
# and the number of ENDBR32 instructions in libcrypto (0 is required on CPUs without
# the CET long-NOP space, such as the VIA C3).
set -eu
prefix="$1"
configure_line="$2"
out="$prefix/share/openssl-matrix"
mkdir -p "$out"
printf '%s\n' "$configure_line" > "$out/configure.txt"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/openssl" version -a > "$out/version.txt" 2>&1 || true
lib=$(ls "$prefix"/lib/libcrypto.so.* "$prefix"/lib64/libcrypto.so.* "$prefix"/lib/libcrypto.a 2>/dev/null | head -n 1 || true)
if [ -n "$lib" ]; then
  objdump -d "$lib" | grep -c endbr32 > "$out/endbr32.txt" || echo 0 > "$out/endbr32.txt"
  objdump -d "$lib" | grep -c endbr64 > "$out/endbr64.txt" || echo 0 > "$out/endbr64.txt"
else
  echo unknown > "$out/endbr32.txt"; echo unknown > "$out/endbr64.txt"
fi
echo "openssl-matrix buildinfo: $(cat "$out/version.txt" | head -n 1); endbr32=$(cat "$out/endbr32.txt")"
