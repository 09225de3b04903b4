// SPDX-License-Identifier: GPL-2.0
/* bbrtop kernel half: per-socket RTT state and true BBR state on every ACK (tp_btf/tcp_probe),
 * kept in socket-local storage; only transitions (inflation started/ended, BBR phase changed)
 * and one record per closed socket reach userspace, through a ring buffer. */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bbrtop.h"
#include "sock_state.h"

#define AF_INET6 10
#define IPPROTO_TCP 6
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_CLOSE 7

/* A verifier-inlined cast (no helper call, Linux 6.2): the result reads as an untrusted BTF
 * pointer, each load a PROBE_MEM load. The hooks only fire for full TCP sockets, so the cast
 * holds. Weak, so that an older kernel loads: libbpf resolves bpf_ksym_exists() to a constant,
 * and the verifier skips the branch this kernel cannot take. There, bpf_skc_to_tcp_sock (5.9)
 * checks the socket and returns the same pointer, for a helper call. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline struct tcp_sock *tcp_sk_of(struct sock *sk)
{
	if (bpf_ksym_exists(bpf_rdonly_cast))
		return bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	return bpf_skc_to_tcp_sock(sk);
}
#define TCP_SK(sk) tcp_sk_of(sk)
/* struct bbr is in the kernel's BTF when BBR is built in, or its module was loaded before us, and
 * its members differ between BBR versions. Every read of it sits behind a CO-RE check of that
 * very member, which libbpf turns into a constant at load time (0 when the type is absent): a
 * read of a member this kernel lacks is then dead code, which the verifier skips, the rest
 * loads, and userspace reports what was read (src/bpf/loader.rs). The check must sit in each
 * branch itself, so that the verifier sees the constant. */
#define BBR_HAS(f) bpf_core_field_exists(struct bbr, f)
#define BBR_V3_HAS(f) bpf_core_field_exists(struct bbr___v3, f)
/* BBR's phase needs both its mode and its place in the PROBE_BW cycle. */
#define BBR_HAS_PHASE (BBR_HAS(mode) && BBR_HAS(cycle_idx))
/* Which members of struct bbr the programs read, as libbpf relocated them for this kernel (bits
 * in bbrtop.h's BBRTOP_BBR_READ_*). A program writes it as it first reads a BBR socket, so the
 * status userspace shows is what the loaded code does, not what a BTF file suggests. */
#define BBR_READ_MASK                                                                              \
	((BBR_HAS(mode) ? BBRTOP_BBR_READ_MODE : 0) | (BBR_HAS(cycle_idx) ? BBRTOP_BBR_READ_CYCLE : 0) | \
	 (BBR_HAS(min_rtt_us) ? BBRTOP_BBR_READ_MIN_RTT : 0) |                                      \
	 ((BBR_HAS(bw) || BBR_V3_HAS(bw_hi)) ? BBRTOP_BBR_READ_BW : 0) |                            \
	 (BBR_HAS(full_bw_reached) ? BBRTOP_BBR_READ_FULL_BW : 0) |                                 \
	 (BBR_HAS(lt_use_bw) ? BBRTOP_BBR_READ_LT : 0) | (BBR_V3_HAS(bw_hi) ? BBRTOP_BBR_READ_V3 : 0))
__u32 bbr_read = 0;
#define BBR_FLAG_FULL_BW 1
#define BBR_FLAG_LT_BW 2
#define BBR_FLAG_V3_CYCLE 4

/* Set by userspace before load: the alert rule (ARCHITECTURE.md), same values as userspace. */
const volatile __u32 ratio_milli = 1500; /* inflated while srtt*1000 >= ratio_milli*baseline */
const volatile __u32 floor_us = 1000;    /* ... and srtt - baseline >= floor_us */


struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");


/* Ring-buffer reserve failures, per CPU; userspace sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Referenced so the skeleton carries the event types (Rust checks their sizes). */
struct bbrtop_infl _infl_layout = {};
struct bbrtop_phase _phase_layout = {};
struct bbrtop_close _close_layout = {};
struct bbrtop_rtt_window _window_layout = {};
struct bbrtop_sock _sock_layout = {};
struct bbrtop_resp _resp_layout = {};

/* Adds one to entry `k` of a per-CPU array of counts. */
static __always_inline void count_in(void *map, __u32 k)
{
	__u64 *v = bpf_map_lookup_elem(map, &k);
	if (v)
		*v += 1;
}

/* The socket's cookie: a load once it has one (given by the first event, walk record or
 * inet_diag dump that asked), else the helper, which gives it. The helper is a call on every
 * response otherwise. */
static __always_inline __u64 cookie_of(struct sock *sk)
{
	__u64 c = sk->__sk_common.skc_cookie.counter;

	return c ? c : bpf_get_socket_cookie(sk);
}

/* The cc's name, as the 16 bytes of its array (NUL-padded: the ops are static): two loads, not
 * a probe-read helper call, on every response and walk record. */
static __always_inline void copy_cc_name(char *dst, const struct tcp_congestion_ops *ops)
{
	const __u64 *name = (const __u64 *)ops->name;

	((__u64 *)dst)[0] = name[0];
	((__u64 *)dst)[1] = name[1];
}

static __always_inline void fill_hdr(struct bbrtop_hdr *h, __u32 kind, struct sock *sk, __u64 now)
{
	h->kind = kind;
	h->netns = sk->__sk_common.skc_net.net->ns.inum;
	h->cookie = cookie_of(sk);
	h->ts_ns = now;
}

static __always_inline bool is_bbr_ops(const struct tcp_congestion_ops *ops)
{
	char n[4] = {};
	bpf_probe_read_kernel(n, sizeof(n), ops->name);
	return n[0] == 'b' && n[1] == 'b' && n[2] == 'r' && n[3] == 0;
}

static __always_inline __u32 bbr_min_rtt(const struct bbr *bbr)
{
	return BBR_HAS(min_rtt_us) ? bbr->min_rtt_us : 0;
}

/* The bandwidth BBR models, pkts per usec << 24, as its bbr_bw() and bbr_get_info() take it:
 * v1's long-term estimate while it polices (lt_use_bw), else its max filter; or the larger of
 * v3's bw_hi slots (what v3's own bbr_max_bw() takes). */
static __always_inline __u64 bbr_bw(const struct bbr *bbr)
{
	if (BBR_HAS(lt_use_bw) && BBR_HAS(lt_bw) && BPF_CORE_READ_BITFIELD(bbr, lt_use_bw))
		return bbr->lt_bw;
	if (BBR_HAS(bw))
		return bbr->bw.s[0].v;
	if (BBR_V3_HAS(bw_hi)) {
		const struct bbr___v3 *v3 = (const void *)bbr;
		__u32 a = v3->bw_hi[0], b = v3->bw_hi[1];
		return a > b ? a : b;
	}
	return 0;
}

static __always_inline __u8 bbr_flags(const struct bbr *bbr)
{
	__u8 f = 0;
	if (BBR_HAS(full_bw_reached) && BPF_CORE_READ_BITFIELD(bbr, full_bw_reached))
		f |= BBR_FLAG_FULL_BW;
	if (BBR_HAS(lt_use_bw) && BPF_CORE_READ_BITFIELD(bbr, lt_use_bw))
		f |= BBR_FLAG_LT_BW;
	if (BBR_V3_HAS(bw_hi))
		f |= BBR_FLAG_V3_CYCLE;
	return f;
}

static __always_inline void emit_infl(struct sock *sk, __u32 kind, struct sock_state *st, __u32 srtt,
				      __u32 base, __u64 now)
{
	struct bbrtop_infl *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_in(&lost, 0);
		return;
	}
	fill_hdr(&e->h, kind, sk, now);
	e->srtt_us = srtt;
	e->baseline_us = base;
	e->onset_ns = st->onset_ns;
	e->peak_ratio_milli = st->peak_ratio_milli;
	e->_pad = 0;
	bpf_ringbuf_submit(e, 0);
}

/* Direct loads through the BTF pointers throughout, not probe-read helpers: each helper call
 * costs tens of ns, and at 15k closes a second there are two sockets per connection. */
static __always_inline void copy_in6(__u8 *dst, const struct in6_addr *a)
{
	__u32 *d = (__u32 *)dst;
	for (int i = 0; i < 4; i++)
		d[i] = a->in6_u.u6_addr32[i];
}

#include "sock_record.h"

/* The socket walk (userspace's `walk` collector): a record per socket that moved, keyed by
 * cookie, which userspace takes and deletes at each poll. Hooks fill a socket's record at its
 * first move after each read, then at most every refresh_ns while it keeps moving, so a busy
 * socket costs a fill a few times a second, not one per ACK; a change of state, at once. */
const volatile __u8 walk_on = 0;
const volatile __u64 refresh_ns = 250000000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 18);
	__type(key, __u64);
	__type(value, struct bbrtop_sock);
} moved SEC(".maps");

/* The record is built here, not on the 512-byte stack: one per nesting level on a CPU, since a
 * program can interrupt another's fill there (a softirq's tcp_probe, a process's
 * tcp_rcv_space_adjust), and would finish the fill over it. scratch_depth is the levels in use. */
#define SCRATCH_LEVELS 4 /* process, softirq, and room */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_LEVELS);
	__type(key, __u32);
	__type(value, struct bbrtop_sock);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} scratch_depth SEC(".maps");

/* Records the moved map had no room for, per CPU; userspace sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} moved_full SEC(".maps");

/* Per CPU: [0] sockets whose record fell behind (moves skipped since its fill, counted once per
 * fill), [1] records the refill pass wrote. Userspace sums them; a rise of [0] since its last
 * pass makes it run the next. */
#define OWED_MARKS 0
#define REFILLED 1
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} refill_counts SEC(".maps");

/* The refill pass's record, apart from the hooks' levels: it runs preemptible (migration
 * disabled only), where the levels assume a program runs to its end or is interrupted, and one
 * thread of bbrtop's runs it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bbrtop_sock);
} refill_scratch SEC(".maps");

/* Fills `r` and writes it as the socket's walk record; `now` in TCP's clock (µs, as ns). */
static __always_inline void write_moved(struct bbrtop_sock *r, struct sock *sk, struct tcp_sock *tp,
					struct sock_state *st, __u32 epoch, bool acking, int state, __u64 now)
{
	fill_record(r, sk, tp, &st->w[epoch & 1], bpf_ktime_get_ns());
	if (acking)
		((struct tcpi *)r->info)->last_ack_recv = 0;
	if (state >= 0) {
		r->state = state;
		((struct tcpi *)r->info)->state = state;
	}
	if (bpf_map_update_elem(&moved, &r->cookie, r, 0)) {
		count_in(&moved_full, 0);
		return;
	}
	st->filled_epoch = epoch;
	st->filled_ns = now;
	st->owed = 0;
}

/* `acking`: called from tcp_probe, which fires before the ACK is processed: the socket's
 * state is as of its previous segment, but the ACK is being received now. `state`: the TCP
 * state being entered (inet_sock_set_state fires before it is stored), or -1. */
static __always_inline void note_move(struct sock *sk, struct sock_state *st, __u32 epoch, bool acking,
				      int state)
{
	__u32 k = 0;

	if (!walk_on)
		return;
	struct tcp_sock *tp = TCP_SK(sk);
	if (!tp)
		return;
	/* TCP's own clock (µs of CLOCK_MONOTONIC, taken for this packet): a load, where
	 * bpf_ktime_get_ns() would be a helper call on every ACK. */
	__u64 now = tp->tcp_mstamp * 1000;
	/* A change of state is always written: a socket closed within refresh_ns of its last
	 * record, whose path then went quiet, would otherwise stay ESTABLISHED for good. A move
	 * skipped leaves the record behind: marked, once, for the refill pass. */
	if (state < 0 && st->filled_epoch == epoch && now - st->filled_ns < refresh_ns) {
		if (!st->owed) {
			st->owed = 1;
			count_in(&refill_counts, OWED_MARKS);
		}
		return;
	}
	/* An interrupting program takes the next level and gives it back before this one resumes,
	 * so the count needs no atomics. */
	__u32 *depth = bpf_map_lookup_elem(&scratch_depth, &k);
	if (!depth)
		return;
	__u32 level = *depth;
	if (level >= SCRATCH_LEVELS)
		return;
	struct bbrtop_sock *r = bpf_map_lookup_elem(&scratch, &level);
	if (!r)
		return;
	*depth = level + 1;
	write_moved(r, sk, tp, st, epoch, acking, state, now);
	*depth = level;
}

/* Responses reach userspace in batches of up to BBRTOP_RESP_BATCH per socket, kept in its
 * storage: a ring record each cost the edge workload a fifth of its programs' time (the
 * reserve, the header's loads, a record's cache lines). A batch is sent at its eighth
 * response, once its first is RESP_HOLD_NS old, at the socket's close, or by the refill pass
 * when the socket went quiet (a batch's first response marks it for the pass, as a record
 * behind is marked). Where the pass cannot run, userspace sets resp_batch to 1: each response
 * is sent at once, as before. */
#define RESP_HOLD_NS 1000000000ULL
const volatile __u32 resp_batch = BBRTOP_RESP_BATCH;
#define BATCH_COUNT(b) ((__u32)((b) & 0xff))
#define BATCH_SENT(b) (((b) | 0xff) + 1) /* the next batch, empty */

/* Sends the batch `seen` (st->batch as read) describes, unless `batch` changed since: the refill
 * pass runs beside the hooks, and the one whose compare-and-swap loses discards its record. The
 * sender empties the batch even if the ring has no room (counted lost), so the hooks go on. */
static __always_inline void send_batch(struct sock *sk, struct tcp_sock *tp, struct sock_state *st,
				       __u64 seen)
{
	__u32 n = BATCH_COUNT(seen);
	if (!n || n > BBRTOP_RESP_BATCH)
		return;
	struct bbrtop_resp *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (__sync_val_compare_and_swap(&st->batch, seen, BATCH_SENT(seen)) == seen)
			count_in(&lost, 0);
		return;
	}
	fill_hdr(&e->h, BBRTOP_RESPONSE, sk, bpf_ktime_get_ns());
	e->n = n;
	e->opened = st->opened;
	e->lport = __builtin_bswap16(tp->inet_conn.icsk_inet.inet_sport);
	e->rport = __builtin_bswap16(sk->__sk_common.skc_dport);
	e->family = sk->__sk_common.skc_family;
	if (e->family == AF_INET6) {
		copy_in6(e->daddr, &sk->__sk_common.skc_v6_daddr);
	} else {
		__builtin_memset(e->daddr, 0, sizeof(e->daddr));
		*(__u32 *)e->daddr = sk->__sk_common.skc_daddr;
	}
	const struct tcp_congestion_ops *ops = tp->inet_conn.icsk_ca_ops;
	if (ops)
		copy_cc_name(e->cc, ops);
	else
		__builtin_memset(e->cc, 0, sizeof(e->cc));
	__builtin_memcpy(e->r, st->done, sizeof(e->r));
	if (__sync_val_compare_and_swap(&st->batch, seen, BATCH_SENT(seen)) == seen)
		bpf_ringbuf_submit(e, 0);
	else
		bpf_ringbuf_discard(e, 0);
}

/* One response delivered: from st->resp_start_ns to `end`, added to the socket's batch, which
 * is sent when due. The hooks of one socket run one at a time (under its lock); only the pass
 * can empty the batch between the read and the swap, and then the second try starts the next. */
static __always_inline void queue_response(struct sock *sk, struct tcp_sock *tp, struct sock_state *st,
					   __u32 bytes, __u64 end)
{
	__u64 start = st->resp_start_ns, us = end > start ? (end - start + 500) / 1000 : 0, ms;
	if (us >= BBRTOP_TOOK_MS) {
		ms = (us + 500) / 1000;
		us = BBRTOP_TOOK_MS | (ms < BBRTOP_TOOK_MS ? ms : BBRTOP_TOOK_MS - 1);
	}
	struct bbrtop_resp_one one = { .start_ns = start, .took_us = us, .bytes = bytes };

	for (int i = 0; i < 2; i++) {
		__u64 seen = st->batch;
		__u32 n = BATCH_COUNT(seen);
		if (n >= BBRTOP_RESP_BATCH) {
			send_batch(sk, tp, st, seen);
			continue;
		}
		st->done[n] = one;
		if (__sync_val_compare_and_swap(&st->batch, seen, seen + 1) != seen)
			continue;
		if (n + 1 >= resp_batch || end - st->done[0].start_ns >= RESP_HOLD_NS)
			send_batch(sk, tp, st, seen + 1);
		else if (!n)
			count_in(&refill_counts, OWED_MARKS);
		return;
	}
	count_in(&lost, 0);
}

/* The refill pass, which userspace runs before a read when records fell behind or responses
 * wait: each socket whose moves were skipped since its record was filled (within refresh_ns of
 * it) gets its record filled again, as it is now, and each socket's batch of responses is sent.
 * Without it, a socket that stops moving right after a fill would show that fill's values (its
 * counters up to refresh_ns of traffic short, and the RTT samples since) until it moved again,
 * and a quiet keep-alive connection's last responses would wait for its next. An iterator over
 * the sockets' storage: what it costs is a look at each socket with storage, paid only at the
 * reads that follow a mark. */
SEC("iter/bpf_sk_storage_map")
int refill(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct sock *sk = ctx->sk;
	struct sock_state *seen = ctx->value, *st;
	__u32 k = 0;

	if (!sk || !seen || (!seen->owed && !BATCH_COUNT(seen->batch)))
		return 0;
	/* The same storage as a map value, which atomics and the window's index by epoch may
	 * address (the iterator's own pointer takes constant offsets only). */
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	struct tcp_sock *tp = TCP_SK(sk);
	if (!st || !tp)
		return 0;
	/* An atomic read: the responses it counts were written before the hook's swap that
	 * counted them, and are read after it. */
	__u64 batch = __sync_fetch_and_add(&st->batch, 0);
	if (BATCH_COUNT(batch))
		send_batch(sk, tp, st, batch);
	if (!st->owed)
		return 0;
	st->owed = 0;
	/* A closing socket's last record came with its change of state, and its close record
	 * follows: a refill would bring it back. */
	if (!walk_on || sk->__sk_common.skc_state == TCP_CLOSE)
		return 0;
	struct bbrtop_sock *r = bpf_map_lookup_elem(&refill_scratch, &k);
	if (!r)
		return 0;
	write_moved(r, sk, tp, st, current_epoch(), 0, -1, tp->tcp_mstamp * 1000);
	count_in(&refill_counts, REFILLED);
	return 0;
}

/* How a socket older than bbrtop was opened, from its port's bind bucket: connect() marks the
 * buckets of the ephemeral ports it picks with fastreuse -1 (__inet_hash_connect), while an
 * accepted socket shares its listener's bucket, which bind() made (0 or 1). A client that bound
 * its own port before connecting reads as a server. 0: no bucket, left to userspace. */
static __always_inline __u8 opened_by_port(struct tcp_sock *tp)
{
	const struct inet_bind_bucket *tb = tp->inet_conn.icsk_bind_hash;

	if (!tb)
		return 0;
	return tb->fastreuse == -1 ? 1 : 2;
}

/* A socket its establishment did not date (older than bbrtop, or that run was skipped: the
 * kernel skips a program that would interrupt itself on one CPU, as a softirq's change of state
 * can a process's) is dated when a hook first sees it, and how it was opened read from its port. */
static __always_inline void adopt(struct tcp_sock *tp, struct sock_state *st)
{
	st->opened = opened_by_port(tp);
	if (!st->first_ns)
		st->first_ns = bpf_ktime_get_ns();
}

/* The socket's storage, made if it has none, with how it was opened known. */
static __always_inline struct sock_state *state_of(struct sock *sk, struct tcp_sock *tp)
{
	struct sock_state *st = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (st && !st->opened)
		adopt(tp, st);
	return st;
}

/* The response before a new one, if its end went unseen: everything written is acked, yet no
 * tcp_probe run saw the ACK that covered it (a run the kernel skipped; or, through a bottleneck,
 * about one response in a thousand with no run skipped, for a cause not found: the tests in
 * tests/response_times.rs show it). It ended as that ACK arrived, which RACK dated:
 * the newest acked segment's send time plus its round trip, in tcp_clock's microseconds
 * (CLOCK_MONOTONIC, bpf_ktime_get_ns's clock). */
static __always_inline void end_unseen(struct sock *sk, struct tcp_sock *tp, struct sock_state *st)
{
	__u32 written = tp->write_seq;
	__u64 end = (tp->rack.mstamp + tp->rack.rtt_us) * 1000;

	if (written == st->resp_start_seq)
		return;
	if (end <= st->resp_start_ns)
		end = bpf_ktime_get_ns();
	queue_response(sk, tp, st, written - st->resp_start_seq, end);
}

/* The start of a response: the application writes to a socket with nothing unacknowledged and
 * nothing queued, one it accepted. A write that finds data outstanding joins the response under
 * way and returns before the storage lookup. A client's write still looks its storage up: for a
 * client whose establishment run the kernel skipped, and whose data is acked after it leaves
 * ESTABLISHED (a short request, then close), that lookup is what dates it. */
static __always_inline int start_response(struct sock *sk)
{
	struct tcp_sock *tp = TCP_SK(sk); /* tcp_sendmsg_locked: always a full TCP socket */
	struct sock_state *st;

	if (!tp || tp->write_seq != tp->snd_una)
		return 0;
	st = state_of(sk, tp);
	if (!st)
		return 0;
	/* A client's request is not a response. */
	if (st->opened == 1)
		return 0;
	if (st->resp_start_ns)
		end_unseen(sk, tp, st);
	st->resp_start_ns = bpf_ktime_get_ns();
	st->resp_start_seq = tp->write_seq;
	return 0;
}

/* The tracepoint (Linux 6.16) fires once per chunk a write copies (a write to an idle socket:
 * its first). Userspace loads this one where the kernel has it, else the fentry below. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked, struct sock *sk, const struct msghdr *msg, const struct sk_buff *skb,
	     int size_goal)
{
	return start_response(sk);
}

/* The same start on kernels without the tracepoint: the function's entry, through a BPF
 * trampoline (x86-64 and arm64 since 5.5), which sees the socket as the write begins. */
SEC("fentry/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_fentry, struct sock *sk)
{
	return start_response(sk);
}

/* When the last segment sent left (ns, the clock of bpf_ktime_get_ns): the retransmit queue's
 * last, down its red-black tree's right spine, whose length is at most twice log2 of the
 * segments in flight. Once per response, at its last ACK: loads, where bpf_rdonly_cast exists
 * (Linux 6.2), else one probe read for the time. 0 if unknown. */
static __always_inline __u64 last_sent_ns(struct sock *sk)
{
	struct rb_node *n = sk->tcp_rtx_queue.rb_node, *right;
	__u64 sent = 0;

	for (int i = 0; i < 48 && n; i++) {
		right = n->rb_right;
		if (!right)
			break;
		n = right;
	}
	if (!n)
		return 0;
	const void *skb = (const void *)n - bpf_core_field_offset(struct sk_buff, rbnode);
	if (bpf_ksym_exists(bpf_rdonly_cast))
		return ((struct sk_buff *)bpf_rdonly_cast(skb, bpf_core_type_id_kernel(struct sk_buff)))
			->skb_mstamp_ns;
	bpf_probe_read_kernel(&sent, sizeof(sent), skb + bpf_core_field_offset(struct sk_buff, skb_mstamp_ns));
	return sent;
}

/* When the client had the response's last byte, as this side's clock can tell: the ACK's
 * arrival, unless the client may have held that ACK. A receiver acks at once when more than a
 * segment arrived since its last ACK, and may hold a lone one's up to its delayed-ACK timer (40
 * ms and more, Linux's; 200 ms, Windows'): the user had the byte when it arrived, not when the
 * timer fired. For such an ACK the end is the last segment's departure plus the round trip of
 * the ACK before (RACK's latest sample, if it acked this response's data; else the smaller of it
 * and srtt), when that comes first. Linux's own rate samples mark the same ACKs
 * (FLAG_ACK_MAYBE_DELAYED) and keep them out of BBR's min RTT. */
static __always_inline __u64 delivered_at(struct sock *sk, struct tcp_sock *tp, struct sock_state *st,
					  __u32 ack, __u64 now)
{
	if (ack - tp->snd_una > tp->mss_cache)
		return now;
	__u64 rtt = tp->rack.rtt_us;
	if (tp->rack.mstamp * 1000 < st->resp_start_ns) {
		__u64 srtt = tp->srtt_us >> 3;
		rtt = rtt && rtt < srtt ? rtt : srtt;
	}
	__u64 sent = last_sent_ns(sk);
	if (!sent || !rtt || sent + rtt * 1000 >= now)
		return now;
	return sent + rtt * 1000;
}

/* The end of the response under way, if this segment's ACK covers everything written. The ACK
 * number is the one tcp_ack() reads, from the segment's control block (tcp_v4_fill_cb() sets
 * it before tcp_probe fires), not from its TCP header: a segment the backlog coalesced
 * (tcp_add_backlog) carries the last one's ACK in its control block only. */
static __always_inline void end_response(struct sock *sk, struct tcp_sock *tp, struct sock_state *st,
					 const struct sk_buff *skb)
{
	const struct tcp_skb_cb *cb = (const void *)skb->cb;
	__u32 ack = cb->ack_seq;
	__u32 written = tp->write_seq;

	if ((__s32)(ack - written) < 0)
		return;
	if (written != st->resp_start_seq)
		queue_response(sk, tp, st, written - st->resp_start_seq,
			       delivered_at(sk, tp, st, ack, bpf_ktime_get_ns()));
	st->resp_start_ns = 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_probe, struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_sock *tp = TCP_SK(sk);
	struct sock_state *st;
	struct bbr *bbr = 0;
	__u32 srtt, base, mode = 0, cycle = 0;

	if (!tp)
		return 0;
	/* Nothing in flight: this segment can ack nothing, so tcp_ack takes no RTT sample and does
	 * not run the congestion control; srtt, rtt_min and BBR's state stay as they are. Skipping
	 * it saves the storage lookup, most of the cost, on every segment a bulk receiver gets.
	 * (packets_out shares a cache line with srtt_us.) */
	if (!tp->packets_out)
		return 0;
	st = state_of(sk, tp);
	if (!st)
		return 0;
	/* Only when everything written was sent can this ACK cover it: a bulk sender always has
	 * more queued, and pays one load here, not the segment's header. */
	if (st->resp_start_ns && tp->write_seq == tp->snd_nxt)
		end_response(sk, tp, st, skb);

	srtt = tp->srtt_us >> 3;
	/* The RTT sample the previous ACK took, if it took one: RACK's (tcp_rack_advance), timed from
	 * the newest segment that ACK covered, as rtt_min and BBR's min RTT are (tcp_clean_rtx_queue's
	 * ca_rtt_us). srtt's step is timed from the oldest (seq_rtt_us): a stretch ACK over eight
	 * paced segments adds their send span to it. A new sample moves rack.mstamp (its segment's
	 * send time). And whether that ACK left data in flight (snd_una still before the snd_nxt it
	 * was sent against). Each segment runs this hook, then tcp_ack. */
	__u32 sample = 0;
	bool prompt = 0;
	__u64 rack_sent = tp->rack.mstamp;
	if (st->samples && rack_sent != st->prev_rack_mstamp) {
		sample = tp->rack.rtt_us;
		prompt = (__s32)(tp->snd_una - st->prev_snd_nxt) < 0;
	}
	st->prev_rack_mstamp = rack_sent;
	st->prev_snd_nxt = tp->snd_nxt;
	st->samples++;

	__u32 epoch = current_epoch();
	struct bbrtop_rtt_window *w = &st->w[epoch & 1];
	if (w->epoch != epoch || !w->samples) {
		/* BBR's state is read every 8th ACK: until then, the latest is the other window's. */
		const struct bbrtop_rtt_window *prev = &st->w[(epoch & 1) ^ 1];
		w->bbr = prev->bbr;
		w->bbr_mode = prev->bbr_mode;
		w->cycle_idx = prev->cycle_idx;
		w->bbr_flags = prev->bbr_flags;
		w->epoch = epoch;
		w->samples = 0;
		w->min_srtt_us = srtt;
		w->max_srtt_us = srtt;
		w->rtt_samples = 0;
		w->prompt_samples = 0;
	}
	w->samples++;
	w->last_srtt_us = srtt;
	if (srtt < w->min_srtt_us)
		w->min_srtt_us = srtt;
	if (srtt > w->max_srtt_us)
		w->max_srtt_us = srtt;
	if (sample) {
		if (!w->rtt_samples || sample < w->rtt_min_us)
			w->rtt_min_us = sample;
		w->rtt_samples++;
		if (prompt) {
			if (!w->prompt_samples || sample < w->prompt_min_us)
				w->prompt_min_us = sample;
			w->prompt_samples++;
		}
	}
	note_move(sk, st, epoch, 1, -1);

	/* BBR's state moves at round-trip pace, and tcp_probe fires before BBR updates it for this
	 * ACK, so reading it costs a cache miss or two: read it at every 8th ACK, not each; but at
	 * each through STARTUP and DRAIN (a connection's first rounds), or DRAIN, which can last
	 * fewer than 8 ACKs, would go unseen. */
	bool fresh = !(st->samples & 7) || !st->seen_phase || (st->is_bbr && st->mode <= BBR_DRAIN);
	const void *ops = tp->inet_conn.icsk_ca_ops;
	if (ops != st->ca_ops) {
		st->ca_ops = ops;
		st->is_bbr = is_bbr_ops(ops);
		w->bbr = 0; /* set again below if it still runs BBR */
		fresh = 1;
		if (st->is_bbr)
			bbr_read = BBR_READ_MASK;
	}

	/* Baseline: the smaller of tcp's windowed min RTT and BBR's own (ARCHITECTURE.md). */
	base = tp->rtt_min.s[0].v;
	if (BBR_HAS(min_rtt_us) && st->is_bbr) {
		bbr = (struct bbr *)&tp->inet_conn.icsk_ca_priv;
		if (fresh)
			st->bbr_min_rtt_us = bbr_min_rtt(bbr);
		if (st->bbr_min_rtt_us && st->bbr_min_rtt_us < base)
			base = st->bbr_min_rtt_us;
	}

	/* Judged on prompt samples only: a delayed ACK or an idle application cannot raise one,
	 * and a standing queue raises every one. A spell lasts while they stay inflated. */
	if (prompt && base && base != ~0U) {
		/* No division on the common path: the ratio is computed only while inflated. */
		bool inflated = sample > base && (__u64)sample * 1000 >= (__u64)ratio_milli * base &&
				sample - base >= floor_us;
		if (inflated) {
			__u32 ratio = (__u32)(((__u64)sample * 1000) / base);
			if (!st->onset_ns) {
				__u64 now = bpf_ktime_get_ns();
				st->onset_ns = now;
				st->peak_ratio_milli = ratio;
				st->inflations++;
				emit_infl(sk, BBRTOP_INFL_START, st, sample, base, now);
			} else if (ratio > st->peak_ratio_milli) {
				st->peak_ratio_milli = ratio;
			}
			if (ratio > st->peak_ratio_all)
				st->peak_ratio_all = ratio;
		} else if (st->onset_ns) {
			emit_infl(sk, BBRTOP_INFL_END, st, sample, base, bpf_ktime_get_ns());
			st->onset_ns = 0;
		}
	}

	if (!fresh || !st->is_bbr || !BBR_HAS_PHASE)
		return 0;
	bbr = (struct bbr *)&tp->inet_conn.icsk_ca_priv;
	mode = BPF_CORE_READ_BITFIELD(bbr, mode);
	cycle = BPF_CORE_READ_BITFIELD(bbr, cycle_idx);
	/* The latest state rides in the window, which userspace reads at every poll: PROBE_BW
	 * steps every round trip, too often for an event each on a short path. */
	w->bbr = 1;
	w->bbr_mode = mode;
	w->cycle_idx = cycle;
	w->bbr_flags = bbr_flags(bbr);
	if (st->seen_phase && mode == st->mode)
		return 0;

	__u64 now = bpf_ktime_get_ns();
	__u64 prev_began = st->phase_began_ns;
	__u8 prev_mode = st->seen_phase ? st->mode : 0xff;
	st->entered[mode & (BBR_MODES - 1)]++;
	st->phase_began_ns = now;
	st->mode = mode;
	st->seen_phase = 1;

	struct bbrtop_phase *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_in(&lost, 0);
		return 0;
	}
	fill_hdr(&e->h, BBRTOP_PHASE, sk, now);
	e->mode = mode;
	e->cycle_idx = cycle;
	e->full_bw_reached = !!(w->bbr_flags & BBR_FLAG_FULL_BW);
	e->lt_use_bw = !!(w->bbr_flags & BBR_FLAG_LT_BW);
	e->prev_mode = prev_mode;
	e->cycle_v3 = !!(w->bbr_flags & BBR_FLAG_V3_CYCLE);
	e->_pad = 0;
	e->prev_began_ns = prev_began;
	e->min_rtt_us = bbr_min_rtt(bbr);
	e->entered = st->entered[mode & (BBR_MODES - 1)];
	e->bw = bbr_bw(bbr);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Dates each connection from its establishment, and counts a state change as a move for the
 * socket walk. tcp_probe cannot date it: it skips the segments that find
 * nothing in flight, which are all a receiver gets. Storage is made at establishment only: a
 * socket that predates bbrtop joins the walk's set when an ACK or a read first moves it. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_established, const struct sock *sk, const int oldstate, const int newstate)
{
	struct sock_state *st;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	st = bpf_sk_storage_get(&socks, (struct sock *)sk, 0,
				newstate == TCP_ESTABLISHED ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	if (!st)
		return 0;
	if (newstate == TCP_ESTABLISHED && !st->first_ns)
		st->first_ns = bpf_ktime_get_ns();
	if (newstate == TCP_ESTABLISHED)
		st->opened = oldstate == TCP_SYN_SENT ? 1 : 2;
	/* Leaving ESTABLISHED is a move too; the state a socket closes in comes with its close. */
	note_move((struct sock *)sk, st, current_epoch(), 0, newstate);
	return 0;
}

/* Whether tcp_probe saw this socket's data acked within refresh_ns of its last segment, and so
 * moved it in the walk then: RACK's mstamp is the send time of the newest segment an ACK covered,
 * and only an ACK of data, which tcp_probe runs for, advances it. A request/response client's
 * reads (its request was acked by the answer) and a busy server's are such, a pure receiver's
 * are not. Loads only: the storage lookup it saves is most of a read's cost. */
static __always_inline bool acked_lately(const struct tcp_sock *tp)
{
	return (tp->tcp_mstamp - tp->rack.mstamp) * 1000 < refresh_ns;
}

/* A receiver's move: the application read data (tcp_recvmsg adjusts the receive space each
 * time). tcp_probe skips a pure receiver's segments, and this fires once per read, not per
 * segment. A socket tcp_probe moved lately is left to it: what a read changes then is within the
 * walk's refresh of its last record, the bound the refresh already sets (docs/fleet.md). */
SEC("tp_btf/tcp_rcv_space_adjust")
int BPF_PROG(tcp_rcv_space_adjust, struct sock *sk)
{
	struct tcp_sock *tp = TCP_SK(sk);
	struct sock_state *st;

	if (!tp || acked_lately(tp))
		return 0;
	st = state_of(sk, tp);
	if (!st)
		return 0;
	note_move(sk, st, current_epoch(), 0, -1);
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tcp_destroy_sock, struct sock *sk)
{
	struct tcp_sock *tp = TCP_SK(sk); /* tcp_v4_destroy_sock: always a full TCP socket */
	struct sock_state *st;
	__u64 now = bpf_ktime_get_ns();

	if (!tp)
		return 0;
	st = bpf_sk_storage_get(&socks, sk, 0, 0);
	/* A response whose last ACK came after the socket left ESTABLISHED (a server that writes
	 * and closes): tcp_probe never saw it, but the socket ends as its FIN is acked, so the end
	 * dates the delivery. Only if every byte written was acked; the FIN's sequence number, which
	 * write_seq counts, is not a byte of it. */
	if (st && st->resp_start_ns && tp->snd_una == tp->write_seq) {
		__u32 bytes = tp->write_seq - st->resp_start_seq - 1;
		if ((__s32)bytes > 0)
			queue_response(sk, tp, st, bytes, now);
	}
	/* Its responses not yet sent go before its close record. */
	if (st)
		send_batch(sk, tp, st, st->batch);

	struct bbrtop_close *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_in(&lost, 0);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	fill_hdr(&e->h, BBRTOP_CLOSE, sk, now);
	e->family = sk->__sk_common.skc_family;
	/* inet_sport, not skc_num: the port is unhashed (skc_num zeroed) before destroy. */
	e->lport = __builtin_bswap16(tp->inet_conn.icsk_inet.inet_sport);
	e->rport = __builtin_bswap16(sk->__sk_common.skc_dport);
	if (e->family == AF_INET6) {
		copy_in6(e->saddr, &sk->__sk_common.skc_v6_rcv_saddr);
		copy_in6(e->daddr, &sk->__sk_common.skc_v6_daddr);
	} else {
		*(__u32 *)e->saddr = sk->__sk_common.skc_rcv_saddr;
		*(__u32 *)e->daddr = sk->__sk_common.skc_daddr;
	}
	const struct tcp_congestion_ops *ops = tp->inet_conn.icsk_ca_ops;
	if (ops)
		copy_cc_name(e->cc, ops);
	e->bytes_acked = tp->bytes_acked;
	e->bytes_received = tp->bytes_received;
	e->total_retrans = tp->total_retrans;
	e->bytes_sent = tp->bytes_sent;
	e->bytes_retrans = tp->bytes_retrans;
	e->segs_out = tp->segs_out;
	e->delivered = tp->delivered;
	e->delivered_ce = tp->delivered_ce;
	e->dsack_dups = tp->dsack_dups;
	if (bpf_core_field_exists(tp->total_rto))
		e->total_rto = tp->total_rto;
	e->srtt_us = tp->srtt_us >> 3;
	e->min_rtt_us = tp->rtt_min.s[0].v;
	e->rate_delivered = tp->rate_delivered;
	e->rate_interval_us = tp->rate_interval_us;
	e->mss = tp->mss_cache;
	if (BBR_HAS(mode) && e->cc[0] == 'b' && e->cc[1] == 'b' && e->cc[2] == 'r' && e->cc[3] == 0) {
		struct bbr *bbr = (struct bbr *)&tp->inet_conn.icsk_ca_priv;
		e->is_bbr = 1;
		e->bbr_mode = BPF_CORE_READ_BITFIELD(bbr, mode);
		e->bbr_min_rtt_us = bbr_min_rtt(bbr);
		e->bbr_bw = bbr_bw(bbr);
	}
	/* Its last move's record, if not yet read, would only bring it back. (The key from the
	 * stack: before 6.3 or so the verifier takes no ring-buffer memory as a map key.) */
	if (walk_on) {
		__u64 cookie = e->h.cookie;
		bpf_map_delete_elem(&moved, &cookie);
	}
	if (st) {
		e->lifetime_ns = st->first_ns ? now - st->first_ns : 0;
		e->peak_ratio_milli = st->peak_ratio_all;
		e->rtt_samples = st->samples;
		e->inflations = st->inflations;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
