#!/usr/bin/env bash
# Builds (once) the root file system of the systemd guest: a minimal Debian 12 with systemd as
# PID 1, from Debian's own packages, packed as one uncompressed newc cpio that the kernel
# unpacks as its root (no disk, no initramfs-then-switch-root: the cloud kernel has virtio_blk
# and 9p as modules only, and a root in RAM boots fastest under emulation).
#
# Usage: tests/vm/fetch-rootfs.sh [--refresh] [CACHE_DIR]
#   CACHE_DIR  default ${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}, the
#              kernels' cache (fetch-kernels.sh)
#   --refresh  build it again even when cached
# Environment: OARBANK_VM_DEBIAN_MIRROR (default: the first http(s) mirror of this machine's apt
# sources that serves bookworm, else http://deb.debian.org/debian).
#
# The image lives in CACHE_DIR/rootfs-KEY/ (rootfs.cpio, and packages: the guest's package
# list), KEY being a hash of this script and the mirror: a change to the recipe below, or
# another mirror, builds a new image, and older rootfs-* folders are removed then. The image is
# not refreshed with Debian's point releases (nothing in the checks depends on them; --refresh
# does it). A CI job on a fresh clone with the same script finds the same key.
#
# debootstrap needs root (chroot, device nodes): as another user it runs through `sudo -n`.
# About 45-70 s from nothing on a 2-core machine; prints the cpio's path.
set -euo pipefail

die() { echo "fetch-rootfs: $*" >&2; exit 1; }
note() { echo "fetch-rootfs: $*" >&2; }

refresh=${OARBANK_VM_REFRESH:-0}
if [[ ${1:-} == --refresh ]]; then refresh=1; shift; fi
cache_dir=${1:-${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}}

suite=bookworm
mirror=${OARBANK_VM_DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
  # deb822 (.sources) and one-line (.list) formats; the first mirror that names bookworm.
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ && u ~ /\/debian\/?$/ {print u; exit}')
  [[ -n $mirror ]] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $3 == "bookworm" && $2 ~ /\/debian\/?$/ {print $2; exit}')
  mirror=${mirror:-http://deb.debian.org/debian}
fi

key=$( { cat "${BASH_SOURCE[0]}"; echo "$suite $mirror"; } | sha256sum | cut -c1-16)
mkdir -p "$cache_dir"
cache_dir=$(cd "$cache_dir" && pwd)
dest=$cache_dir/rootfs-$key
exec 9>"$cache_dir/.rootfs.lock"
flock 9
if [[ -s $dest/rootfs.cpio && -s $dest/packages ]] && ((!refresh)); then
  echo "$dest/rootfs.cpio"
  exit 0
fi

command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap; scripts/install-deps.sh)"
busybox=''
for b in /bin/busybox /usr/bin/busybox; do [[ -x $b ]] && { busybox=$b; break; }; done
[[ -n $busybox ]] || die "needs busybox (apt-get install busybox-static)"
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  sudo -n true 2>/dev/null || die "debootstrap needs root: run as root, or with passwordless sudo"
  as_root=(sudo -n)
fi

# A build killed half-way left its folder: under the lock, every one is stale.
for stale in "$cache_dir"/.rootfs.*; do
  [[ ! -d $stale ]] || "${as_root[@]}" rm -rf "$stale"
done
tmp=$(mktemp -d "$cache_dir/.rootfs.XXXXXX")
trap '"${as_root[@]}" rm -rf "$tmp"' EXIT
root=$tmp/root
note "debootstrap $suite from $mirror (minbase + systemd, about a minute)"
start=$SECONDS
"${as_root[@]}" debootstrap --variant=minbase --include=systemd,systemd-sysv \
  "$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
  tail -n 20 "$tmp/debootstrap.log" >&2
  die "debootstrap failed (log above)"
}

# The recipe: what the guest needs and nothing that costs boot time under emulation.
"${as_root[@]}" bash -euo pipefail -s "$root" <<'EOF'
root=$1
# Space: the downloaded packages, apt's lists, documentation, translations.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
echo oarbank-guest >"$root/etc/hostname"
# No file systems to mount beyond what systemd mounts itself (/ is the kernel's rootfs).
: >"$root/etc/fstab"
# A fixed machine id: an empty one makes systemd generate and try to commit one each boot.
echo 0a7ba4c0a7ba4c0a7ba4c0a7ba4c0a70 >"$root/etc/machine-id"
# Journal in /run only (there is no disk); the checks read it with journalctl.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/oarbank-guest.conf"
# Masked: logins (no dbus, nobody logs in), timers, and boot-time services that only matter on
# a disk-backed, long-lived system. Each costs a second or more under emulation.
chroot "$root" systemctl set-default multi-user.target >/dev/null
chroot "$root" systemctl mask --quiet \
  getty.target getty@tty1.service serial-getty@ttyS0.service console-getty.service \
  systemd-logind.service systemd-user-sessions.service \
  timers.target apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
  fstrim.timer systemd-tmpfiles-clean.timer e2scrub_reap.service \
  systemd-remount-fs.service systemd-random-seed.service systemd-pstore.service \
  systemd-update-utmp.service systemd-update-utmp-runlevel.service systemd-firstboot.service \
  systemd-machine-id-commit.service systemd-hwdb-update.service ldconfig.service \
  systemd-journal-catalog-update.service systemd-update-done.service systemd-sysusers.service \
  systemd-modules-load.service kmod-static-nodes.service systemd-binfmt.service \
  proc-sys-fs-binfmt_misc.automount sys-kernel-config.mount sys-kernel-debug.mount \
  sys-kernel-tracing.mount sys-fs-fuse-connections.mount dev-hugepages.mount \
  systemd-ask-password-console.path systemd-ask-password-wall.path \
  remote-fs.target cryptsetup.target veritysetup.target swap.target
# The kernel runs /init from an initramfs root.
ln -sf /lib/systemd/systemd "$root/init"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' >"$root/.packages"
EOF
"${as_root[@]}" mv "$root/.packages" "$tmp/packages"
# newc, everything as it is in the tree (owners, modes, device nodes), uncompressed.
(cd "$root" && "${as_root[@]}" find . -mindepth 1 | LC_ALL=C sort |
  "${as_root[@]}" "$busybox" cpio -o -H newc --ignore-devno --renumber-inodes 2>/dev/null) >"$tmp/rootfs.cpio"
[[ -s $tmp/rootfs.cpio ]] || die "packing $root failed"
"${as_root[@]}" rm -rf "$root"
[[ $(id -u) -eq 0 ]] || "${as_root[@]}" chown -R "$(id -u):$(id -g)" "$tmp"
chmod 0755 "$tmp"
# The old keys' images go: one image per cache.
for old in "$cache_dir"/rootfs-*; do
  [[ $old == "$dest" || ! -d $old ]] || rm -rf "$old"
done
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
note "built $dest/rootfs.cpio ($(du -m "$dest/rootfs.cpio" | cut -f1) MiB, $((SECONDS - start)) s)"
echo "$dest/rootfs.cpio"
