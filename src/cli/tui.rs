//! `bbrtop` with no command: the live terminal UI over this host's sockets, a namespace's, the
//! built-in lab's, or a remote exporter's (`--connect`).

use super::Failure;
use super::args::PollArgs;
use super::startup;
use crate::remote::client::{Client, Roots};
use crate::remote::target::{self, Target};
use crate::tui::source::Source;
use bbrtop_core::system::SystemInfo;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct TuiArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Start the built-in lab (network namespaces, a 40 ms path with a 20 Mbit/s tbf bottleneck and a deep queue,
    /// one BBR and one CUBIC flow) and watch it. Torn down on exit. Needs CAP_NET_ADMIN and
    /// CAP_SYS_ADMIN.
    #[arg(long, conflicts_with = "netns")]
    pub lab: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// `--connect`: another host's live state, from its `bbrtop export`.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnectArgs {
    /// Show a remote host instead of this one: the URL of its `bbrtop export` (https://host:port),
    /// which serves its live state with --web.enable-api, read every --interval through its TLS
    /// and basic auth. The remote's export decides what is polled and how alerts are judged, so
    /// --netns, --lab and the collector, filter and alert flags do not go with it. A password in
    /// the URL (https://user:password@host:port) is seen by anyone who lists processes: give it
    /// with --connect.password.file.
    #[arg(long, value_name = "URL", value_parser = parse_connect, conflicts_with_all = LOCAL_ONLY)]
    pub connect: Option<Target>,
    /// The user for the remote's basic auth (or the URL's user@).
    #[arg(long = "connect.username", value_name = "NAME", requires = "connect")]
    pub username: Option<String>,
    /// A file holding the password for the remote's basic auth (a trailing newline is dropped):
    /// never on the command line, where other users see it. A regular file of at most 4 KiB.
    #[arg(long = "connect.password.file", value_name = "FILE", requires = "connect")]
    pub password_file: Option<PathBuf>,
    /// Trust the CA certificates in this PEM file (a self-signed exporter's own certificate)
    /// instead of the system's CA store. A regular file of at most 4 MiB.
    #[arg(long = "connect.ca.file", value_name = "FILE", requires = "connect")]
    pub ca_file: Option<PathBuf>,
}

/// The flags that say how this host is polled, which mean nothing for a remote's state.
const LOCAL_ONLY: [&str; 18] = [
    "netns",
    "lab",
    "collector_bpf",
    "no_collector_bpf",
    "collector_walk",
    "no_collector_walk",
    "collector",
    "kubernetes_pods",
    "cc",
    "port",
    "peer",
    "state",
    "filter",
    "ratio",
    "hold",
    "floor",
    "baseline",
    "loopback",
];

fn parse_connect(s: &str) -> Result<Target, String> {
    target::parse(s)
}

impl ConnectArgs {
    /// The client of `target`, with the credentials and CA the flags name.
    fn client(&self, target: Target) -> Result<Client, Failure> {
        let password = match &self.password_file {
            Some(p) => Some(
                bbrtop_collect::files::read_to_string(
                    "--connect.password.file",
                    p,
                    bbrtop_collect::files::Kind::Password,
                )
                .map_err(Failure::Usage)?,
            ),
            None => None,
        };
        let creds = target::credentials(&target, self.username.as_deref(), password.as_deref())
            .map_err(|e| Failure::Usage(format!("--connect: {e}")))?;
        let roots = self.ca_file.as_deref().map_or(Roots::System, Roots::File);
        Client::new(target, creds, roots).map_err(Failure::Usage)
    }
}

/// How long the TUI waits for the remote's first answer, whose host facts the header shows.
const FIRST_FRAME_WAIT: Duration = Duration::from_secs(3);

pub fn run(a: TuiArgs) -> Result<(), Failure> {
    // The remote's flags (its password file, its CA) are read first: a mistake there is a
    // usage error wherever the command runs.
    let remote = a.connect.connect.clone().map(|t| a.connect.client(t)).transpose()?;
    // Checked before anything is set up (the lab takes seconds and privileges).
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(
            "the terminal UI needs a terminal (stdin and stdout); for pipes use `bbrtop snapshot` or \
             `bbrtop watch`"
                .into(),
        ));
    }
    if let Some(client) = remote {
        return run_remote(&a, client);
    }
    let lab = a.lab.then(startup::live_lab);
    let mut started = startup::start(&a.poll, Default::default(), lab, &mut |line| tracing::warn!("{line}"))?;
    if let Some(l) = &started.lab {
        tracing::info!(lab = l.name(), path = l.path_description(), "lab started");
    }
    let sys = bbrtop_collect::host::system_info(started.netns.as_ref());
    let result = crate::tui::ui_loop(&started.runtime.published(), &started.stop, sys);
    started.runtime.stop();
    drop(started);
    tracing::info!("exit");
    Ok(result?)
}

/// The TUI on a remote exporter's frames.
fn run_remote(a: &TuiArgs, client: Client) -> Result<(), Failure> {
    let stop = startup::signals()?;
    let target = client.target().clone();
    let remote = crate::remote::poll::Remote::start(
        client,
        crate::record::frame::decode,
        a.poll.source.interval,
        bbrtop_core::snapshot::history::DEFAULT_HISTORY,
    )
    .map_err(|e| Failure::Runtime(anyhow::anyhow!("starting the poller: {e}")))?;
    let published = remote.runtime.published();
    published.wait_newer(0, FIRST_FRAME_WAIT);
    // Until a frame has come, the remote's host facts are unknown; the header names its URL, and
    // takes the facts as soon as a frame brings them.
    let unknown = || "?".to_string();
    let sys = || {
        remote.system().unwrap_or_else(|| SystemInfo {
            host: unknown(),
            kernel: unknown(),
            default_cc: unknown(),
            qdisc: unknown(),
            ..SystemInfo::default()
        })
    };
    tracing::info!(remote = target.shown, "connecting");
    let result = crate::tui::ui_loop_from(Source::Remote(target.shown.clone()), &published, &stop, &sys);
    // A fetch under way may wait for a slow remote up to its timeout: the process exits without it.
    remote.runtime.abandon();
    tracing::info!("exit");
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::try_parse_from(std::iter::once("bbrtop").chain(args.iter().copied()))
            .map_err(|e| crate::cli::usage_line(&e))
    }

    #[test]
    fn connect_takes_a_url_the_poll_interval_and_credentials() {
        let cli = parse(&[
            "--connect",
            "https://edge-1:9100",
            "--interval",
            "2s",
            "--connect.username",
            "bob",
            "--connect.password.file",
            "/run/secrets/pw",
            "--connect.ca.file",
            "ca.pem",
        ])
        .unwrap();
        let c = &cli.tui.connect;
        assert_eq!(c.connect.as_ref().map(|t| t.frame.as_str()), Some("https://edge-1:9100/api/v1/frame"));
        assert_eq!(cli.tui.poll.source.interval, std::time::Duration::from_secs(2));
        assert_eq!(c.username.as_deref(), Some("bob"));
    }

    #[test]
    fn local_flags_and_bad_urls_are_one_line_errors() {
        for (args, says) in [
            (&["--connect", "https://h:1", "--netns", "/proc/self/ns/net"][..], "'--netns <NAME|PATH>'"),
            (&["--connect", "https://h:1", "--lab"], "'--lab'"),
            (&["--connect", "https://h:1", "--cc", "bbr"], "'--cc <NAME>'"),
            (&["--connect", "https://h:1", "--filter", "lo"], "'--filter <EXPR>'"),
            (&["--connect", "https://h:1", "--alert.ratio", "2"], "'--alert.ratio <RATIO>'"),
            (&["--connect", "https://h:1", "--no-collector.bpf"], "'--no-collector.bpf'"),
            (&["--connect", "https://h:1", "--loopback"], "'--loopback'"),
            (&["--connect", "ftp://h:1"], "scheme ftp:// is not http:// or https://"),
            (&["--connect", "edge-1:9100"], "invalid URL"),
            (&["--connect.username", "bob"], "--connect <URL>"),
        ] {
            let line = parse(args).err().unwrap_or_else(|| panic!("{args:?} parsed"));
            assert!(line.starts_with("bbrtop: error: ") && line.contains(says), "{args:?}: {line}");
            assert_eq!(line.lines().count(), 1, "{line}");
        }
    }
}
