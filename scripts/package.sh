#!/usr/bin/env bash
# Builds the .deb (docs/packaging.md): a Release build in ./build (or the build directory
# given as the first argument), configured here if it is not yet, then CPack. It prints the
# .deb's path on stdout. Check the package with tests/packaging/check-deb.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

# Configure every time: it reuses the directory's cache, and a directory configured before
# cmake/packaging.cmake existed has no CPackConfig.cmake until it is configured again.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
# The package promises a static binary with no sanitizer runtime; a build directory set up
# otherwise (by hand) must not be packaged.
if [[ $(cache OARBANK_STATIC) != ON || $(cache OARBANK_SANITIZE) == ON ]]; then
  echo "package.sh: $build is not a static, unsanitized build" \
    "(OARBANK_STATIC=$(cache OARBANK_STATIC), OARBANK_SANITIZE=$(cache OARBANK_SANITIZE))" >&2
  exit 1
fi
# Issue 16: the package carries the man page, generated only where help2man is.
if [[ -z $(cache OARBANK_HELP2MAN) || $(cache OARBANK_HELP2MAN) == *NOTFOUND ]]; then
  echo "package.sh: help2man is not installed, so there is no man page to package" \
    "(scripts/install-deps.sh installs it; configure $build again after)" >&2
  exit 1
fi
# Progress on stderr: stdout is the path alone, for deb=$(scripts/package.sh).
ninja -C "$build" oarbank-agent oarbank_man_page oarbank_changelog >&2

# Issue 16: an absolute build directory is used as given ("$PWD/$build" would name a path
# below the checkout that does not exist); a relative one is the checkout's, as above.
case $build in
  /*) out="$build/packages" ;;
  *) out="$PWD/$build/packages" ;;
esac
mkdir -p "$out"
rm -f "$out"/*.deb
# CPack installs the project into a staging directory first, which builds the default target.
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
debs=("$out"/*.deb)
if [[ ${#debs[@]} -ne 1 || ! -f ${debs[0]} ]]; then
  echo "package.sh: expected one .deb in $out, found: ${debs[*]}" >&2
  exit 1
fi
echo "${debs[0]}"
