// SPDX-License-Identifier: GPL-2.0
/* Empty programs on the five hooks bbrtop's programs use on an edge server's workload
 * (bench/edge.sh): what bpf_stats reports for each is that hook's floor (the trampoline's call
 * and bpf_stats' two clock reads), measured in the same run as bbrtop's programs. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/tcp_probe")
int BPF_PROG(floor_probe, struct sock *sk, const struct sk_buff *skb)
{
	return 0;
}

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(floor_sendmsg, struct sock *sk)
{
	return 0;
}

SEC("tp_btf/tcp_rcv_space_adjust")
int BPF_PROG(floor_rcv_space, struct sock *sk)
{
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(floor_set_state, const struct sock *sk, const int oldstate, const int newstate)
{
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(floor_destroy, struct sock *sk)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
