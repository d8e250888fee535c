#!/usr/bin/env bash
# Installs the Debian packages the C++ build needs: protobuf (the storage side
# parses Substrait with generated classes before Arrow sees a request), SQLite
# (the embedded store's omaps), FlatBuffers (the row format: flatc generates
# its classes), GoogleTest (the C++ unit tests), ISA-L (Parquet page checksums
# at hardware speed; zlib's headers for its unit test) and, with
# --fuzz, clang with its sanitizer and libFuzzer runtimes.
set -euo pipefail
PACKAGES="protobuf-compiler libprotobuf-dev libsqlite3-dev libflatbuffers-dev flatbuffers-compiler
  libgtest-dev libisal-dev zlib1g-dev"
if [ "${1:-}" = "--fuzz" ]; then
  PACKAGES="$PACKAGES clang libclang-rt-14-dev"
fi
installed=$(dpkg-query -W -f='${Status}\n' $PACKAGES 2>/dev/null | grep -c "install ok installed" || true)
if [ "$installed" -ne "$(wc -w <<< "$PACKAGES")" ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $PACKAGES
fi
