//! Loads a BPF object file and attaches its programs until stdin closes. `bench/bpf.sh` uses it
//! for the floor of its ns-per-run figures: an empty program on the same tracepoint.
//!
//!     cargo run --release --example bpf_floor -- OBJECT.o

use anyhow::Context;
use std::io::{Read, Write};

fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).context("usage: bpf_floor OBJECT.o")?;
    let obj = libbpf_rs::ObjectBuilder::default()
        .open_file(&path)
        .with_context(|| format!("opening {path}"))?
        .load()
        .with_context(|| format!("loading {path}"))?;
    let links = obj.progs_mut().map(|p| p.attach()).collect::<Result<Vec<_>, _>>().context("attaching")?;
    println!("ready");
    std::io::stdout().flush()?;
    std::io::stdin().read_to_end(&mut Vec::new())?;
    drop(links);
    Ok(())
}
