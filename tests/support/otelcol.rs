//! A real OpenTelemetry Collector on loopback for the OTLP log export: `bbrtop-otelcol`, the
//! distribution in `scripts/otelcol` (the core OTLP receiver, the core debug and contrib file
//! exporters, one pinned release) that `scripts/setup.sh` (`setup_otelcol`) builds into
//! `target/otelcol/`. It needs no privilege, so the tests that start it are not `root_`; under
//! `CI=true` a missing binary fails them ([`available`]).
//!
//! The collector receives OTLP/HTTP (protobuf or JSON) on `127.0.0.1:<free port>` and its logs
//! pipeline writes what it received with the file exporter, as JSON lines: one OTLP
//! `ExportLogsServiceRequest` per line, as the receiver handed it on. [`Collector::log_records`]
//! reads them back.
//!
//! **One file per start.** Start `n` (1 for [`Collector::start`], 2 after the first
//! [`Collector::restart`], ...) writes `received-<n>.jsonl` in the caller's directory (its config
//! is `otelcol-<n>.yaml`, its own log `otelcol-<n>.log`), and `log_records` reads them all in order.
//! So a restart neither truncates what an earlier run wrote (the exporter's default) nor appends
//! onto a line a SIGKILL cut short (what `append: true` would do): such a line, the last of its
//! file and without its newline, is left out; every complete line must parse.
//!
//! **No flush to wait for.** Without `rotation` the file exporter writes through a 4 KiB buffer
//! flushed every `flush_interval` (1 s by default), so a record acknowledged with 200 could sit
//! in memory, and a SIGKILL would lose it and could leave half a line. With `rotation` set it
//! writes each line straight to the file and ignores `flush_interval` (its README says so). The
//! harness sets `rotation` at 1 GiB, which no test reaches; the exporter has no sending queue, so
//! the receiver answers only once the line is written: a 200 means the record is in the file, and
//! a kill loses nothing acknowledged. A sender under test exports on its own schedule, so tests
//! still poll for what they expect: [`Collector::wait_for_records`].

use super::guard;
use super::http::{free_port, get};
use super::{Proc, poll_until};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a start may take before the port answers HTTP.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// The collector binary that `scripts/setup.sh` builds.
pub fn binary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/otelcol/bbrtop-otelcol")
}

/// Whether the collector is built, else [`guard::unavailable`]: false after a SKIP note, a
/// failure under `CI=true` (CI runs `scripts/setup.sh`, which builds it).
pub fn available() -> bool {
    binary().is_file()
        || guard::unavailable(&format!(
            "{} is not built (scripts/setup.sh builds it: `. scripts/setup.sh && setup_otelcol`)",
            binary().display()
        ))
}

/// A running collector; SIGKILLed (by its PID) and reaped on drop. The caller owns `dir` and
/// must keep it until the collector has dropped.
pub struct Collector {
    dir: PathBuf,
    port: u16,
    /// Starts so far: start `n` writes `received-<n>.jsonl`.
    starts: u32,
    proc: Option<Proc>,
}

impl Collector {
    /// Starts the collector on a free loopback port, writing into `dir`, and waits (bounded) until
    /// its OTLP/HTTP receiver answers. Panics if it is not built: call [`available`] first.
    pub fn start(dir: &Path) -> Collector {
        assert!(binary().is_file(), "{} is not built (scripts/setup.sh)", binary().display());
        let mut c = Collector { dir: dir.to_path_buf(), port: free_port(), starts: 0, proc: None };
        c.spawn();
        c
    }

    /// The OTLP/HTTP base URL: a sender posts logs to `{endpoint}/v1/logs`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// SIGKILLs the collector by its PID and reaps it; nothing it acknowledged is lost (see the
    /// module's note). Does nothing when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            let _ = p.0.kill();
            let _ = p.0.wait();
        }
    }

    /// Kills the collector if it runs, and starts it again on the same port, writing into the same
    /// directory (a new `received-<n>.jsonl` beside the earlier ones).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let n = self.starts;
        let config = self.dir.join(format!("otelcol-{n}.yaml"));
        std::fs::write(&config, self.config(n)).expect("write the collector's config");
        let log_path = self.log(n);
        let log = std::fs::File::create(&log_path).expect("the collector's log");
        let child = Command::new(binary())
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start bbrtop-otelcol");
        let mut proc = Proc(child);
        let port = self.port;
        // Any HTTP answer will do (404 for /): the receiver starts after the exporters, so once
        // it serves, the pipeline is up.
        let ready = poll_until(READY_WITHIN, || {
            if let Some(status) = proc.0.try_wait().expect("wait") {
                panic!("bbrtop-otelcol exited at start ({status}):\n{}", read_log(&log_path));
            }
            get(port, "/", None).ok().filter(|r| r.0 != 0).map(|_| ())
        });
        assert!(
            ready.is_some(),
            "bbrtop-otelcol did not answer on port {port} within {READY_WITHIN:?}:\n{}",
            read_log(&log_path)
        );
        self.proc = Some(proc);
    }

    /// Start `n`'s configuration: OTLP/HTTP in, the file exporter (and the debug exporter, which
    /// counts what arrived in the collector's log) out, no internal telemetry server.
    fn config(&self, n: u32) -> String {
        let file = json_string(&self.received(n));
        format!(
            "receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
exporters:
  file:
    path: {file}
    # rotation set: each line is written straight to the file (flush_interval is ignored).
    rotation:
      max_megabytes: 1024
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file, debug]
",
            port = self.port
        )
    }

    fn received(&self, n: u32) -> PathBuf {
        self.dir.join(format!("received-{n}.jsonl"))
    }

    fn log(&self, n: u32) -> PathBuf {
        self.dir.join(format!("otelcol-{n}.log"))
    }

    /// What the current run has logged (the debug exporter's counts among it), for a failure's
    /// message.
    pub fn current_log(&self) -> String {
        read_log(&self.log(self.starts))
    }

    /// Every log record received so far, by every start, in arrival order; each flattened:
    /// the record's own OTLP JSON fields (`severityText`, `severityNumber`, `traceId`...) with
    /// `attributes` a plain key→value object, `body` a plain value, `timeUnixNano` and
    /// `observedTimeUnixNano` numbers (u64; OTLP JSON writes them as strings), `resource` its
    /// resource's attributes and `scope` its scope (`name`, `version`, `attributes`). Values:
    /// `stringValue` a string, `intValue` an i64 number (OTLP JSON writes it as a string),
    /// `doubleValue` a number, `boolValue` a bool, `arrayValue` an array, `kvlistValue` an
    /// object, `bytesValue` its base64 string, an empty value null.
    pub fn log_records(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for n in 1..=self.starts {
            let path = self.received(n);
            let Ok(bytes) = std::fs::read(&path) else { continue };
            // A line without its newline is being written, or was cut short by a kill.
            let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(&[][..], |i| &bytes[..=i]);
            let text = std::str::from_utf8(complete).expect("the file exporter writes UTF-8");
            for line in text.lines().filter(|l| !l.is_empty()) {
                let request: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}: a line that is not JSON ({e}): {line}", path.display()));
                flatten_request(&request, &mut out);
            }
        }
        out
    }

    /// Polls [`Collector::log_records`] until there are at least `n`, at most `limit`; they all.
    /// Panics with what did arrive and the collector's log when they do not.
    pub fn wait_for_records(&self, n: usize, limit: Duration) -> Vec<Value> {
        let got = poll_until(limit, || Some(self.log_records()).filter(|r| r.len() >= n));
        got.unwrap_or_else(|| {
            let have = self.log_records();
            panic!(
                "{} of {n} log records reached the collector within {limit:?}: {have:#?}\ncollector log:\n{}",
                have.len(),
                self.current_log()
            )
        })
    }
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("({}: {e})", path.display()))
}

/// A path as a JSON string, which YAML reads as a double-quoted scalar.
fn json_string(path: &Path) -> String {
    Value::String(path.display().to_string()).to_string()
}

/// The log records of one `ExportLogsServiceRequest` in OTLP JSON, flattened (see
/// [`Collector::log_records`]).
fn flatten_request(request: &Value, out: &mut Vec<Value>) {
    for rl in items(&request["resourceLogs"]) {
        let resource = attributes(&rl["resource"]["attributes"]);
        for sl in items(&rl["scopeLogs"]) {
            let mut scope = sl["scope"].as_object().cloned().unwrap_or_default();
            scope.insert("attributes".into(), attributes(&sl["scope"]["attributes"]));
            for record in items(&sl["logRecords"]) {
                let mut r = record.as_object().cloned().unwrap_or_default();
                r.insert("attributes".into(), attributes(&record["attributes"]));
                r.insert("body".into(), any_value(&record["body"]));
                for key in ["timeUnixNano", "observedTimeUnixNano"] {
                    if let Some(n) = r.get(key).and_then(unsigned) {
                        r.insert(key.into(), n.into());
                    }
                }
                r.insert("resource".into(), resource.clone());
                r.insert("scope".into(), Value::Object(scope.clone()));
                out.push(Value::Object(r));
            }
        }
    }
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// OTLP JSON's `[{"key": k, "value": AnyValue}]` as `{k: plain value}`.
fn attributes(list: &Value) -> Value {
    let map: Map<String, Value> = items(list)
        .iter()
        .filter_map(|kv| Some((kv["key"].as_str()?.to_string(), any_value(&kv["value"]))))
        .collect();
    Value::Object(map)
}

/// An OTLP JSON `AnyValue` as a plain JSON value.
fn any_value(v: &Value) -> Value {
    let Some(obj) = v.as_object() else { return Value::Null };
    let Some((kind, inner)) = obj.iter().next() else { return Value::Null };
    match kind.as_str() {
        "intValue" => signed(inner).map_or_else(|| inner.clone(), Value::from),
        "doubleValue" => inner.as_f64().map_or_else(|| inner.clone(), Value::from),
        "arrayValue" => Value::Array(items(&inner["values"]).iter().map(any_value).collect()),
        "kvlistValue" => attributes(&inner["values"]),
        // stringValue, boolValue, bytesValue (base64): as they are.
        _ => inner.clone(),
    }
}

/// An int64 that OTLP JSON writes as a string (or, from some writers, as a number).
fn signed(v: &Value) -> Option<i64> {
    v.as_str().map_or_else(|| v.as_i64(), |s| s.parse().ok())
}

fn unsigned(v: &Value) -> Option<u64> {
    v.as_str().map_or_else(|| v.as_u64(), |s| s.parse().ok())
}
