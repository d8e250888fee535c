#!/usr/bin/env bash
# Installs Ceph Pacific from Debian's packages: daemons for the local cluster,
# and the headers the object class and the librados client are built against.
set -euo pipefail
PACKAGES="ceph-mon ceph-osd ceph-mgr ceph-common radosgw librados-dev libradospp-dev rados-objclass-dev"
if dpkg-query -W -f='${Status}\n' $PACKAGES 2>/dev/null | grep -qv "install ok installed" \
   || ! dpkg-query -W $PACKAGES >/dev/null 2>&1; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $PACKAGES
fi
echo "Ceph $(ceph --version | cut -d' ' -f3) installed"
