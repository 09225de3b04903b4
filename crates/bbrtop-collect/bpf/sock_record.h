/* The socket walk's record (struct bbrtop_sock, bpf/bbrtop.h), filled by the TCP hooks of
 * bpf/bbrtop.bpf.c when a socket moves: tcp_info as tcp_get_info computes it, tcp_bbr_info as
 * bbr_get_info does, and the socket's identity and attribution. */
#ifndef BBRTOP_SOCK_RECORD_H
#define BBRTOP_SOCK_RECORD_H

#define USEC_PER_SEC 1000000ULL

/* Weak: without /proc/config.gz libbpf leaves it 0, and the records then carry no tcp_info. */
extern unsigned int CONFIG_HZ __kconfig __weak;

/* include/uapi/linux/tcp.h's layout, through tcpi_total_rto_time. */
struct tcpi {
	__u8 state, ca_state, retransmits, probes, backoff, options, wscale, flags;
	__u32 rto, ato, snd_mss, rcv_mss;
	__u32 unacked, sacked, lost, retrans, fackets;
	__u32 last_data_sent, last_ack_sent, last_data_recv, last_ack_recv;
	__u32 pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss, reordering;
	__u32 rcv_rtt, rcv_space, total_retrans;
	__u64 pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
	__u32 segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in, data_segs_out;
	__u64 delivery_rate, busy_time, rwnd_limited, sndbuf_limited;
	__u32 delivered, delivered_ce;
	__u64 bytes_sent, bytes_retrans;
	__u32 dsack_dups, reord_seen, rcv_ooopack, snd_wnd, rcv_wnd, rehash;
	__u16 total_rto, total_rto_recoveries;
	__u32 total_rto_time;
};

#define TCPI_OPT_TIMESTAMPS 1
#define TCPI_OPT_SACK 2
#define TCPI_OPT_WSCALE 4
#define TCPI_OPT_ECN 8
#define TCPI_OPT_ECN_SEEN 16
#define TCPI_OPT_SYN_DATA 32
#define TCPI_OPT_USEC_TS 64
#define TCPI_OPT_TFO_CHILD 128
#define TCP_ECN_MODE_ANY 0x11 /* RFC 3168 or AccECN negotiated */
#define TCP_ECN_SEEN 8
#define TCP_CHRONO_BUSY 1

static __always_inline __u32 j2us(__u32 j, __u32 hz) { return j * (USEC_PER_SEC / hz); }
static __always_inline __u32 j2ms(__u32 j, __u32 hz) { return j * (1000 / hz); }

static __always_inline __u8 options_of(struct tcp_sock *tp)
{
	__u8 o = 0;
	if (BPF_CORE_READ_BITFIELD(tp, rx_opt.tstamp_ok))
		o |= TCPI_OPT_TIMESTAMPS;
	if (BPF_CORE_READ_BITFIELD(tp, rx_opt.sack_ok))
		o |= TCPI_OPT_SACK;
	if (BPF_CORE_READ_BITFIELD(tp, rx_opt.wscale_ok))
		o |= TCPI_OPT_WSCALE;
	if (tp->ecn_flags & TCP_ECN_MODE_ANY)
		o |= TCPI_OPT_ECN;
	if (tp->ecn_flags & TCP_ECN_SEEN)
		o |= TCPI_OPT_ECN_SEEN;
	if (BPF_CORE_READ_BITFIELD(tp, syn_data_acked))
		o |= TCPI_OPT_SYN_DATA;
	if (bpf_core_field_exists(tp->tcp_usec_ts) && BPF_CORE_READ_BITFIELD(tp, tcp_usec_ts))
		o |= TCPI_OPT_USEC_TS;
	if (bpf_core_field_exists(tp->syn_fastopen_child) && BPF_CORE_READ_BITFIELD(tp, syn_fastopen_child))
		o |= TCPI_OPT_TFO_CHILD;
	return o;
}

/* tcp_get_info's chrono stats: busy, rwnd-limited and sndbuf-limited time, in µs. */
static __always_inline void chrono_of(struct tcpi *i, struct tcp_sock *tp, __u32 now, __u32 hz)
{
	__u64 stats[3];
	/* A 2-bit field before 6.8's reordering of tcp_sock, a byte after. */
	__u32 type = BPF_CORE_READ_BITFIELD(tp, chrono_type);
	for (int k = 0; k < 3; k++) {
		stats[k] = tp->chrono_stat[k];
		if (k + TCP_CHRONO_BUSY == type)
			stats[k] += now - tp->chrono_start;
		stats[k] *= USEC_PER_SEC / hz;
	}
	i->busy_time = stats[0] + stats[1] + stats[2];
	i->rwnd_limited = stats[1];
	i->sndbuf_limited = stats[2];
}

static __always_inline void fill_info(struct tcpi *i, struct sock *sk, struct tcp_sock *tp, __u32 hz)
{
	struct inet_connection_sock *icsk = &tp->inet_conn;
	__u32 now = (__u32)bpf_jiffies64();

	i->state = sk->__sk_common.skc_state;
	i->ca_state = BPF_CORE_READ_BITFIELD(tp, inet_conn.icsk_ca_state);
	i->retransmits = icsk->icsk_retransmits;
	i->probes = icsk->icsk_probes_out;
	i->backoff = icsk->icsk_backoff;
	i->options = options_of(tp);
	if (BPF_CORE_READ_BITFIELD(tp, rx_opt.wscale_ok))
		i->wscale = BPF_CORE_READ_BITFIELD(tp, rx_opt.snd_wscale) |
			    BPF_CORE_READ_BITFIELD(tp, rx_opt.rcv_wscale) << 4;
	i->flags = BPF_CORE_READ_BITFIELD(tp, rate_app_limited) |
		   BPF_CORE_READ_BITFIELD(tp, fastopen_client_fail) << 1;
	i->rto = j2us(icsk->icsk_rto, hz);
	i->ato = j2us(BPF_CORE_READ_BITFIELD(tp, inet_conn.icsk_ack.ato), hz);
	i->snd_mss = tp->mss_cache;
	i->rcv_mss = icsk->icsk_ack.rcv_mss;
	i->unacked = tp->packets_out;
	i->sacked = tp->sacked_out;
	i->lost = tp->lost_out;
	i->retrans = tp->retrans_out;
	i->last_data_sent = j2ms(now - tp->lsndtime, hz);
	i->last_data_recv = j2ms(now - icsk->icsk_ack.lrcvtime, hz);
	i->last_ack_recv = j2ms(now - tp->rcv_tstamp, hz);
	i->pmtu = icsk->icsk_pmtu_cookie;
	i->rcv_ssthresh = tp->rcv_ssthresh;
	i->rtt = tp->srtt_us >> 3;
	i->rttvar = tp->mdev_us >> 2;
	i->snd_ssthresh = tp->snd_ssthresh;
	i->snd_cwnd = tp->snd_cwnd;
	i->advmss = tp->advmss;
	i->reordering = tp->reordering;
	i->rcv_rtt = tp->rcv_rtt_est.rtt_us >> 3;
	i->rcv_space = tp->rcvq_space.space;
	i->total_retrans = tp->total_retrans;
	i->pacing_rate = sk->sk_pacing_rate;
	i->max_pacing_rate = sk->sk_max_pacing_rate;
	i->bytes_acked = tp->bytes_acked;
	i->bytes_received = tp->bytes_received;
	i->segs_out = tp->segs_out;
	i->segs_in = tp->segs_in;
	__s32 notsent = tp->write_seq - tp->snd_nxt;
	i->notsent_bytes = notsent > 0 ? notsent : 0;
	i->min_rtt = tp->rtt_min.s[0].v;
	i->data_segs_in = tp->data_segs_in;
	i->data_segs_out = tp->data_segs_out;
	__u32 delivered = tp->rate_delivered, intv = tp->rate_interval_us;
	if (delivered && intv)
		i->delivery_rate = (__u64)delivered * tp->mss_cache * USEC_PER_SEC / intv;
	chrono_of(i, tp, now, hz);
	i->delivered = tp->delivered;
	i->delivered_ce = tp->delivered_ce;
	i->bytes_sent = tp->bytes_sent;
	i->bytes_retrans = tp->bytes_retrans;
	i->dsack_dups = tp->dsack_dups;
	i->reord_seen = tp->reord_seen;
	i->rcv_ooopack = tp->rcv_ooopack;
	i->snd_wnd = tp->snd_wnd;
	i->rcv_wnd = tp->rcv_wnd;
	/* Members newer than the programs' floor (tcp_get_info reports them from the same
	 * release): plb_rehash 6.2, timeout_rehash 5.10 (both as tcpi_rehash, 6.2), the RTO
	 * counters 6.7. Absent, their bytes stay zero, as the kernel's own tcp_info lacks them. */
	if (bpf_core_field_exists(tp->plb_rehash) && bpf_core_field_exists(tp->timeout_rehash))
		i->rehash = tp->plb_rehash + tp->timeout_rehash;
	if (bpf_core_field_exists(tp->total_rto)) {
		i->total_rto = tp->total_rto;
		i->total_rto_recoveries = tp->total_rto_recoveries;
		i->total_rto_time = tp->total_rto_time;
		if (tp->rto_stamp)
			i->total_rto_time += (__u32)(bpf_ktime_get_ns() / 1000000) - tp->rto_stamp;
	}
}

/* bbr_get_info: v1's tcp_bbr_info, when struct bbr has every v1 field it reads (each checked, as
 * in bpf/bbrtop.bpf.c). v3's info is longer and comes over netlink; the walk writes none for it. */
static __always_inline __u8 fill_bbr(__u8 *out, struct tcp_sock *tp)
{
	if (!bpf_core_field_exists(struct bbr, lt_use_bw) || !bpf_core_field_exists(struct bbr, lt_bw) ||
	    !bpf_core_field_exists(struct bbr, bw) || !bpf_core_field_exists(struct bbr, min_rtt_us) ||
	    !bpf_core_field_exists(struct bbr, pacing_gain) || !bpf_core_field_exists(struct bbr, cwnd_gain))
		return 0;
	struct bbr *bbr = (struct bbr *)&tp->inet_conn.icsk_ca_priv;
	/* bbrtop.bpf.c's: lt_bw while v1 polices, as bbr_get_info takes it. */
	__u64 bw = bbr_bw(bbr) * tp->mss_cache * USEC_PER_SEC >> 24; /* BW_SCALE */
	__u32 *o = (__u32 *)out;
	o[0] = (__u32)bw;
	o[1] = (__u32)(bw >> 32);
	o[2] = bbr->min_rtt_us;
	o[3] = BPF_CORE_READ_BITFIELD(bbr, pacing_gain);
	o[4] = BPF_CORE_READ_BITFIELD(bbr, cwnd_gain);
	return 20;
}

static __always_inline void fill_identity(struct bbrtop_sock *r, struct sock *sk)
{
	struct sock_common *c = &sk->__sk_common;
	r->cookie = cookie_of(sk);
	r->netns = c->skc_net.net->ns.inum;
	r->family = c->skc_family;
	r->lport = c->skc_num;
	r->rport = __builtin_bswap16(c->skc_dport);
	if (r->family == AF_INET6) {
		copy_in6(r->saddr, &c->skc_v6_rcv_saddr);
		copy_in6(r->daddr, &c->skc_v6_daddr);
	} else {
		*(__u32 *)r->saddr = c->skc_rcv_saddr;
		*(__u32 *)r->daddr = c->skc_daddr;
	}
	r->uid = sk->sk_uid.val;
	/* A pointer since 5.15; before, a word shared with net_cls's data. */
	if (bpf_core_field_exists(sk->sk_cgrp_data.cgroup)) {
		struct cgroup *cg = sk->sk_cgrp_data.cgroup;
		r->cgroup_id = cg ? cg->kn->id : 0;
	}
	/* The socket's inode follows it in its allocation, as SOCK_INODE() finds it. */
	struct socket *so = sk->sk_socket;
	if (so && bpf_ksym_exists(bpf_rdonly_cast)) {
		struct socket_alloc *sa = bpf_rdonly_cast(so, bpf_core_type_id_kernel(struct socket_alloc));
		r->inode = sa->vfs_inode.i_ino;
	} else if (so) {
		unsigned long ino = 0;
		bpf_core_read(&ino, sizeof(ino), &((struct socket_alloc *)so)->vfs_inode.i_ino);
		r->inode = ino;
	}
}


/* Fills `r` for `sk` as of now, with the RTT window `w` (the current epoch's). */
static __always_inline void fill_record(struct bbrtop_sock *r, struct sock *sk, struct tcp_sock *tp,
					 const struct bbrtop_rtt_window *w, __u64 now)
{
	__u32 hz = CONFIG_HZ;

	__builtin_memset(r, 0, sizeof(*r));
	fill_identity(r, sk);
	r->filled_ns = now;
	r->state = sk->__sk_common.skc_state;
	r->hz = hz;
	r->w = *w;
	const struct tcp_congestion_ops *ops = tp->inet_conn.icsk_ca_ops;
	if (ops)
		copy_cc_name(r->cc, ops);
	r->chrono = BPF_CORE_READ_BITFIELD(tp, chrono_type);
	if (hz) {
		fill_info((struct tcpi *)r->info, sk, tp, hz);
		r->info_len = sizeof(struct tcpi);
	}
	if (r->cc[0] == 'b' && r->cc[1] == 'b' && r->cc[2] == 'r' && r->cc[3] == 0)
		r->bbr_len = fill_bbr(r->bbr, tp);
}

#endif
