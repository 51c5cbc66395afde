//! The core's key slots (CRC16/XMODEM and the hash-tag rule) against a real
//! `redis-server --cluster-enabled yes`, which answers `CLUSTER KEYSLOT` before any slot is
//! assigned: the ground for routing requests to the node that owns their key.

use std::io::{BufRead, BufReader, Write};

use respbench_core::cluster::key_slot;
use respbench_tests::{encode_command, RedisServer};

#[test]
fn key_slots_agree_with_the_server() {
    let server = RedisServer::start_with(&[("cluster-enabled", "yes")]);
    // Suite keys, tagged keys, tag edge cases, and bytes of every value.
    let mut keys: Vec<Vec<u8>> = (0..1000u64).map(|i| format!("key:{i:012}").into_bytes()).collect();
    keys.extend((0..300u64).map(|i| format!("{{user{i}}}:cart:{}", i * 7).into_bytes()));
    for k in ["{}", "{", "}", "a{}b", "a{b", "a}b{c}", "{{x}}", "}{x}", "", "06S", "foo{{bar}}zap"] {
        keys.push(k.as_bytes().to_vec());
    }
    keys.extend((0..=255u8).map(|b| vec![b, b'{', b.wrapping_mul(31), b'}']));
    let mut conn = server.connect();
    let mut batch = Vec::new();
    for k in &keys {
        batch.extend(encode_command(&[b"CLUSTER", b"KEYSLOT", k]));
    }
    conn.write_all(&batch).unwrap();
    let mut replies = BufReader::new(conn);
    for k in &keys {
        let mut line = String::new();
        replies.read_line(&mut line).unwrap();
        let server_slot: u16 = line
            .trim_end()
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("CLUSTER KEYSLOT replied {line:?}"));
        assert_eq!(key_slot(k), server_slot, "key {:?}", String::from_utf8_lossy(k));
    }
}
