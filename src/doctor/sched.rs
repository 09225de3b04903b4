//! Which qdiscs this kernel can attach, so doctor recommends only one that exists. A kernel
//! built without `sch_fq` answers `tc qdisc replace ... fq` with "Specified qdisc kind is
//! unknown". Pure: the kernel's config, its module lists and the qdiscs in use are read in
//! [`super::host`].

use serde::Serialize;

/// Whether each qdisc that can pace or keep BBR's queue short is there (`None`: nothing said).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Kinds {
    pub fq: Option<bool>,
    pub fq_codel: Option<bool>,
}

/// What the kernel says of itself, each where it could be read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources<'a> {
    /// The kernel's config (`/boot/config-RELEASE`, or `/proc/config.gz` unpacked).
    pub config: Option<&'a str>,
    /// `/proc/modules`: the modules loaded.
    pub modules: Option<&'a str>,
    /// `/lib/modules/RELEASE/modules.builtin`.
    pub builtin: Option<&'a str>,
    /// `/lib/modules/RELEASE/modules.dep`: the modules that can be loaded.
    pub dep: Option<&'a str>,
}

impl Kinds {
    /// `in_use`: the kinds attached to some interface now, which the kernel has for certain.
    pub fn read(s: Sources<'_>, in_use: &[&str]) -> Kinds {
        Kinds { fq: has(&s, in_use, "fq", "FQ"), fq_codel: has(&s, in_use, "fq_codel", "FQ_CODEL") }
    }

    /// The qdisc to recommend where BBR's packets leave: fq, unless the kernel is known to lack
    /// it; then fq_codel, unless it lacks that too; else none (TCP's internal pacing).
    pub fn pacer(self) -> Option<&'static str> {
        if self.fq != Some(false) {
            Some("fq")
        } else if self.fq_codel != Some(false) {
            Some("fq_codel")
        } else {
            None
        }
    }
}

/// Whether qdisc `kind` (config symbol `CONFIG_NET_SCH_<symbol>`, module `sch_<kind>`) is there.
fn has(s: &Sources<'_>, in_use: &[&str], kind: &str, symbol: &str) -> Option<bool> {
    if in_use.contains(&kind) {
        return Some(true);
    }
    let module = format!("/sch_{kind}.ko");
    let listed = |list: Option<&str>| list.map(|l| l.lines().any(|line| line.contains(&module)));
    if let Some(config) = s.config {
        let key = format!("CONFIG_NET_SCH_{symbol}=");
        return Some(match config.lines().find_map(|l| l.strip_prefix(&key)) {
            Some("y") => true,
            // A module: there if its file is (where the list could be read).
            Some("m") => listed(s.dep).unwrap_or(true),
            _ => false,
        });
    }
    let loaded = s.modules.map(|m| m.lines().any(|l| l.starts_with(&format!("sch_{kind} "))));
    match (loaded, listed(s.builtin), listed(s.dep)) {
        (Some(true), ..) | (_, Some(true), _) | (.., Some(true)) => Some(true),
        // Built-in and loadable modules both listed, and neither has it.
        (_, Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of this project's machine's /proc/config.gz that name qdiscs (kernel
    /// 6.18.44-fc; no /lib/modules, no /proc/modules).
    const THIS_MACHINE: &str = include_str!("testdata/config_qdiscs_recorded.txt");

    #[test]
    fn this_machine_has_neither_fq_nor_fq_codel() {
        let k = Kinds::read(Sources { config: Some(THIS_MACHINE), ..Sources::default() }, &["htb", "tbf"]);
        assert_eq!(k, Kinds { fq: Some(false), fq_codel: Some(false) });
        assert_eq!(k.pacer(), None, "TCP's internal pacing: nothing to attach");
    }

    #[test]
    fn each_source_says_what_it_can() {
        let config = |text| Kinds::read(Sources { config: Some(text), ..Sources::default() }, &[]);
        assert_eq!(config("CONFIG_NET_SCH_FQ=y\nCONFIG_NET_SCH_FQ_CODEL=m\n").pacer(), Some("fq"));
        let no_fq = config("# CONFIG_NET_SCH_FQ is not set\nCONFIG_NET_SCH_FQ_CODEL=y\n");
        assert_eq!(no_fq.pacer(), Some("fq_codel"));
        // A module whose file is not there cannot be loaded.
        let dep = "kernel/net/sched/sch_fq_codel.ko:\n";
        let k = Kinds::read(
            Sources { config: Some("CONFIG_NET_SCH_FQ=m\n"), dep: Some(dep), ..Default::default() },
            &[],
        );
        assert_eq!(k.fq, Some(false));
        // Without a config: the module lists.
        let lists =
            Sources { builtin: Some("kernel/net/sched/sch_fq.ko\n"), dep: Some(""), ..Default::default() };
        assert_eq!(Kinds::read(lists, &[]), Kinds { fq: Some(true), fq_codel: Some(false) });
        let loaded = Sources { modules: Some("sch_fq_codel 20480 2 - Live 0x0\n"), ..Default::default() };
        assert_eq!(Kinds::read(loaded, &[]), Kinds { fq: None, fq_codel: Some(true) });
        // Nothing read: unknown, and fq is still what is recommended.
        assert_eq!(Kinds::read(Sources::default(), &[]).pacer(), Some("fq"));
        // A kind in use is there, whatever the lists say.
        let k = Kinds::read(Sources { config: Some(""), ..Default::default() }, &["fq"]);
        assert_eq!(k.fq, Some(true));
    }
}
