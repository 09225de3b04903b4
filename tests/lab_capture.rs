use bbrtop::lab::{Lab, LabConfig};
use std::time::{Duration, Instant};
#[test]
#[ignore]
fn capture() {
    let cc = std::env::var("CC_ALG").unwrap_or("cubic".into());
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    let f = lab.start_flow(&cc).unwrap();
    let t0 = Instant::now();
    let b0 = lab.received_bytes(&f).unwrap();
    for i in 0..8 {
        std::thread::sleep(Duration::from_millis(500));
        let out = lab.run_in_sender(|| std::process::Command::new("ss").args(["-tinH"]).output().unwrap()).unwrap();
        eprintln!("--- {i} {:?}\n{}", t0.elapsed(), String::from_utf8_lossy(&out.stdout));
    }
    let b1 = lab.received_bytes(&f).unwrap();
    eprintln!("rate {} bit/s", (b1 - b0) as f64 * 8.0 / t0.elapsed().as_secs_f64());
    eprintln!("{}", std::process::Command::new("tc").args(["-n", lab.sender_name(), "-s", "qdisc"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap());
}
