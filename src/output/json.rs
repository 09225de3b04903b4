//! JSON for `snapshot --json` and `/api/sockets`, and NDJSON lines for `watch`.
//!
//! Field names are stable and carry their units (`srtt_us`, `pacing_rate_bytes_per_sec`). A field
//! the kernel did not send is absent, never zero. docs/reference/json.md documents every field.

use bbrtop_core::snapshot::responses::ResponseRow;
use bbrtop_core::snapshot::{CcAggregate, CollectorStatus, Snapshot, SocketView};
use serde::Serialize;
use std::io::Write;

/// The document `snapshot --json` prints.
#[derive(Serialize)]
pub struct SnapshotDoc<'a> {
    #[serde(with = "bbrtop_core::units::serde_time")]
    pub taken_at: std::time::SystemTime,
    pub sockets: Vec<&'a SocketView>,
    pub by_cc: &'a [CcAggregate],
    pub collectors: &'a [CollectorStatus],
    /// Response delivery times since start (eBPF), per cc, peer group and size class.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub responses: &'a [ResponseRow],
}

impl<'a> SnapshotDoc<'a> {
    pub fn new(snap: &'a Snapshot, sockets: Vec<&'a SocketView>, responses: &'a [ResponseRow]) -> Self {
        SnapshotDoc {
            taken_at: snap.taken_at,
            sockets,
            by_cc: &snap.by_cc,
            collectors: &snap.collectors,
            responses,
        }
    }

    /// The document without its sockets, split where they go: `{..."sockets":[` and `]...}`.
    fn around_sockets(&self) -> (String, String) {
        let doc = serde_json::to_string(&SnapshotDoc { sockets: Vec::new(), ..*self }).unwrap_or_default();
        let at = doc.find(SOCKETS_KEY).map_or(0, |i| i + SOCKETS_KEY.len());
        (doc[..at].to_string(), doc[at..].to_string())
    }
}

const SOCKETS_KEY: &str = "\"sockets\":[";

/// A [`SnapshotDoc`] written a socket at a time, as the sockets arrive: the same bytes as
/// serialising it whole, but nothing waits for the last socket.
pub struct DocStream<W: Write> {
    w: W,
    taken_at: std::time::SystemTime,
    sockets: usize,
}

impl<W: Write> DocStream<W> {
    pub fn begin(mut w: W, taken_at: std::time::SystemTime) -> std::io::Result<Self> {
        let (head, _) =
            SnapshotDoc { taken_at, sockets: Vec::new(), by_cc: &[], collectors: &[], responses: &[] }
                .around_sockets();
        w.write_all(head.as_bytes())?;
        Ok(DocStream { w, taken_at, sockets: 0 })
    }

    pub fn socket(&mut self, s: &SocketView) -> std::io::Result<()> {
        let mut buf = Vec::new();
        encode_sockets(&mut buf, std::slice::from_ref(s))?;
        self.encoded(&buf, 1)
    }

    /// Sockets [`encode_sockets`] made, `count` of them: the encoding can run on other threads.
    pub fn encoded(&mut self, buf: &[u8], count: usize) -> std::io::Result<()> {
        // Every encoded socket begins with a comma; the document's first one must not.
        let buf = if self.sockets == 0 { buf.strip_prefix(b",").unwrap_or(buf) } else { buf };
        self.sockets += count;
        self.w.write_all(buf)
    }

    /// Closes the document with what is known only once every socket is in; ends the line.
    pub fn end(
        mut self,
        by_cc: &[CcAggregate],
        collectors: &[CollectorStatus],
        responses: &[ResponseRow],
    ) -> std::io::Result<W> {
        let doc = SnapshotDoc { taken_at: self.taken_at, sockets: Vec::new(), by_cc, collectors, responses };
        let (_, tail) = doc.around_sockets();
        self.w.write_all(tail.as_bytes())?;
        self.w.write_all(b"\n")?;
        Ok(self.w)
    }
}

/// Appends sockets as [`DocStream::encoded`] takes them: each JSON object after a comma.
pub fn encode_sockets(buf: &mut Vec<u8>, sockets: &[SocketView]) -> std::io::Result<()> {
    for s in sockets {
        buf.push(b',');
        serde_json::to_writer(&mut *buf, s).map_err(std::io::Error::from)?;
    }
    Ok(())
}

/// One `watch --ndjson` line: a socket at one poll.
#[derive(Serialize)]
pub struct SocketLine<'a> {
    #[serde(with = "bbrtop_core::units::serde_time")]
    pub ts: std::time::SystemTime,
    pub seq: u64,
    #[serde(flatten)]
    pub socket: &'a SocketView,
}

/// Writes one JSON value and a newline.
pub fn write_line<W: Write, T: Serialize>(w: &mut W, v: &T) -> std::io::Result<()> {
    // From, not other(): a closed pipe must stay a BrokenPipe, which callers treat as success.
    serde_json::to_writer(&mut *w, v).map_err(std::io::Error::from)?;
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::model::SocketRecord;
    use bbrtop_core::seam::Now;
    use bbrtop_core::seam::feed_dump;
    use bbrtop_core::testing::record;
    use bbrtop_core::wire::Dump;
    use bbrtop_engine::{Engine, EngineConfig};

    /// One 15 kB response the BBR socket of cookie 1 served, in 30 ms.
    fn served_one(e: &mut Engine) {
        e.apply(bbrtop_core::seam::Update::Response(bbrtop_core::seam::Response {
            cookie: 1,
            netns: 0,
            cc: "bbr".into(),
            peer: "192.0.2.1".parse().unwrap(),
            bytes: 15_000,
            took: std::time::Duration::from_millis(30),
            served: true,
        }));
    }

    #[test]
    fn streamed_document_is_the_whole_one() {
        let mut e = Engine::new(EngineConfig::default());
        let now = Now::system();
        let recs: Vec<SocketRecord> = (1..=3)
            .map(|c| {
                record(c, if c == 2 { "cubic" } else { "bbr" })
                    .local(format!("10.0.0.1:{}", 4000 + c))
                    .peer("[::1]:80")
                    .srtt_us(c as u32 * 1000)
                    .build()
            })
            .collect();
        feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
        served_one(&mut e);
        let snap = e.tick(now);
        let responses = bbrtop_core::snapshot::totals::response_rows(&snap.totals);
        assert_eq!(responses.len(), 3, "{responses:?}");
        for n in [0, 3] {
            let views = snap.sockets.to_vec();
            let whole = SnapshotDoc::new(&snap, views.iter().take(n).collect(), &responses);
            let mut want = Vec::new();
            write_line(&mut want, &whole).unwrap();
            let mut d = DocStream::begin(Vec::new(), snap.taken_at).unwrap();
            for s in views.iter().take(n) {
                d.socket(s).unwrap();
            }
            let got = String::from_utf8(d.end(&snap.by_cc, &snap.collectors, &responses).unwrap()).unwrap();
            assert_eq!(got, String::from_utf8(want).unwrap(), "{n} sockets");
            assert!(
                got.contains(r#""responses":[{"cc":"bbr","peer_group":"all","size":"all","count":1"#),
                "{got}"
            );
        }
    }

    /// docs/reference/json.md names every field a document's sockets, per-cc aggregates,
    /// response rows and collectors carry, each in its own section: a field the code adds
    /// without a word there fails here.
    #[test]
    fn the_json_reference_names_every_field() {
        let doc = include_str!("../../docs/reference/json.md");
        let section = |heading: &str| {
            let at = doc.find(heading).unwrap_or_else(|| panic!("json.md has no {heading:?}"));
            let rest = &doc[at + heading.len()..];
            &rest[..rest.find("\n## ").unwrap_or(rest.len())]
        };
        let mut e = Engine::new(EngineConfig::default());
        let now = Now::system();
        let rec = record(1, "bbr").local("10.0.0.1:4001").peer("192.0.2.1:80").srtt_us(20_000).build();
        feed_dump(&mut e, Dump { sockets: vec![rec], ..Dump::default() }, now);
        served_one(&mut e);
        let snap = e.tick(now);
        let responses = bbrtop_core::snapshot::totals::response_rows(&snap.totals);
        let views = snap.sockets.to_vec();
        let v = serde_json::to_value(SnapshotDoc::new(&snap, views.iter().collect(), &responses)).unwrap();
        for (key, heading) in [
            ("sockets", "## A socket"),
            ("by_cc", "## Per-cc aggregates"),
            ("responses", "## Response delivery times"),
            ("collectors", "## Collectors"),
        ] {
            let first = v[key].as_array().and_then(|a| a.first()).unwrap_or_else(|| panic!("no {key}: {v}"));
            let text = section(heading);
            let missing: Vec<&String> =
                first.as_object().unwrap().keys().filter(|f| !text.contains(&format!("`{f}`"))).collect();
            assert!(missing.is_empty(), "docs/reference/json.md, {heading:?}, does not name {missing:?}");
        }
    }
}
