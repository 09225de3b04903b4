// SPDX-License-Identifier: GPL-2.0
/* Empty programs on the two hooks a response can start at: the tracepoint tcp:tcp_sendmsg_locked
 * (Linux 6.16) and the function's entry through a BPF trampoline. What bpf_stats reports for each
 * is the floor under that hook's ns-per-run figure (examples/response_hooks.rs, run by
 * bench/response_hooks.sh); the example loads the one it measures beside bbrtop's program on the
 * same hook. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(floor_sendmsg_tp, struct sock *sk)
{
	return 0;
}

SEC("fentry/tcp_sendmsg_locked")
int BPF_PROG(floor_sendmsg_fentry, struct sock *sk)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
