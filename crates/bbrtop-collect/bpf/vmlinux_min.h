/* Minimal CO-RE kernel types for bbrtop.bpf.c: only the members the programs read.
 * preserve_access_index makes every access a CO-RE relocation, resolved by libbpf against the
 * running kernel's BTF (/sys/kernel/btf/vmlinux) at load time, so layouts here need not match
 * any kernel; only names and types do. See README.md for why this is not a full vmlinux.h. */
#ifndef BBRTOP_VMLINUX_MIN_H
#define BBRTOP_VMLINUX_MIN_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_SK_STORAGE = 24,
};

enum {
	BPF_F_NO_PREALLOC = 1,
};

enum {
	BPF_SK_STORAGE_GET_F_CREATE = 1,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct in6_addr {
	union {
		__u8 u6_addr8[16];
		__be32 u6_addr32[4];
	} in6_u;
};

struct ns_common {
	unsigned int inum;
};

struct net {
	struct ns_common ns;
};

typedef struct {
	struct net *net;
} possible_net_t;

typedef struct {
	__s64 counter;
} atomic64_t;

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	volatile unsigned char skc_state;
	possible_net_t skc_net;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
	atomic64_t skc_cookie; /* 0 until first asked for (sock_gen_cookie) */
};

/* The socket walk's attribution: a socket's cgroup (v2) and its inode. */
struct kernfs_node {
	u64 id;
};

struct cgroup {
	struct kernfs_node *kn;
};

struct sock_cgroup_data {
	struct cgroup *cgroup;
};

typedef struct {
	__u32 val;
} kuid_t;

struct socket;

struct inode {
	unsigned long i_ino;
};

struct socket_alloc {
	struct socket *socket; /* a struct in the kernel; only its place matters here */
	struct inode vfs_inode;
};

struct rb_node {
	struct rb_node *rb_right;
};

struct rb_root {
	struct rb_node *rb_node;
};

struct sock {
	struct sock_common __sk_common;
	struct rb_root tcp_rtx_queue; /* TCP's segments sent and not yet acked, by sequence */
	u16 sk_protocol;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	kuid_t sk_uid;
	struct sock_cgroup_data sk_cgrp_data;
	struct socket *sk_socket;
};

/* The context of an iterator over a socket storage map (iter/bpf_sk_storage_map, Linux 5.9):
 * each socket that has storage in it, and that storage. */
struct bpf_iter_meta;
struct bpf_map;
struct bpf_iter__bpf_sk_storage_map {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
	struct sock *sk;
	void *value;
};

struct sk_buff {
	struct rb_node rbnode; /* in the retransmit queue */
	char cb[48];
	u64 skb_mstamp_ns;     /* when it was sent (its departure time, with pacing) */
};

/* TCP_SKB_CB(skb), which lives in skb->cb: the segment's ACK number as tcp_ack() reads it. */
struct tcp_skb_cb {
	__u32 ack_seq;
};

struct msghdr;

struct tcp_congestion_ops {
	char name[16];
};

struct inet_sock {
	struct sock sk;
	__be16 inet_sport;
};

/* A port's bind bucket: connect() gives the ones it creates fastreuse -1. */
struct inet_bind_bucket {
	__s8 fastreuse;
};

struct inet_connection_sock {
	struct inet_sock icsk_inet;
	struct inet_bind_bucket *icsk_bind_hash;
	__u32 icsk_rto;
	__u32 icsk_pmtu_cookie;
	const struct tcp_congestion_ops *icsk_ca_ops;
	__u8 icsk_ca_state: 5;
	__u8 icsk_retransmits;
	__u8 icsk_backoff;
	__u8 icsk_probes_out;
	struct {
		__u32 ato: 8;
		__u32 lrcvtime;
		__u16 rcv_mss;
	} icsk_ack;
	__u64 icsk_ca_priv[13];
};

struct minmax_sample {
	u32 t;
	u32 v;
};

struct minmax {
	struct minmax_sample s[3];
};

struct tcp_options_received {
	u16 tstamp_ok: 1, wscale_ok: 1, sack_ok: 3;
	u16 spacer;
	u16 snd_wscale: 4, rcv_wscale: 4;
};

/* Each bitfield sits in a storage unit of its own (see struct bbr below). */
struct tcp_sock {
	struct inet_connection_sock inet_conn;
	u32 srtt_us;
	u32 mdev_us;
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	struct minmax rtt_min;
	u32 mss_cache;
	u32 snd_cwnd;
	u32 snd_ssthresh;
	u32 total_retrans;
	u32 rate_delivered;
	u32 rate_interval_us;
	u8 rate_app_limited: 1;
	u32 spacer1;
	u8 fastopen_client_fail: 2;
	u32 spacer2;
	u8 syn_data_acked: 1;
	u32 spacer3;
	u8 syn_fastopen_child: 1;
	u32 spacer4;
	u8 tcp_usec_ts: 1;
	u32 spacer5;
	u64 bytes_acked;
	u64 bytes_received;
	u64 bytes_sent;
	u64 bytes_retrans;
	u32 segs_out;
	u32 segs_in;
	u32 data_segs_out;
	u32 data_segs_in;
	u32 delivered;
	u32 delivered_ce;
	u32 dsack_dups;
	u32 reord_seen;
	u32 rcv_ooopack;
	u32 snd_wnd;
	u32 rcv_wnd;
	u32 reordering;
	u32 rcv_ssthresh;
	u16 advmss;
	struct {
		u32 rtt_us;
	} rcv_rtt_est;
	struct {
		u32 space;
	} rcvq_space;
	u32 lsndtime;
	u32 rcv_tstamp;
	u32 write_seq;
	u32 snd_una;
	u32 snd_nxt;
	u8 chrono_type;
	u32 chrono_start;
	u32 chrono_stat[3];
	u32 rto_stamp;
	u16 total_rto;
	u16 total_rto_recoveries;
	u32 total_rto_time;
	u16 timeout_rehash;
	u32 plb_rehash;
	u8 ecn_flags;
	struct tcp_options_received rx_opt;
	u64 tcp_mstamp;
	/* RACK's latest (s)acked segment (4.10): when it was sent (µs) and its ACK's RTT. */
	struct tcp_rack {
		u64 mstamp;
		u32 rtt_us;
	} rack;
};

/* net/ipv4/tcp_bbr.c; present in vmlinux BTF when BBR is built in (module BTF otherwise). This is
 * mainline's (v1) layout; every member is read behind a CO-RE field check, since other BBRs name
 * the same struct differently (v3, at the end of this file). */
struct bbr {
	u32 min_rtt_us;
	struct minmax bw;
	/* The members between the bitfield words keep clang from merging them into one storage
	 * unit that would straddle an alignment boundary (a CO-RE bitfield read needs its unit). */
	u64 cycle_mstamp;
	u32 mode: 3, prev_ca_state: 3, packet_conservation: 1, round_start: 1, idle_restart: 1,
	    probe_rtt_round_done: 1, unused: 13, lt_is_sampling: 1, lt_rtt_cnt: 7, lt_use_bw: 1;
	u32 lt_bw;
	u32 pacing_gain: 10, cwnd_gain: 10, full_bw_reached: 1, full_bw_cnt: 2, cycle_idx: 3,
	    has_seen_rtt: 1, unused_b: 5;
};

/* ------------------------------------------------------------------------------------------
 * Other BBR versions' struct bbr, as libbpf "flavors": the suffix after ___ is ignored when
 * relocating, so struct bbr___v3 matches the kernel's struct bbr, and each of its members
 * resolves only where that struct has it. Only what v3 has and v1 lacks is here; the members
 * both share (min_rtt_us, mode, cycle_idx, full_bw_reached) are read through struct bbr above,
 * CO-RE taking their offsets and bitfield widths (v3's mode and cycle_idx are 2 bits) from the
 * kernel. google/bbr v3, net/ipv4/tcp_bbr.c: bw_hi[2] replaces v1's bw max filter (the max of
 * its two slots is the estimate); cycle_idx counts v3's PROBE_BW steps (UP, DOWN, CRUISE,
 * REFILL). v2alpha registers as "bbr2", which the programs do not read (its phase comes with
 * its netlink info).
 * ------------------------------------------------------------------------------------------ */
struct bbr___v3 {
	u32 bw_lo;
	u32 bw_hi[2];
	u32 inflight_lo;
	u32 inflight_hi;
};

#pragma clang attribute pop

#endif
