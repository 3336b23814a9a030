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
# the line srcfacts.pl actually ran (options this release's Configure lacks left out)
if [ -f /src/configure-line.txt ]; then
  cp /src/configure-line.txt "$out/configure.txt"
else
  printf '%s\n' "$configure_line" > "$out/configure.txt"
fi
# what the source stage found in the tree, and what each compat rewrite script changed
cat /src/facts.txt > "$out/source-facts.txt" 2>/dev/null || : > "$out/source-facts.txt"
: > "$out/compat.txt"
for f in /src/compat-*.txt; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .txt); name=${name#compat-}
  if [ -s "$f" ]; then sed "s|^|$name: |" "$f" >> "$out/compat.txt"
  else echo "$name: construct not found, nothing changed" >> "$out/compat.txt"; fi
done
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
