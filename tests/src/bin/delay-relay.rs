//! `delay-relay PORT UPSTREAM_PORT DELAY_US [MBIT]`: a TCP relay on 127.0.0.1:PORT to
//! 127.0.0.1:UPSTREAM_PORT that holds each chunk DELAY_US microseconds each way and forwards it
//! as it was read, each direction of each connection paced at MBIT megabits per second when
//! given (respbench_tests::relay), until killed. For bench/pipeline.

use std::time::Duration;

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (port, upstream, delay_us, mbit) = match args[..] {
        [p, u, d] => (p, u, d, 0),
        [p, u, d, m] => (p, u, d, m),
        _ => {
            eprintln!("usage: delay-relay PORT UPSTREAM_PORT DELAY_US [MBIT]");
            std::process::exit(2);
        }
    };
    let Some(rate) = mbit.checked_mul(1_000_000 / 8) else {
        eprintln!("delay-relay: MBIT is too large");
        std::process::exit(2);
    };
    let (Ok(port), Ok(upstream)) = (u16::try_from(port), u16::try_from(upstream)) else {
        eprintln!("delay-relay: ports are 0 to 65535");
        std::process::exit(2);
    };
    let _relay =
        respbench_tests::relay::Relay::start_on(port, upstream, Duration::from_micros(delay_us), rate, false);
    loop {
        std::thread::park();
    }
}
