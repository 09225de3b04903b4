/* Event layouts shared by bpf/bbrtop.bpf.c and src/bpf/event.rs (which decodes them by the
 * offsets below; a Rust test checks the sizes against the skeleton's generated types).
 * All integers are little-endian host order; addresses are network order. */
#ifndef BBRTOP_H
#define BBRTOP_H

enum bbrtop_kind {
	BBRTOP_INFL_START = 1,
	BBRTOP_INFL_END = 2,
	BBRTOP_PHASE = 3,
	BBRTOP_CLOSE = 4,
	BBRTOP_RESPONSE = 5,
};

/* The members of struct bbr the programs read (the global `bbr_read`, which a program writes as
 * it first reads a BBR socket): bits, so userspace decodes what the loaded code does. */
enum bbrtop_bbr_read {
	BBRTOP_BBR_READ_MODE = 1,
	BBRTOP_BBR_READ_CYCLE = 2,
	BBRTOP_BBR_READ_MIN_RTT = 4,
	BBRTOP_BBR_READ_BW = 8,
	BBRTOP_BBR_READ_FULL_BW = 16,
	BBRTOP_BBR_READ_LT = 32,
	BBRTOP_BBR_READ_V3 = 64,
};

/* 24 bytes, first in every event. */
struct bbrtop_hdr {
	__u32 kind;
	__u32 netns;   /* inode of the socket's network namespace */
	__u64 cookie;  /* socket cookie: joins with inet_diag's idiag_cookie */
	__u64 ts_ns;   /* bpf_ktime_get_ns() when sent */
};

/* INFL_START / INFL_END: 48 bytes. The kernel times a spell of inflation per prompt RTT
 * sample (see struct bbrtop_rtt_window): `srtt_us` is that sample, not the smoothed RTT. */
struct bbrtop_infl {
	struct bbrtop_hdr h;
	__u32 srtt_us;
	__u32 baseline_us;
	__u64 onset_ns;        /* ktime of the onset (for END: of the episode that ended) */
	__u32 peak_ratio_milli; /* peak srtt/baseline x1000 in this episode */
	__u32 _pad;
};

/* PHASE: 56 bytes. A change of BBR mode (PROBE_BW's steps ride in the RTT window instead). */
struct bbrtop_phase {
	struct bbrtop_hdr h;
	__u8 mode;
	__u8 cycle_idx;
	__u8 full_bw_reached;
	__u8 lt_use_bw;
	__u8 prev_mode;
	__u8 cycle_v3;         /* 1: cycle_idx counts v3's steps (UP, DOWN, CRUISE, REFILL) */
	__u16 _pad;
	__u64 prev_began_ns;   /* when the previous phase began */
	__u32 min_rtt_us;      /* bbr->min_rtt_us */
	__u32 entered;         /* times this mode was entered (this one included) */
	__u64 bw;              /* the bw BBR models (v1: lt_bw while lt_use_bw, else the filter; v3: bw_hi): pkts per usec << 24 */
};

/* CLOSE: 192 bytes, one per destroyed TCP socket. Its counters are the socket's last, so the
 * per-cc counters userspace keeps count what it sent between its last poll and its close. */
struct bbrtop_close {
	struct bbrtop_hdr h;
	__u16 family;          /* AF_INET 2 or AF_INET6 10 */
	__u16 lport;           /* host order */
	__u16 rport;           /* host order */
	__u8 is_bbr;
	__u8 bbr_mode;
	__u8 saddr[16];        /* v4: first 4 bytes */
	__u8 daddr[16];
	char cc[16];
	__u64 lifetime_ns;     /* since established, or first seen by a hook (bpf/bbrtop.bpf.c adopt); 0 if never */
	__u64 bytes_acked;
	__u64 bytes_received;
	__u32 total_retrans;
	__u32 srtt_us;
	__u32 min_rtt_us;      /* tcp_sock rtt_min (windowed) */
	__u32 rate_delivered;  /* packets, over rate_interval_us */
	__u32 rate_interval_us;
	__u32 mss;
	__u32 bbr_min_rtt_us;
	__u32 peak_ratio_milli;
	__u64 bbr_bw;
	__u32 rtt_samples;
	__u32 inflations;      /* inflation onsets seen */
	__u64 bytes_sent;
	__u64 bytes_retrans;
	__u32 segs_out;
	__u32 delivered;
	__u32 delivered_ce;
	__u32 dsack_dups;
	__u32 total_rto;       /* 0 where the kernel has no total_rto (before 6.7) */
	__u32 _pad;
};

/* Responses a RESPONSE record carries at most, and a socket's storage holds until it sends them. */
#define BBRTOP_RESP_BATCH 8
#define BBRTOP_TOOK_MS 0x80000000U

/* One response a socket delivered, in a RESPONSE record: 16 bytes. From the first byte the
 * application wrote to the idle socket (nothing unacknowledged, nothing queued) to the ACK that
 * covered every byte written since (or the socket's end, for a response whose last ACK came
 * after it left ESTABLISHED, where tcp_probe is silent). */
struct bbrtop_resp_one {
	__u64 start_ns;        /* ktime of the first write */
	__u32 took_us;         /* to the delivery of its last byte, in µs below 2^31 (35 minutes),
				* else in ms with BBRTOP_TOOK_MS set (a long download) */
	__u32 bytes;           /* bytes written in it */
};

/* RESPONSE: 192 bytes, the responses one socket delivered since its last such record, `n` of
 * them: a socket sends them at its eighth, when its first is a second old, at its close, or
 * when the refill pass finds it quiet (bpf/bbrtop.bpf.c, queue_response). h.ts_ns is when the
 * record was sent; the cc is the socket's then. */
struct bbrtop_resp {
	struct bbrtop_hdr h;
	__u16 family;          /* AF_INET 2 or AF_INET6 10 */
	__u8 n;                /* responses in r[], 1 to BBRTOP_RESP_BATCH */
	__u8 opened;           /* how the socket was opened: 1 connect, 2 accept, 0 unknown (older than bbrtop, unbound) */
	__u16 lport;           /* host order */
	__u16 rport;           /* host order */
	__u8 daddr[16];        /* the peer; v4: first 4 bytes */
	char cc[16];
	struct bbrtop_resp_one r[BBRTOP_RESP_BATCH];
};

/* The RTT window of one socket over one read epoch: 40 bytes. Its socket-local storage starts
 * with two, by the epoch's parity (bpf/sock_state.h), which userspace reads with each inet_diag
 * dump (INET_DIAG_REQ_SK_BPF_STORAGES). Userspace bumps the epoch (map read_epoch) before each
 * dump and reads the previous epoch's window, which the socket's ACKs no longer write: they
 * start the new epoch's. A window whose epoch is not the one read saw no ACK in that epoch.
 * For BBR sockets it also holds BBR's state at the latest ACK, so PROBE_BW's steps need no
 * event of their own.
 *
 * Besides srtt after each ACK, it keeps the RTT samples themselves (what tcp_rtt_estimator was
 * handed, recovered from srtt's step), and apart the "prompt" ones: taken by an ACK that left
 * data in flight. The ACK of a response's last segment acks everything; the peer's delayed-ACK
 * timer often sent it, so its sample carries that wait. A prompt sample cannot: more data was
 * coming, and the receiver acks every second full segment at once. A standing queue raises
 * every prompt sample; the alert judges those (ARCHITECTURE.md, "The alert rule"). */
struct bbrtop_rtt_window {
	__u32 epoch;
	__u32 samples;         /* ACKs with data in flight in this window */
	__u32 last_srtt_us;
	__u32 min_srtt_us;
	__u32 max_srtt_us;
	__u8 bbr;              /* 1: a BBR socket, and the next three bytes are its state */
	__u8 bbr_mode;         /* struct bbr: mode */
	__u8 cycle_idx;        /* struct bbr: cycle_idx */
	__u8 bbr_flags;        /* bit 0: full_bw_reached, bit 1: lt_use_bw, bit 2: v3's cycle_idx */
	__u32 rtt_samples;     /* RTT samples in this window, prompt or not */
	__u32 rtt_min_us;      /* the smallest of them */
	__u32 prompt_samples;  /* those taken with data still in flight after their ACK */
	__u32 prompt_min_us;   /* the smallest of those */
};

/* struct tcp_info (include/uapi/linux/tcp.h) through tcpi_total_rto_time: 248 bytes, filled by
 * the hooks as tcp_get_info fills it. Userspace decodes it with the same code as netlink's copy. */
#define BBRTOP_TCP_INFO_LEN 248

/* The socket walk's record of one socket that moved (bpf/sock_record.h): 416 bytes (412 and
 * the alignment's padding). */
struct bbrtop_sock {
	__u64 cookie;
	__u64 cgroup_id;       /* cgroup v2 id (the inode of its directory), 0 if none */
	__u32 netns;           /* inode of the socket's network namespace */
	__u32 uid;
	__u32 inode;           /* the socket's inode, 0 once the file is gone */
	__u16 family;          /* AF_INET 2 or AF_INET6 10 */
	__u16 lport;           /* host order */
	__u16 rport;           /* host order */
	__u8 state;            /* TCP_ESTABLISHED 1, ... */
	__u8 bbr_len;          /* bytes of bbr[] filled (tcp_bbr_info v1), 0 if not BBR */
	__u16 hz;              /* the kernel's HZ, which the jiffies fields were converted with */
	__u16 info_len;        /* bytes of info[] filled */
	__u8 chrono;           /* the chrono running when filled: 1 busy, 2 rwnd-, 3 sndbuf-limited */
	__u8 _pad[3];
	__u64 filled_ns;       /* bpf_ktime_get_ns() when filled */
	__u8 saddr[16];        /* v4: first 4 bytes */
	__u8 daddr[16];
	char cc[16];
	struct bbrtop_rtt_window w;
	__u8 info[BBRTOP_TCP_INFO_LEN];
	__u8 bbr[20];
};

#endif
