#!/usr/bin/env bash
# Fetches the Debian 12 kernels the VM matrix boots, without installing anything:
#   6.1   linux-image-cloud-amd64        (bookworm, or bookworm-security)  Landlock ABI 2
#   6.12  linux-image-6.12-cloud-amd64   (bookworm-security)               Landlock ABI 6
#
# Usage: tests/vm/fetch-kernels.sh [--refresh] [CACHE_DIR] [SERIES...]
#   CACHE_DIR  default ${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}
#   SERIES     6.1 and/or 6.12; default both
#   --refresh  (or OARBANK_VM_REFRESH=1) ask apt again even for a series already cached, and
#              download the newer point release if the candidate changed
#
# Each meta-package is resolved (apt-cache depends) to the versioned image package, which is
# fetched with `apt-get download` and unpacked with dpkg-deb (only ./boot is extracted) into
#   CACHE_DIR/SERIES/vmlinuz   the kernel
#   CACHE_DIR/SERIES/config    its /boot/config-*  (CONFIG_LSM, ...)
#   CACHE_DIR/SERIES/package   "PACKAGE VERSION" it came from
# A series already in the cache is reused without asking apt at all (apt-cache rebuilds its
# whole package cache on every call on this Docker-style image, 2 to 20 s each): the matrix
# cares about the kernel series, not its point release. With --refresh a cache whose package
# line matches the candidate is kept; when apt cannot resolve the package (no lists, no
# network) the cached kernel is used with a note on stderr.
# Works unprivileged; as root it runs `apt-get update` once if a package cannot be found.
# Prints one line per series: SERIES VMLINUZ PACKAGE VERSION
set -euo pipefail

refresh=${OARBANK_VM_REFRESH:-0}
if [[ ${1:-} == --refresh ]]; then refresh=1; shift; fi
cache_dir=${1:-${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}}
shift || true
series_list=("$@")
((${#series_list[@]})) || series_list=(6.1 6.12)

die() { echo "fetch-kernels: $*" >&2; exit 1; }
note() { echo "fetch-kernels: $*" >&2; }

meta_for() {
  case "$1" in
    6.1) echo linux-image-cloud-amd64 ;;
    6.12) echo linux-image-6.12-cloud-amd64 ;;
    *) die "unknown kernel series '$1' (known: 6.1, 6.12)" ;;
  esac
}
for series in "${series_list[@]}"; do meta_for "$series" >/dev/null; done

for tool in apt-cache apt-get dpkg-deb tar flock; do
  command -v "$tool" >/dev/null || die "needs $tool"
done

mkdir -p "$cache_dir"
cache_dir=$(cd "$cache_dir" && pwd)
# Two matrix runs at once share the cache: one fetch at a time.
exec 9>"$cache_dir/.lock"
flock 9

cached() { [[ -s "$cache_dir/$1/vmlinuz" && -s "$cache_dir/$1/config" && -s "$cache_dir/$1/package" ]]; }

# The series to ask apt about.
todo=()
for series in "${series_list[@]}"; do
  if ((refresh)) || ! cached "$series"; then todo+=("$series"); fi
done

declare -A want=()
# resolve SERIES...: fills want[SERIES]="PACKAGE VERSION" for the image package each
# meta-package's candidate depends on (one apt-cache call for all, one for the versions).
resolve() {
  local series metas=() pkgs=() meta pkg line cur='' ver
  declare -A pkg_of=() ver_of=()
  for series in "$@"; do metas+=("$(meta_for "$series")"); done
  while IFS= read -r line; do
    if [[ $line =~ ^([^[:space:]]+)$ ]]; then
      cur=${BASH_REMATCH[1]}
    elif [[ -n $cur && -z ${pkg_of[$cur]:-} && $line =~ ^[[:space:]]+Depends:\ (linux-image-[^[:space:]\<\>]+)$ ]]; then
      pkg_of[$cur]=${BASH_REMATCH[1]}
    fi
  done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
             --no-replaces --no-enhances "${metas[@]}" 2>/dev/null || true)
  for meta in "${metas[@]}"; do [[ -z ${pkg_of[$meta]:-} ]] || pkgs+=("${pkg_of[$meta]}"); done
  ((${#pkgs[@]})) || return 0
  cur=''
  while IFS= read -r line; do
    if [[ $line =~ ^([^[:space:]]+):$ ]]; then
      cur=${BASH_REMATCH[1]}
    elif [[ -n $cur && $line =~ ^[[:space:]]+Candidate:\ (.+)$ ]]; then
      ver=${BASH_REMATCH[1]}
      [[ $ver == "(none)" ]] || ver_of[$cur]=$ver
    fi
  done < <(apt-cache policy "${pkgs[@]}" 2>/dev/null || true)
  for series in "$@"; do
    meta=$(meta_for "$series")
    pkg=${pkg_of[$meta]:-}
    [[ -z $pkg || -z ${ver_of[$pkg]:-} ]] || want[$series]="$pkg ${ver_of[$pkg]}"
  done
}

if ((${#todo[@]})); then
  resolve "${todo[@]}"
  unresolved=()
  for series in "${todo[@]}"; do
    [[ -n ${want[$series]:-} ]] || cached "$series" || unresolved+=("$series")
  done
  if ((${#unresolved[@]})) && [[ $(id -u) -eq 0 ]]; then
    note "not in apt's lists: ${unresolved[*]}; running apt-get update"
    apt-get update -qq >&2 || note "apt-get update failed"
    resolve "${unresolved[@]}"
  fi
fi

for series in "${series_list[@]}"; do
  meta=$(meta_for "$series")
  dest="$cache_dir/$series"
  if [[ -z ${want[$series]:-} ]]; then
    if cached "$series"; then
      ((! refresh)) || note "$meta cannot be resolved from this machine's apt sources; using the cached $(cat "$dest/package")"
      echo "$series $dest/vmlinuz $(cat "$dest/package")"
      continue
    fi
    sources=$(apt-cache policy 2>/dev/null | sed -n 's/^ *-*[0-9]* \(http[^ ]* [^ ]*\) .*/\1/p' | sort -u | tr '\n' ' ')
    die "$meta (kernel $series) cannot be resolved from this machine's apt sources [ ${sources:-none} ] and nothing is cached in $dest (Debian 12 ships it in bookworm-security)"
  fi
  if cached "$series" && [[ "$(cat "$dest/package")" == "${want[$series]}" ]]; then
    echo "$series $dest/vmlinuz ${want[$series]}"
    continue
  fi
  read -r pkg ver <<<"${want[$series]}"
  tmp=$(mktemp -d "$cache_dir/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  note "downloading $pkg $ver (for $meta)"
  apt_opts=(-q)
  # As root apt drops to _apt to download, which cannot write into a 0700 mktemp folder.
  [[ $(id -u) -ne 0 ]] || apt_opts+=(-o APT::Sandbox::User=root)
  (cd "$tmp" && apt-get "${apt_opts[@]}" download "$pkg=$ver" >&2) ||
    die "apt-get download $pkg=$ver failed"
  deb=$(ls "$tmp"/*.deb)
  mkdir "$tmp/x"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './boot/config-*' ||
    die "cannot unpack ./boot from $deb"
  mkdir "$tmp/out"
  mv "$tmp"/x/boot/vmlinuz-* "$tmp/out/vmlinuz"
  mv "$tmp"/x/boot/config-* "$tmp/out/config"
  chmod 0644 "$tmp/out/vmlinuz" "$tmp/out/config"
  echo "${want[$series]}" >"$tmp/out/package"
  rm -rf "$dest"
  mv "$tmp/out" "$dest"
  rm -rf "$tmp"
  trap - EXIT
  echo "$series $dest/vmlinuz ${want[$series]}"
done
