// SPDX-License-Identifier: GPL-2.0
/* `bbrtop experiment`: a cgroup sock_ops program that gives each new connection of the cgroup a
 * congestion control drawn by a seeded hash of its unit (the connection, the peer, or the peer's
 * /24 or /64), so the assignment is random across units, stable within one, and predictable by
 * userspace (src/experiment/mod.rs has the same hash). Existing connections are never touched:
 * sock_ops sees a connection only from its handshake on. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_ARMS 4
#define MAX_PORTS 8
#define CC_LEN 16
#define SOL_TCP 6
#define TCP_CONGESTION 13
#define AF_INET 2
#define AF_INET6 10

enum unit { UNIT_CONNECTION = 0, UNIT_PEER = 1, UNIT_PREFIX = 2 };

/* Set by userspace before load. */
const volatile __u64 seed = 0;
const volatile __u32 unit = UNIT_CONNECTION;
const volatile __u32 n_arms = 0;
const volatile __u32 dry_run = 0;
const volatile __u32 n_ports = 0;
const volatile __u16 ports[MAX_PORTS] = {};
/* Cumulative upper bounds in parts per 10,000: arm i takes buckets below cum[i]. */
const volatile __u32 cum[MAX_ARMS] = {};
const volatile char cc[MAX_ARMS][CC_LEN] = {};
/* 1 for an arm whose cc needs ECN negotiated in the handshake (the kernel's TCP_CONG_NEEDS_ECN). */
const volatile __u8 ecn[MAX_ARMS] = {};

/* Userspace may close an arm while running (1 open, 0 closed): its units get arm 0. */
__u32 open[MAX_ARMS] = { 1, 1, 1, 1 };

/* Counts per arm, added atomically; userspace reads them through the mmapped .bss. `assigned`
 * counts the connections whose cc this program set (in a dry run, would have), `failed` those
 * whose bpf_setsockopt the kernel refused: they keep their cc, and no arm. */
__u64 assigned[MAX_ARMS] = {};
__u64 failed[MAX_ARMS] = {};
__u64 redirected[MAX_ARMS] = {};

/* Socket cookie -> arm index, so userspace can tell each connection's arm. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} arms SEC(".maps");

/* splitmix64's finalizer. */
static __always_inline __u64 mix(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* An address as two 64-bit words, big-endian: IPv4 (and IPv4-mapped IPv6) as (0, a.b.c.d). */
static __always_inline void words(__u32 family, __u32 ip4, const __u32 *ip6, __u64 *hi, __u64 *lo,
				  __u32 *v4)
{
	if (family == AF_INET6 && !(ip6[0] == 0 && ip6[1] == 0 && ip6[2] == bpf_htonl(0xffff))) {
		*hi = ((__u64)bpf_ntohl(ip6[0]) << 32) | bpf_ntohl(ip6[1]);
		*lo = ((__u64)bpf_ntohl(ip6[2]) << 32) | bpf_ntohl(ip6[3]);
		*v4 = 0;
		return;
	}
	*hi = 0;
	*lo = family == AF_INET6 ? bpf_ntohl(ip6[3]) : bpf_ntohl(ip4);
	*v4 = 1;
}

static __always_inline int port_wanted(__u16 lport)
{
	if (n_ports == 0)
		return 1;
#pragma unroll
	for (int i = 0; i < MAX_PORTS; i++)
		if (i < n_ports && ports[i] == lport)
			return 1;
	return 0;
}

/* The arm a connection's unit draws, before closed arms are redirected; -1 for a connection the
 * experiment leaves alone. The same for every op of one connection: the 4-tuple is known from
 * the SYN on (on the passive side, from the request socket's). */
static __always_inline int draw(struct bpf_sock_ops *skops)
{
	__u32 family = skops->family;
	if (family != AF_INET && family != AF_INET6)
		return -1;
	__u16 lport = skops->local_port;
	__u16 rport = bpf_ntohl(skops->remote_port) & 0xffff;
	if (!port_wanted(lport))
		return -1;

	__u32 lip6[4] = { skops->local_ip6[0], skops->local_ip6[1], skops->local_ip6[2], skops->local_ip6[3] };
	__u32 rip6[4] = { skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2], skops->remote_ip6[3] };
	__u64 lhi, llo, rhi, rlo;
	__u32 lv4, rv4;
	words(family, skops->local_ip4, lip6, &lhi, &llo, &lv4);
	words(family, skops->remote_ip4, rip6, &rhi, &rlo, &rv4);

	/* The unit's words: (4|6) << 32 | lport << 16 | rport, local hi, lo, remote hi, lo; what the
	 * unit leaves out is zero. */
	__u64 w0 = (__u64)(rv4 ? 4 : 6) << 32;
	if (unit == UNIT_CONNECTION) {
		w0 |= ((__u64)lport << 16) | rport;
	} else {
		lhi = llo = 0;
		if (unit == UNIT_PREFIX) {
			if (rv4)
				rlo &= 0xffffff00ULL;
			else
				rlo = 0;
		}
	}
	__u64 h = seed;
	h = mix(h ^ w0);
	h = mix(h ^ lhi);
	h = mix(h ^ llo);
	h = mix(h ^ rhi);
	h = mix(h ^ rlo);
	__u32 bucket = h % 10000;

	int arm = 0;
#pragma unroll
	for (int i = MAX_ARMS - 1; i >= 0; i--)
		if (i < n_arms && bucket < cum[i])
			arm = i;
	return arm;
}

/* A cc that needs ECN (dctcp) falls back to its Reno mode when it is set on a connection whose
 * handshake did not negotiate ECN, and the cc is set at the handshake's end. The kernel asks
 * this op as it builds a SYN (and a request socket's SYN-ACK): the answer 1 asks for ECN there,
 * for the connections of an arm whose cc needs it. A closed arm's units go to arm 0 and ask as
 * arm 0 would. */
static __always_inline int needs_ecn(struct bpf_sock_ops *skops)
{
	int arm = draw(skops);
	if (arm < 0 || arm >= MAX_ARMS || dry_run)
		return 0;
	if (!open[arm])
		arm = 0;
	asm volatile("" : "+r"(arm));
	arm &= MAX_ARMS - 1;
	return ecn[arm];
}

SEC("sockops")
int experiment(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;

	if (op == BPF_SOCK_OPS_NEEDS_ECN) {
		skops->reply = needs_ecn(skops);
		return 1;
	}
	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return 1;
	int drawn = draw(skops);
	if (drawn < 0 || drawn >= MAX_ARMS)
		return 1;
	__u32 arm = drawn;
	if (!open[arm]) {
		__sync_fetch_and_add(&redirected[arm], 1);
		arm = 0;
	}

	/* The verifier loses arm's bound across a spill: hide it from the compiler, bound it again. */
	asm volatile("" : "+r"(arm));
	arm &= MAX_ARMS - 1;
	if (!dry_run) {
		char name[CC_LEN] = {};
#pragma unroll
		for (int i = 0; i < CC_LEN; i++)
			name[i] = cc[arm][i];
		if (bpf_setsockopt(skops, SOL_TCP, TCP_CONGESTION, name, sizeof(name)) != 0) {
			__sync_fetch_and_add(&failed[arm], 1);
			return 1;
		}
	}
	__sync_fetch_and_add(&assigned[arm], 1);
	__u64 cookie = bpf_get_socket_cookie(skops);
	bpf_map_update_elem(&arms, &cookie, &arm, BPF_ANY);
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
