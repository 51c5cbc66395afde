//! Lays out the release binary's code with cli/text-order.ld (issue #48 item 4): the functions
//! benchmark runs execute sit together at the start of the code, so the pages the kernel maps
//! 64 KiB around each touched one (fault-around) are code the run uses, not the rest of the 7 MB
//! (a memtier line's code resident: 4.4-5.3 MB -> 1.9-2.7 MB). The script only adds a section
//! (`INSERT BEFORE .text`), which lld and GNU ld both read; `RESPBENCH_TEXT_ORDER=0` leaves it out
//! (another linker). scripts/gen-text-order writes it.

fn main() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/text-order.ld");
    println!("cargo:rerun-if-changed=text-order.ld");
    println!("cargo:rerun-if-env-changed=RESPBENCH_TEXT_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let elf = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let wanted = std::env::var("RESPBENCH_TEXT_ORDER").as_deref() != Ok("0");
    if release && elf && wanted {
        for arg in ["-Xlinker", "-T", "-Xlinker", script] {
            println!("cargo:rustc-link-arg-bin=respbench={arg}");
        }
    }
}
