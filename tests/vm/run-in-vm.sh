#!/usr/bin/env bash
# Boots a real Debian kernel under qemu (software emulation, no KVM needed) with a busybox
# initramfs, runs one shell script inside as root, and exits with that script's status.
#
# Usage: tests/vm/run-in-vm.sh --kernel 6.1|6.12|PATH/TO/VMLINUZ --guest-script SCRIPT
#          [--append 'EXTRA KERNEL ARGS'] [--file HOSTPATH[:GUESTPATH]]... [--env NAME=VALUE]...
#          [--timeout SECONDS] [--memory MIB] [--cache-dir DIR] [--rootfs CPIO]
#
#   --kernel        a series fetched by fetch-kernels.sh into the cache (fetched on demand),
#                   or a vmlinuz file
#   --guest-script  run in the guest with `sh` (it lies at /oarbank-vm/guest-script there)
#   --file          a file or a folder put into the guest at GUESTPATH, by default the same
#                   absolute path as on the host (so binaries with absolute paths baked in keep
#                   working); repeatable
#   --env           exported to the guest script; repeatable
#   --append        added to the kernel command line (console=ttyS0 panic=-1 quiet ...)
#   --timeout       seconds before qemu is killed (default $OARBANK_VM_TIMEOUT or 120)
#   --memory        guest memory in MiB (default 512)
#   --cache-dir     the kernel cache (default as fetch-kernels.sh)
#   --rootfs        boot this root file system instead of the busybox one: a newc cpio with
#                   /init (fetch-rootfs.sh makes a Debian 12 one whose /init is systemd). The
#                   files, the env and the script are packed into a second cpio appended to
#                   it, with a unit, oarbank-guest.service, that runs the script once the
#                   system is up (after basic.target, as a oneshot wanted by
#                   multi-user.target), prints the result line and powers off
#
# The guest's /init mounts proc, sysfs, devtmpfs (/dev), devpts (/dev/pts) and cgroup2 (/tmp is the initramfs's own)
# (/sys/fs/cgroup), writes /etc/passwd and /etc/group with root and nobody (65534) if they
# lack them, brings up lo, runs the script, prints `OARBANK-VM-RESULT rc=N` and powers off.
# The serial console is streamed to stdout. Exit status: the script's; 124 on timeout; 125
# when the guest never printed its result line; 2 on a usage error.
# Needs qemu-system-x86 and busybox-static (scripts/install-deps.sh); runs unprivileged.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '5,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "run-in-vm: $1" >&2; exit "${2:-1}"; }

kernel='' script='' append='' timeout_s=${OARBANK_VM_TIMEOUT:-120} memory=512 cache_dir='' rootfs=''
files=() envs=()
while (($#)); do
  case "$1" in
    --kernel) kernel=${2:?}; shift 2 ;;
    --guest-script) script=${2:?}; shift 2 ;;
    --append) append=${2?}; shift 2 ;;
    --file) files+=("${2:?}"); shift 2 ;;
    --env) envs+=("${2:?}"); shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --memory) memory=${2:?}; shift 2 ;;
    --cache-dir) cache_dir=${2:?}; shift 2 ;;
    --rootfs) rootfs=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run-in-vm: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ -n $kernel && -n $script ]] || usage
[[ -f $script ]] || die "guest script $script does not exist" 2
[[ $timeout_s =~ ^[0-9]+$ && $memory =~ ^[0-9]+$ ]] || die "--timeout and --memory take numbers" 2
[[ -z $rootfs || -s $rootfs ]] || die "--rootfs $rootfs does not exist" 2

qemu=$(command -v qemu-system-x86_64) ||
  die "needs qemu-system-x86_64 (apt-get install qemu-system-x86; scripts/install-deps.sh)"
busybox=''
for b in /bin/busybox /usr/bin/busybox; do [[ -x $b ]] && { busybox=$b; break; }; done
[[ -n $busybox ]] || die "needs busybox (apt-get install busybox-static)"
if command -v readelf >/dev/null && readelf -l "$busybox" 2>/dev/null | grep -q INTERP; then
  die "$busybox is dynamically linked; the initramfs needs busybox-static"
fi

# The kernel.
if [[ -f $kernel ]]; then
  vmlinuz=$kernel
else
  fetch_args=()
  [[ -z $cache_dir ]] || fetch_args+=("$cache_dir")
  [[ -n $cache_dir ]] || fetch_args+=("${OARBANK_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oarbank-vm}")
  line=$("$here/fetch-kernels.sh" "${fetch_args[@]}" "$kernel") || die "cannot get kernel $kernel"
  read -r _ vmlinuz _ <<<"$line"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/oarbank-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
umask 022
if [[ -z $rootfs ]]; then
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,root,run,var,oarbank-vm}
  # busybox; /init links its applets (one process in the guest, not 400 here).
  cp "$busybox" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
else
  # Only what the appended archive adds: the kernel gives an existing directory the mode and
  # owner of a later entry for it, so /root (0700) and /tmp (1777) must not appear here.
  mkdir -p "$root/oarbank-vm"
fi

# The caller's files.
for spec in "${files[@]}"; do
  host=${spec%%:*}
  guest=${spec#*:}
  [[ $spec == *:* ]] || guest=''
  [[ -e $host ]] || die "--file $host does not exist" 2
  [[ $host == /* ]] || host="$PWD/$host"
  [[ -n $guest ]] || guest=$host
  [[ $guest == /* ]] || die "--file $spec: the guest path must be absolute" 2
  mkdir -p "$root$(dirname "$guest")"
  if [[ -d $host ]]; then
    mkdir -p "$root$guest"
    cp -RL "$host/." "$root$guest/"
  else
    cp -L "$host" "$root$guest"
  fi
done
cp "$script" "$root/oarbank-vm/guest-script"

# The environment for the script, one shell-quoted export per line.
: >"$root/oarbank-vm/env"
for e in "${envs[@]}"; do
  [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env $e: expected NAME=VALUE" 2
  printf 'export %s=%q\n' "${e%%=*}" "${e#*=}" >>"$root/oarbank-vm/env"
done

if [[ -n $rootfs ]]; then
  mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
  cat >"$root/etc/systemd/system/oarbank-guest.service" <<'EOF'
[Unit]
Description=oarbank guest checks
# Powers the guest off however the script ends (qemu runs with -no-reboot).
SuccessAction=poweroff-immediate
FailureAction=poweroff-immediate

[Service]
Type=oneshot
TimeoutStartSec=infinity
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/console
Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/bin/sh -c '. /oarbank-vm/env; cd /; sh /oarbank-vm/guest-script; echo "OARBANK-VM-RESULT rc=$?"; sync'
EOF
  ln -s ../oarbank-guest.service "$root/etc/systemd/system/multi-user.target.wants/oarbank-guest.service"
else
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Applet links where nothing else is (the caller's files win).
/bin/busybox --install -s
chmod 0755 /
mount -t devtmpfs devtmpfs /dev || echo "init: mount devtmpfs failed"
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc || echo "init: mount proc failed"
mount -t sysfs sysfs /sys || echo "init: mount sysfs failed"
# No tmpfs over /tmp: the initramfs root is already writable memory, and files placed at
# their host paths may live under /tmp (a CI checkout in /tmp/...), which a mount would hide.
chmod 1777 /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup || echo "init: mount cgroup2 failed"
# Pseudo-terminals (sandbox-run gives a module on a terminal a pty of its own; the tests play
# the operator's shell on one): /dev/ptmx of devtmpfs opens the devpts mounted beside it.
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts -o ptmxmode=0666,mode=0620 || echo "init: mount devpts failed"
grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >>/etc/passwd
grep -q '^nobody:' /etc/passwd || echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >>/etc/passwd
grep -q '^root:' /etc/group 2>/dev/null || echo 'root:x:0:' >>/etc/group
grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >>/etc/group
chmod 0644 /etc/passwd /etc/group
chmod 0700 /root
ip link set lo up || echo "init: ip link set lo up failed"
hostname oarbank-vm
. /oarbank-vm/env
cd /
sh /oarbank-vm/guest-script </dev/null
rc=$?
echo "OARBANK-VM-RESULT rc=$rc"
sync
poweroff -f
# poweroff needs ACPI; with -no-reboot a reboot ends qemu too.
reboot -f
EOF
chmod 0755 "$root/init"
fi

# newc, uncompressed (nothing to gunzip in an emulated CPU), everything owned by root. With
# --rootfs, appended to that archive: the kernel unpacks concatenated archives in turn.
[[ -z $rootfs ]] || cp "$rootfs" "$work/initrd.cpio"
(cd "$root" && find . -mindepth 1 | sort |
  "$busybox" cpio -o -H newc -R 0:0 --ignore-devno --renumber-inodes 2>/dev/null) >>"$work/initrd.cpio"

bios=()
[[ ! -f /usr/share/qemu/qboot.rom ]] || bios=(-bios /usr/share/qemu/qboot.rom)
log="$work/console.log"
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout_s" "$qemu" -nodefaults -no-user-config -display none \
  -machine pc ${OARBANK_VM_QEMU_CPU:+-cpu $OARBANK_VM_QEMU_CPU} -smp 1 -m "$memory" "${bios[@]}" -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initrd.cpio" \
  -append "console=ttyS0 panic=-1 quiet ${OARBANK_VM_BASE_APPEND-mitigations=off}${rootfs:+ systemd.show_status=false} $append" \
  -chardev stdio,id=con,signal=off -serial chardev:con </dev/null 2>&1 |
  sed -u 's/\r$//' | tee "$log"
qemu_rc=${PIPESTATUS[0]}
set -e
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

result=$(sed -n 's/^OARBANK-VM-RESULT rc=\([0-9]*\)$/\1/p' "$log" | tail -n1)
if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
  echo "run-in-vm: timed out after ${timeout_s}s (kernel $kernel)" >&2
  exit 124
fi
if [[ -z $result ]]; then
  echo "run-in-vm: the guest never printed its result line (qemu exit $qemu_rc, ${elapsed}s, kernel $kernel)" >&2
  exit 125
fi
echo "run-in-vm: guest script exited $result (${elapsed}s in qemu, kernel $kernel)" >&2
exit "$result"
