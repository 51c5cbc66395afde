//! Redis Cluster's key slots: which of the 16384 slots a key belongs to, by CRC16/XMODEM of the
//! key or of its hash tag, under Redis's rule (`keyHashSlot`): the part between the first `{`
//! and the first `}` after it, when that part is not empty.

/// How many slots a cluster has.
pub const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor), the checksum
/// Redis Cluster hashes keys with.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The part of `key` that is hashed: its hash tag, or the whole key when it has none (no `{`,
/// no `}` after the first `{`, or nothing between them).
pub fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else { return key };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

/// The slot of `key`, 0 to 16383.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_check_value_and_redis_vectors() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"bar", 5061),
            (b"foo{bar}{zap}", 5061),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"06S", 0),
        ] {
            assert_eq!(key_slot(key), slot, "{}", String::from_utf8_lossy(key));
        }
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"{}"), b"{}");
        assert_eq!(hash_tag(b"no}tag{"), b"no}tag{");
        assert_eq!(key_slot(b""), 0);
    }

    proptest! {
        #[test]
        fn keys_sharing_a_tag_share_a_slot(tag in "[a-z0-9:]{1,12}", a in "[a-z]{0,8}", b in "[a-z]{0,8}") {
            let one = format!("{a}{{{tag}}}{b}");
            let other = format!("{{{tag}}}:{b}{a}");
            prop_assert_eq!(key_slot(one.as_bytes()), key_slot(other.as_bytes()));
            prop_assert_eq!(key_slot(one.as_bytes()), key_slot(tag.as_bytes()));
            prop_assert!(key_slot(one.as_bytes()) < SLOTS);
        }
    }
}
