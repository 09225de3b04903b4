// SPDX-License-Identifier: GPL-2.0
/* Random packet loss for the lab's bottleneck, on a tc hook: this kernel has no netem (and no
 * gact action for a classic-BPF filter), so a direct-action eBPF program drops the packets. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

/* Drop when a random u32 falls below this: fraction x 2^32, set by userspace before load. */
const volatile __u32 threshold = 0;

SEC("tc")
int lab_loss(struct __sk_buff *skb)
{
	return bpf_get_prandom_u32() < threshold ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
