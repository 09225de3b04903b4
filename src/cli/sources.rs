//! The collectors a long-running command polls, assembled in one place: netlink for the chosen
//! namespace, and eBPF when it can load (else its reason, which the snapshot's status carries).

use super::Failure;
use crate::bpf::BpfStatus;
use crate::collect::InetDiag;
use crate::engine::sink::Source;
use crate::filter::Filter;
use crate::netns::NetnsSpec;
use crate::rule::RuleConfig;

pub fn assemble(
    netns: Option<&NetnsSpec>,
    filter: &Filter,
    rule: &RuleConfig,
) -> Result<(Vec<Box<dyn Source>>, BpfStatus), Failure> {
    let mut diag = InetDiag::open(netns, filter.state_set()).map_err(Failure::from_collect)?;
    let bpf = crate::bpf::sources(rule);
    if let Some(w) = bpf.windows {
        diag.read_windows(w);
    }
    let mut sources: Vec<Box<dyn Source>> = vec![Box::new(diag)];
    sources.extend(bpf.sources);
    Ok((sources, bpf.status))
}

/// One line for stderr about eBPF, when it is off, partly attached or limited.
pub fn bpf_note(status: &BpfStatus) -> Option<String> {
    if let Some(reason) = &status.reason {
        return Some(format!("bbrtop: {reason}"));
    }
    let mut parts = Vec::new();
    if !status.failed.is_empty() {
        parts.push(format!("partly attached: {}", crate::bpf::describe_failures(status)));
    }
    parts.extend(status.limits.iter().cloned());
    (!parts.is_empty()).then(|| format!("bbrtop: eBPF {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_is_one_line_with_what_is_off_or_missing() {
        assert_eq!(bpf_note(&BpfStatus::default()), None);
        let limited = BpfStatus { limits: vec!["BBR state off: x".into()], ..Default::default() };
        assert_eq!(bpf_note(&limited).as_deref(), Some("bbrtop: eBPF BBR state off: x"));
        let both = BpfStatus { failed: vec![("tcp_probe", "EPERM".into())], ..limited.clone() };
        assert_eq!(
            bpf_note(&both).as_deref(),
            Some("bbrtop: eBPF partly attached: tcp_probe: EPERM; BBR state off: x")
        );
        let off = BpfStatus { reason: Some("eBPF off: no BTF".into()), ..both };
        assert_eq!(bpf_note(&off).as_deref(), Some("bbrtop: eBPF off: no BTF"), "off says only why");
    }
}
