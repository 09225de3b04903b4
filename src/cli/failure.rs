//! A command's failure, and the exit code it maps to: 1 runtime, 2 usage, 3 privilege.

/// A failure, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Privilege(String),
    #[error("{0:#}")]
    Runtime(#[from] anyhow::Error),
}

impl Failure {
    pub fn from_collect(e: bbrtop_collect::CollectError) -> Failure {
        use bbrtop_collect::CollectError as E;
        match e {
            E::Netns(e) => Failure::from_netns(e),
            e => Failure::Runtime(e.into()),
        }
    }

    pub fn from_netns(e: bbrtop_collect::netns::NetnsError) -> Failure {
        use bbrtop_collect::netns::NetnsError as E;
        match e {
            e @ E::Privilege(_) => Failure::Privilege(e.to_string()),
            e @ E::Open { .. } => Failure::Usage(e.to_string()),
            e => Failure::Runtime(e.into()),
        }
    }

    pub fn code(&self) -> u8 {
        match self {
            Failure::Runtime(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Privilege(_) => 3,
        }
    }
}

/// Damaged chunks a recording left out, a line each on stderr before the command goes on with
/// the rest (the replay's screen comes after, so they are read once it ends).
pub fn warn_skipped(path: &std::path::Path, skipped: &[String]) {
    for s in skipped {
        eprintln!("bbrtop: warning: {}: {s}", path.display());
    }
}
