//! libbpf's messages while an object loads: kept, written to a log file when the load fails
//! (the verifier's log among them), and read for which program failed, so that the loader can
//! leave that program out and load the rest.

use libbpf_rs::PrintLevel;
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("BPF open failed: {0}")]
    Open(String),
    #[error("BPF load failed: {summary} (verifier log: {})", log.display())]
    Load { summary: String, log: PathBuf },
    #[error("BPF ring buffer setup failed: {0}")]
    RingBuf(String),
}

/// libbpf's messages during load, kept for the verifier log file.
static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn keep_log(_: PrintLevel, msg: String) {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).push_str(&msg);
}

/// libbpf's messages during the last load that succeeded, such as where each CO-RE relocation
/// landed.
pub fn last_load_log() -> String {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Where a failed load's messages go: `$TMPDIR/bbrtop-verifier-PID.log`, or with the program's
/// name before `.log` for a program left out.
pub fn verifier_log_path() -> PathBuf {
    std::env::temp_dir().join(format!("bbrtop-verifier-{}.log", std::process::id()))
}

/// The log path of one program the verifier refused.
pub fn program_log_path(program: &str) -> PathBuf {
    std::env::temp_dir().join(format!("bbrtop-verifier-{}-{program}.log", std::process::id()))
}

/// A failed load: the one-line error (naming the log file), and libbpf's messages.
pub struct Failed {
    pub error: LoadError,
    pub messages: String,
}

/// Runs `load` (an object's load into the kernel) with libbpf's messages kept: on failure they
/// go to `log`, and the error is one line that names it.
pub fn load_logged<T>(log: PathBuf, load: impl FnOnce() -> libbpf_rs::Result<T>) -> Result<T, Failed> {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let prev = libbpf_rs::set_print(Some((PrintLevel::Debug, keep_log)));
    let loaded = load();
    libbpf_rs::set_print(prev);
    loaded.map_err(|e| {
        let messages = std::mem::take(&mut *LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = std::fs::write(&log, format!("{messages}\n{e:#}\n"));
        let summary = e.to_string().lines().next().unwrap_or("").to_string();
        Failed { error: LoadError::Load { summary, log }, messages }
    })
}

/// [`load_logged`] to [`verifier_log_path`].
pub fn logged_load<T>(load: impl FnOnce() -> libbpf_rs::Result<T>) -> Result<T, LoadError> {
    load_logged(verifier_log_path(), load).map_err(|f| f.error)
}

/// The program whose load failed, and why in one line (the verifier's last word, or libbpf's),
/// from libbpf's messages.
pub fn failed_program(messages: &str) -> Option<(String, String)> {
    let name_of = |line: &str| {
        let rest = line.split("prog '").nth(1)?;
        Some(rest[..rest.find('\'')?].to_string())
    };
    let failed = messages.lines().find(|l| l.contains("prog '") && l.contains("failed to load"))?;
    let name = name_of(failed)?;
    // The verifier's log sits between libbpf's BEGIN and END lines; its last line that is not a
    // tally says why. Without one (a missing attach target, a refused load), libbpf's own line.
    let mut in_log = false;
    let mut why = None;
    for line in messages.lines() {
        if line.contains("-- BEGIN PROG LOAD LOG --") {
            in_log = name_of(line).as_deref() == Some(name.as_str()) || !line.contains("prog '");
            continue;
        }
        if line.contains("-- END PROG LOAD LOG --") {
            in_log = false;
            continue;
        }
        let tally = line.starts_with("processed ") || line.starts_with("verification time");
        if in_log && !line.trim().is_empty() && !tally {
            why = Some(line.trim().to_string());
        }
    }
    // libbpf's first failure about the program (not its relocations, not its closing line).
    let libbpf_says = || {
        messages
            .lines()
            .find(|l| {
                name_of(l).as_deref() == Some(name.as_str())
                    && l.contains("fail")
                    && !l.contains("failed to load")
            })
            .map(|l| l.split_once(&format!("prog '{name}': ")).map_or(l, |(_, why)| why).trim().to_string())
    };
    Some((name.clone(), why.or_else(libbpf_says).unwrap_or_else(|| failed.trim().to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_attach_target_names_its_program() {
        // libbpf 1.7 on Debian's 6.1, which lacks tcp:tcp_sendmsg_locked.
        let log = "libbpf: map 'socks': created successfully, fd=4\n\
            libbpf: prog 'tcp_sendmsg_locked': failed to find kernel BTF type ID of 'tcp_sendmsg_locked': -ESRCH\n\
            libbpf: prog 'tcp_sendmsg_locked': failed to prepare load attributes: -ESRCH\n\
            libbpf: prog 'tcp_sendmsg_locked': failed to load: -ESRCH\n\
            libbpf: failed to load object 'bbrtop_bpf'\n";
        let (name, why) = failed_program(log).unwrap();
        assert_eq!(name, "tcp_sendmsg_locked");
        assert_eq!(why, "failed to find kernel BTF type ID of 'tcp_sendmsg_locked': -ESRCH");
    }

    /// A kernel that refuses the program outright (fentry without trampolines: EPERM, no log).
    #[test]
    fn a_refused_load_names_libbpfs_failure_not_a_relocation() {
        let log = "libbpf: prog 'tcp_sendmsg_fentry': relo #0: <target_type_id> [61] struct tcp_sock\n\
            libbpf: prog 'tcp_sendmsg_locked': skipped loading\n\
            libbpf: prog 'tcp_sendmsg_fentry': BPF program load failed: -EPERM\n\
            libbpf: permission error while running as root; try raising 'ulimit -l'? current value: 8.0 MiB\n\
            libbpf: prog 'tcp_sendmsg_fentry': failed to load: -EPERM\n";
        assert_eq!(
            failed_program(log),
            Some(("tcp_sendmsg_fentry".into(), "BPF program load failed: -EPERM".into()))
        );
    }

    #[test]
    fn a_verifier_refusal_gives_the_verifiers_last_word() {
        let log = "libbpf: prog 'tcp_probe': BPF program load failed: Invalid argument\n\
            libbpf: prog 'tcp_probe': -- BEGIN PROG LOAD LOG --\n\
            0: R1=ctx() R10=fp0\n\
            ; int BPF_PROG(tcp_probe, struct sock *sk, const struct sk_buff *skb)\n\
            12: (85) call bpf_sk_storage_get#107\n\
            program of this type cannot use helper bpf_sk_storage_get#107\n\
            processed 12 insns (limit 1000000) max_states_per_insn 0 total_states 1\n\
            -- END PROG LOAD LOG --\n\
            libbpf: prog 'tcp_probe': failed to load: -22\n";
        let (name, why) = failed_program(log).unwrap();
        assert_eq!(name, "tcp_probe");
        assert_eq!(why, "program of this type cannot use helper bpf_sk_storage_get#107");
        assert_eq!(failed_program("libbpf: failed to load object 'x'\n"), None);
        assert_eq!(failed_program(""), None);
    }
}
