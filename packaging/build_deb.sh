#!/usr/bin/env bash
# Build the kvscope Debian package (desktop app + CLI) on Debian 12.
#   packaging/build_deb.sh            # -> build-pkg/kvscope_<version>_<arch>.deb
#   sudo apt-get install ./build-pkg/kvscope_*.deb
# Needs the build dependencies (scripts/run.sh installs them) plus dpkg-dev,
# whose dpkg-shlibdeps computes the package's Depends.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-pkg}

# Debian's hardening flags, as a Debian package is built with them (lintian:
# hardening-no-bindnow, hardening-no-fortify-functions). The Release build's
# -O3 comes after dpkg's -O2, and CPack strips the -g.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)"
export CFLAGS="$(dpkg-buildflags --get CFLAGS) $CPPFLAGS"
export CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $CPPFLAGS"
export LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"

# The GUI on, always: a package without the desktop app would still be
# described as holding it (and a cached KVSCOPE_GUI=OFF would stick).
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKVSCOPE_CUDA=OFF -DKVSCOPE_BUILD_TESTS=OFF -DKVSCOPE_GUI=ON
cmake --build "$BUILD_DIR"
(cd "$BUILD_DIR" && cpack -G DEB)

# Optional checks (packages appstream, desktop-file-utils):
#   appstreamcli validate --no-net packaging/io.github.kvscope.Kvscope.metainfo.xml
#   desktop-file-validate packaging/io.github.kvscope.Kvscope.desktop
#   dpkg-deb -I "$BUILD_DIR"/kvscope_*.deb
ls -1 "$BUILD_DIR"/kvscope_*.deb
