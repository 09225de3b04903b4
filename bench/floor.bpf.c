// SPDX-License-Identifier: GPL-2.0
/* An empty tp_btf/tcp_probe program: what bpf_stats reports for it is the floor under every
 * ns-per-run figure (the two clock reads and the call), measured by bench/bpf.sh. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/tcp_probe")
int BPF_PROG(floor_probe, struct sock *sk, const struct sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
