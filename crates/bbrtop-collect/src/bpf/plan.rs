//! Which of the programs this kernel can run, decided before loading from what its BTF offers:
//! libbpf resolves every program's attach target as the object loads and fails the whole object
//! on one missing target, and the verifier refuses a helper a kernel does not give tracing
//! programs, so a program this kernel cannot carry is not loaded at all (`set_autoload(false)`)
//! and the rest are. Pure: the caller reads the BTF.

use bbrtop_core::btf::{Btf, BtfError, KIND_FUNC, KIND_TYPEDEF};
use std::collections::BTreeSet;
use std::fmt;

/// What a kernel offers the programs, read from its BTF: the tracepoints with BTF (each has a
/// `btf_trace_NAME` typedef) and the functions (fentry targets, kfuncs, and the kernel's own
/// implementations of helpers, whose names say which helpers it has).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offers {
    tracepoints: BTreeSet<String>,
    functions: BTreeSet<String>,
}

impl Offers {
    /// From a complete BTF blob (`/sys/kernel/btf/vmlinux`).
    pub fn from_btf(bytes: &[u8]) -> Result<Offers, BtfError> {
        let btf = Btf::parse(bytes)?;
        let tracepoints = btf
            .names_of_kind(KIND_TYPEDEF)?
            .into_iter()
            .filter_map(|n| n.strip_prefix("btf_trace_"))
            .map(str::to_string)
            .collect();
        let functions = btf.names_of_kind(KIND_FUNC)?.into_iter().map(str::to_string).collect();
        Ok(Offers { tracepoints, functions })
    }

    /// A kernel that offers exactly these (tests).
    pub fn of(tracepoints: &[&str], functions: &[&str]) -> Offers {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Offers { tracepoints: set(tracepoints), functions: set(functions) }
    }

    /// The same, less these tracepoints.
    pub fn without_tracepoints(mut self, hidden: &[&str]) -> Offers {
        self.tracepoints.retain(|t| !hidden.contains(&t.as_str()));
        self
    }

    fn has(&self, need: Need) -> bool {
        match need {
            Need::Tracepoint(t) => self.tracepoints.contains(t),
            Need::Function(f) => self.functions.contains(f),
            Need::Helper(h) => self.functions.contains(h.btf_func),
        }
    }
}

/// A helper tracing programs call, known by the name of its implementation in the kernel's BTF
/// (a helper the kernel does not give tracing programs has none), and the release that gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Helper {
    pub what: &'static str,
    pub btf_func: &'static str,
    pub since: &'static str,
}

/// The ring buffer every program reports through.
pub const RINGBUF: Helper =
    Helper { what: "the BPF ring buffer", btf_func: "bpf_ringbuf_reserve", since: "5.8" };
/// Per-socket state (`BPF_MAP_TYPE_SK_STORAGE`) from tracing programs.
pub const SK_STORAGE: Helper = Helper {
    what: "socket storage in tracing programs",
    btf_func: "bpf_sk_storage_get_tracing",
    since: "5.11",
};
/// `bpf_get_socket_cookie` from tracing programs: the key that joins eBPF data with netlink's.
pub const COOKIE: Helper = Helper {
    what: "socket cookies in tracing programs",
    btf_func: "bpf_get_socket_ptr_cookie",
    since: "5.12",
};

/// What a program needs of the kernel beyond BPF itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A tracepoint with BTF, for `tp_btf/NAME`.
    Tracepoint(&'static str),
    /// A kernel function, for `fentry/NAME`.
    Function(&'static str),
    Helper(Helper),
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Tracepoint(t) if *t == "tcp_sendmsg_locked" => {
                write!(f, "no tracepoint tcp:{t} (Linux 6.16)")
            }
            Need::Tracepoint(t) => write!(f, "no BTF tracepoint {t}"),
            Need::Function(func) if *func == SK_STORAGE_ITER => {
                write!(f, "no socket storage iterator (Linux 5.9)")
            }
            Need::Function(func) => write!(f, "no kernel function {func} in its BTF"),
            Need::Helper(h) => write!(f, "no {} (Linux {})", h.what, h.since),
        }
    }
}

/// One program of `crates/bbrtop-collect/bpf/bbrtop.bpf.c`, by its name there (and in
/// `bpftool prog show`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    pub name: &'static str,
    pub needs: &'static [Need],
    /// Loaded only where this other program cannot be: the same work on another hook.
    pub instead_of: Option<&'static str>,
}

const SOCKET: [Need; 3] = [Need::Helper(RINGBUF), Need::Helper(SK_STORAGE), Need::Helper(COOKIE)];

/// Every program, in the order the skeleton's are attached.
pub const PROGRAMS: [Program; 7] = [
    Program {
        name: "tcp_probe",
        needs: &[Need::Tracepoint("tcp_probe"), SOCKET[0], SOCKET[1], SOCKET[2]],
        instead_of: None,
    },
    Program {
        name: "tcp_established",
        needs: &[Need::Tracepoint("inet_sock_set_state"), SOCKET[0], SOCKET[1], SOCKET[2]],
        instead_of: None,
    },
    Program {
        name: "tcp_rcv_space_adjust",
        needs: &[Need::Tracepoint("tcp_rcv_space_adjust"), SOCKET[0], SOCKET[1], SOCKET[2]],
        instead_of: None,
    },
    Program {
        name: "tcp_sendmsg_locked",
        needs: &[Need::Tracepoint("tcp_sendmsg_locked"), SOCKET[0], SOCKET[1]],
        instead_of: None,
    },
    Program {
        name: "tcp_sendmsg_fentry",
        needs: &[Need::Function("tcp_sendmsg_locked"), SOCKET[0], SOCKET[1]],
        instead_of: Some("tcp_sendmsg_locked"),
    },
    Program {
        name: "tcp_destroy_sock",
        needs: &[Need::Tracepoint("tcp_destroy_sock"), SOCKET[0], SOCKET[1], SOCKET[2]],
        instead_of: None,
    },
    // The walk's refill pass: an iterator over the socket storage, run by userspace.
    Program {
        name: REFILL,
        needs: &[Need::Function(SK_STORAGE_ITER), SOCKET[1], SOCKET[2]],
        instead_of: None,
    },
];

/// The walk's refill pass (`iter/bpf_sk_storage_map`), attached to the socket storage map.
pub const REFILL: &str = "refill";
/// The iterator's target, as the kernel's BTF names it (Linux 5.9).
const SK_STORAGE_ITER: &str = "bpf_iter_bpf_sk_storage_map";

/// What becomes of one program on a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Load,
    /// Not loaded: the kernel lacks this.
    Lacks(Need),
    /// Not loaded: the program it stands in for loads.
    NotNeeded,
    /// Not loaded: the verifier (or libbpf) refused it on this kernel; why, and where its log is.
    Rejected(String),
}

/// Each program's fate on a kernel offering `offers`, in [`PROGRAMS`]' order.
pub fn plan(offers: &Offers) -> Vec<(&'static str, Fate)> {
    let lacks = |p: &Program| p.needs.iter().copied().find(|n| !offers.has(*n));
    PROGRAMS
        .iter()
        .map(|p| {
            let fate = match (lacks(p), p.instead_of) {
                (Some(need), _) => Fate::Lacks(need),
                (None, Some(other)) if PROGRAMS.iter().any(|o| o.name == other && lacks(o).is_none()) => {
                    Fate::NotNeeded
                }
                (None, _) => Fate::Load,
            };
            (p.name, fate)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEPOINTS: [&str; 4] =
        ["tcp_probe", "inet_sock_set_state", "tcp_rcv_space_adjust", "tcp_destroy_sock"];
    const HELPERS: [&str; 3] =
        ["bpf_ringbuf_reserve", "bpf_sk_storage_get_tracing", "bpf_get_socket_ptr_cookie"];

    fn loads(p: &[(&'static str, Fate)]) -> Vec<&'static str> {
        p.iter().filter(|(_, f)| *f == Fate::Load).map(|(n, _)| *n).collect()
    }

    #[test]
    fn a_kernel_with_the_tracepoint_loads_it_and_not_the_fentry() {
        let tps: Vec<&str> = TRACEPOINTS.iter().copied().chain(["tcp_sendmsg_locked"]).collect();
        let fns: Vec<&str> = HELPERS.iter().copied().chain(["tcp_sendmsg_locked"]).collect();
        let p = plan(&Offers::of(&tps, &fns));
        assert_eq!(
            loads(&p),
            [
                "tcp_probe",
                "tcp_established",
                "tcp_rcv_space_adjust",
                "tcp_sendmsg_locked",
                "tcp_destroy_sock"
            ]
        );
        assert!(p.contains(&("tcp_sendmsg_fentry", Fate::NotNeeded)), "{p:?}");
        assert!(p.contains(&(REFILL, Fate::Lacks(Need::Function(SK_STORAGE_ITER)))), "{p:?}");
        let with_iter: Vec<&str> = fns.iter().copied().chain([SK_STORAGE_ITER]).collect();
        assert_eq!(loads(&plan(&Offers::of(&tps, &with_iter))).last(), Some(&REFILL));
    }

    /// 6.1 and 6.12: no tracepoint, so the function's entry instead.
    #[test]
    fn before_6_16_responses_start_at_the_functions_entry() {
        let fns: Vec<&str> = HELPERS.iter().copied().chain(["tcp_sendmsg_locked"]).collect();
        let p = plan(&Offers::of(&TRACEPOINTS, &fns));
        assert!(loads(&p).contains(&"tcp_sendmsg_fentry"), "{p:?}");
        assert!(p.contains(&("tcp_sendmsg_locked", Fate::Lacks(Need::Tracepoint("tcp_sendmsg_locked")))));
        let why = Need::Tracepoint("tcp_sendmsg_locked").to_string();
        assert_eq!(why, "no tracepoint tcp:tcp_sendmsg_locked (Linux 6.16)");
    }

    /// 5.10: tracing programs have neither socket storage nor cookies; nothing loads, and each
    /// program names the first thing it lacks.
    #[test]
    fn before_5_11_no_socket_program_loads() {
        let fns = ["bpf_ringbuf_reserve", "tcp_sendmsg_locked", SK_STORAGE_ITER];
        let p = plan(&Offers::of(&TRACEPOINTS, &fns));
        assert!(loads(&p).is_empty(), "{p:?}");
        let no_storage = |(n, f): &&(&str, Fate)| {
            *n != "tcp_sendmsg_locked" && *f == Fate::Lacks(Need::Helper(SK_STORAGE))
        };
        assert_eq!(p.iter().filter(no_storage).count(), 6, "{p:?}");
        assert_eq!(
            Need::Helper(SK_STORAGE).to_string(),
            "no socket storage in tracing programs (Linux 5.11)"
        );
    }

    #[test]
    fn offers_come_from_btf_typedefs_and_functions() {
        // btf_trace_tcp_probe (a typedef of int) and bpf_get_socket_ptr_cookie (a function).
        let strs = b"\0int\0btf_trace_tcp_probe\0bpf_get_socket_ptr_cookie\0other\0";
        let w = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let types = [
            w(&[1, 1 << 24, 4, 32]),
            w(&[5, KIND_TYPEDEF << 24, 1]),
            w(&[25, KIND_FUNC << 24, 1]),
            w(&[51, KIND_TYPEDEF << 24, 1]),
        ]
        .concat();
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for v in [24u32, 0, types.len() as u32, types.len() as u32, strs.len() as u32] {
            b.extend(v.to_le_bytes());
        }
        b.extend(types);
        b.extend(strs);
        let o = Offers::from_btf(&b).unwrap();
        assert_eq!(o, Offers::of(&["tcp_probe"], &["bpf_get_socket_ptr_cookie"]));
        assert!(Offers::from_btf(b"junk").is_err());
    }
}
