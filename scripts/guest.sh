#!/bin/sh
# Runs inside a kernel-matrix guest (tests/kernel_matrix.rs boots it with virtme-ng: one of
# Debian's kernels, the host's filesystem shared read-only, OUT shared read-write). Makes the
# guest look like a Debian host running that kernel, then runs each given test of TEST_BINARY
# alone (ignored or not: some run only in a guest), in order, and leaves its output in
# OUT/output and the first failing exit status (or 0) in OUT/exit, which the host reads:
# virtme-ng's own exit status says nothing here (255).
#
#   scripts/guest.sh TREE OUT TEST_BINARY TEST...
#   scripts/guest.sh --run TREE OUT COMMAND...      # one command instead (bench/response_hooks.sh)
#
# TREE is the kernel's unpacked package (scripts/kernels.sh): its config goes to /boot, where
# libbpf (CONFIG_HZ) and the socket walk read it, as on a host with the package installed.
command=0
if [ "$1" = --run ]; then command=1; shift; fi
tree=$1 out=$2
shift 2
# BBRTOP_GUEST: the tests know they run under emulation (tests/support/reference.rs).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI=true BBRTOP_GUEST=1
exec >"$out/output" 2>&1
release=$(uname -r)
echo "guest: Linux $release ($(cat "$tree/package")), $(nproc) CPU, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
mount -t tmpfs none /boot && cp "$tree/boot/config-$release" /boot/
# ss shows a socket's congestion-control info (bbr:(...)) only with these loaded; /dev/net/tun
# (the lab's delay line) is made at boot on Debian by kmod's static nodes, which no udev runs here.
modprobe inet_diag && modprobe tcp_diag && modprobe tun
ip link set lo up
if [ "$command" = 1 ]; then
    "$@"
    echo $? >"$out/exit"
    exit 0
fi
binary=$1
shift
status=0
for t in "$@"; do
    echo "guest: running $t"
    "$binary" --exact "$t" --include-ignored --test-threads=1 --nocapture
    rc=$?
    echo "guest: $t exited $rc"
    [ "$status" -eq 0 ] && status=$rc
done
echo "$status" >"$out/exit"
