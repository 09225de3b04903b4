// SPDX-License-Identifier: GPL-2.0
/* A program the verifier must reject: it dereferences a number as if it were a pointer. The
 * tests load it to see what a user is told when a BPF object fails to load; bbrtop itself never
 * loads it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tracepoint/syscalls/sys_enter_getpid")
int reject(void *ctx)
{
	int *p = (int *)(long)bpf_get_prandom_u32();
	return *p;
}

char LICENSE[] SEC("license") = "GPL";
