// SPDX-License-Identifier: GPL-2.0
/* The lab's bottleneck effects on a tc hook: this kernel has no netem (and no gact action for a
 * classic-BPF filter) and no marking AQM (no red, codel, fq_codel or pie), so a direct-action
 * eBPF program drops packets at random, and marks ECN-capable ones CE at random; and on a
 * receiver's egress it thins its ACKs. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Drop when a random u32 falls below this: fraction x 2^32, set by userspace before load. */
const volatile __u32 threshold = 0;
/* Mark an ECT IPv4 packet CE when a random u32 falls below this (fraction x 2^32). */
const volatile __u32 ce_threshold = 0;
/* Keep one pure ACK in this many and drop the rest (0: keep all): a stretch-ACK peer (Wi-Fi
 * aggregation, GRO, an ACK-thinning middlebox). ACKs are cumulative: only their timing is lost. */
const volatile __u32 ack_every = 0;
__u32 acks_seen = 0; /* a ratio, not a count: increments from two CPUs may race */

#define IP_ECN_MASK 3
#define IP_ECN_CE 3

/* Sets CE in an ECT(0) or ECT(1) IPv4 packet on an Ethernet link (the lab's veths), and fixes
 * the header checksum for the changed 16-bit word. */
static __always_inline void mark_ce(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return;
	__u8 ecn = ip->tos & IP_ECN_MASK;
	if (ecn == 0 || ecn == IP_ECN_CE)
		return;
	__u16 old = *(__u16 *)ip; /* version and ihl, then tos */
	__u8 tos = ip->tos | IP_ECN_CE;
	__u8 word[2] = {((__u8 *)ip)[0], tos};
	__u16 new = *(__u16 *)word;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + 1, &tos, 1, 0))
		return;
	bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check), old, new, 2);
}

/* An IPv4 TCP segment with no payload and no flag but ACK. */
static __always_inline int pure_ack(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_TCP)
		return 0;
	__u32 ihl = ip->ihl * 4;
	if (ihl < sizeof(*ip))
		return 0;
	struct tcphdr *th = (void *)ip + ihl;
	if ((void *)(th + 1) > end)
		return 0;
	return ((__u8 *)th)[13] == 0x10 && bpf_ntohs(ip->tot_len) == ihl + th->doff * 4;
}

SEC("tc")
int lab_loss(struct __sk_buff *skb)
{
	if (ack_every > 1 && pure_ack(skb) && acks_seen++ % ack_every)
		return TC_ACT_SHOT;
	if (threshold && bpf_get_prandom_u32() < threshold)
		return TC_ACT_SHOT;
	if (ce_threshold && bpf_get_prandom_u32() < ce_threshold)
		mark_ce(skb);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
