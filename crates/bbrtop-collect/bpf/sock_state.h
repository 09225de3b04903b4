/* Per-socket state in socket-local storage, written by the TCP hooks of bpf/bbrtop.bpf.c. */
#ifndef BBRTOP_SOCK_STATE_H
#define BBRTOP_SOCK_STATE_H

#define BBR_MODES 4
#define BBR_DRAIN 1 /* enum bbr_mode, v1 and v3: STARTUP 0, DRAIN 1, PROBE_BW 2, PROBE_RTT 3 */

struct sock_state {
	/* Touched on every ACK, kept together at the start (next to the storage's own header). */
	/* The RTT windows, by the read epoch's parity: the hooks write the current epoch's while a
	 * dump reads the previous one's, which no hook writes any more (userspace bumps the epoch
	 * before it dumps), so a read is never torn and no sample falls between a read and the
	 * bump. First: userspace reads both at this offset. */
	struct bbrtop_rtt_window w[2];
	__u32 filled_epoch;        /* the read epoch of the socket's latest walk record */
	__u8 owed;                 /* moved since that record, which is behind (refill, bbrtop.bpf.c) */
	__u64 filled_ns;           /* ... and when it was filled */
	__u32 samples;             /* lifetime */
	__u8 is_bbr, mode, seen_phase;
	__u8 opened;               /* 1 by connect, 2 by accept (from its state change, or for an older socket its port: opened_by_port); 0 not yet known */
	const void *ca_ops;        /* the ops is_bbr was computed for */
	__u64 onset_ns;            /* 0: not inflated */
	/* As of the last segment seen with data in flight: its ACK took an RTT sample if RACK's
	 * moves, and was prompt if snd_una then stays before this snd_nxt. */
	__u64 prev_rack_mstamp;    /* tcp_sock rack.mstamp */
	__u32 prev_snd_nxt;
	__u32 bbr_min_rtt_us;      /* struct bbr's, as of the last read of it */
	/* The response under way: begun by a write to the idle socket, ended by the ACK that
	 * covers everything written since (bpf/bbrtop.h, struct bbrtop_resp). Every ACK tests
	 * resp_start_ns: it shares the third line of the storage with the fields above (the data
	 * starts 8 bytes into a cache-aligned line), so an ACK touches three lines, not four. */
	__u64 resp_start_ns;       /* 0: none */
	__u32 resp_start_seq;      /* write_seq at its first byte */
	__u32 peak_ratio_milli;    /* this inflation episode's */
	/* Responses delivered and not yet sent (bbrtop.bpf.c, queue_response): the low byte of
	 * `batch` counts them in done[], the rest counts the batches sent. The refill pass, which
	 * runs beside the hooks, sends a batch only if no hook changed `batch` meanwhile. */
	__u64 batch;
	struct bbrtop_resp_one done[BBRTOP_RESP_BATCH];
	/* Touched on transitions. */
	__u64 first_ns;
	__u64 phase_began_ns;
	__u32 peak_ratio_all;      /* lifetime */
	__u32 inflations;
	__u32 entered[BBR_MODES];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_state);
} socks SEC(".maps");

/* The read epoch: userspace bumps it before each read of the windows (an inet_diag dump, or a
 * walk); a socket's first move in a new epoch starts its window of that epoch's parity, and
 * refills its walk record. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} read_epoch SEC(".maps");

/* The current read epoch (0 before the first bump): an array lookup the verifier inlines. */
static __always_inline __u32 current_epoch(void)
{
	__u32 k = 0, *ep = bpf_map_lookup_elem(&read_epoch, &k);
	return ep ? *ep : 0;
}

#endif
