#!/usr/bin/env bash
# Installs R and reticulate from Debian (r-base-core, r-cran-reticulate) for the
# R wrapper of the gene-expression API (r/skyhook_expression.R) and its test.
set -euo pipefail
PACKAGES="r-base-core r-cran-reticulate"
installed=$(dpkg-query -W -f='${Status}\n' $PACKAGES 2>/dev/null | grep -c "install ok installed" || true)
if [ "$installed" -ne "$(wc -w <<< "$PACKAGES")" ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $PACKAGES
fi
