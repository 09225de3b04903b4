//! The collectors a long-running command polls, assembled in one place: netlink for the chosen
//! namespace, and eBPF when it can load (else its reason, which the snapshot's status carries).

use super::Failure;
use crate::alert::rule::RuleConfig;
use crate::bpf::BpfStatus;
use crate::collect::InetDiag;
use crate::collect::netns::NetnsSpec;
use crate::filter::Filter;
use crate::runtime::Source;

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

/// One line for stderr about eBPF, when it is off or partly attached.
pub fn bpf_note(status: &BpfStatus) -> Option<String> {
    if let Some(reason) = &status.reason {
        Some(format!("bbrtop: {reason}"))
    } else if !status.failed.is_empty() {
        Some(format!("bbrtop: eBPF partly attached: {}", crate::bpf::describe_failures(status)))
    } else {
        None
    }
}
