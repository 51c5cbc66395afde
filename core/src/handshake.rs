//! What a connection sends before its first request ([`Handshake`]): built once per test from
//! the options and cloned into each connection ([`crate::conn::Connection`]); a cluster replica's
//! ends with `READONLY` ([`crate::cluster::Cluster`]). Below both, so that the plan (which holds
//! the test's) and the cluster (which holds a replica's) can each name it.

use crate::resp::encode_command;

/// What a connection sends before its first request, in redis-benchmark's order: `AUTH`,
/// `CLIENT TRACKING on`, `SELECT db`, `HELLO 3`.
#[derive(Clone, Debug, Default)]
pub struct Handshake {
    bytes: Vec<u8>,
    pub(crate) commands: Vec<&'static str>,
    /// `--sentinel`: the role its `ROLE` must name (`master`, `slave`), `None` without one.
    pub(crate) role: Option<&'static str>,
}

impl Handshake {
    /// Builds the handshake. `user` is used only with a `password` (`AUTH user password`), as
    /// redis-benchmark does; `db` 0 sends no `SELECT`.
    pub fn new(
        user: Option<&str>,
        password: Option<&str>,
        tracking: bool,
        db: u32,
        resp3: bool,
    ) -> Handshake {
        let mut h = Handshake::default();
        match (user, password) {
            (Some(u), Some(p)) => h.push("AUTH", &[b"AUTH", u.as_bytes(), p.as_bytes()]),
            (None, Some(p)) => h.push("AUTH", &[b"AUTH", p.as_bytes()]),
            _ => {}
        }
        if tracking {
            h.push("CLIENT TRACKING", &[b"CLIENT", b"TRACKING", b"on"]);
        }
        if db != 0 {
            h.push("SELECT", &[b"SELECT", db.to_string().as_bytes()]);
        }
        if resp3 {
            h.push("HELLO", &[b"HELLO", b"3"]);
        }
        h
    }

    /// `--sentinel`: ends the handshake with `ROLE`, whose reply must name `role` (`master` for
    /// the primary's connections): a server in another role (an address the Sentinel gave before
    /// a move) is a failed attempt, as production Sentinel clients check it; nothing is sent
    /// there.
    pub fn expect_role(&mut self, role: &'static str) {
        self.push("ROLE", &[b"ROLE"]);
        self.role = Some(role);
    }

    /// The handshake of a replica's connection: the same, its `ROLE` (if any) checked for a
    /// replica ([`check_role`]).
    pub(crate) fn for_replica(&self) -> Handshake {
        let mut h = self.clone();
        h.role = h.role.map(|_| "slave");
        h
    }

    pub(crate) fn push(&mut self, name: &'static str, args: &[&[u8]]) {
        encode_command(args, &mut self.bytes);
        self.commands.push(name);
    }

    /// The encoded commands, sent back to back.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// How many commands (and so replies) the handshake has.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether the handshake sends nothing.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

/// The role a `ROLE` reply names (its first element, `master`, `slave` or `sentinel`) from the
/// reply's first bytes, and the bytes after it; `None` when they are not an array led by a bulk
/// string.
fn role_in(reply: &[u8]) -> Option<(&[u8], &[u8])> {
    let (_, rest) = line(reply.strip_prefix(b"*")?)?;
    let (len, rest) = line(rest.strip_prefix(b"$")?)?;
    let len: usize = std::str::from_utf8(len).ok()?.parse().ok()?;
    Some((rest.get(..len)?, rest.get(len.checked_add(2)?..)?))
}

/// A RESP line's text and the bytes after its `\r\n`.
fn line(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\r')?;
    Some((&bytes[..end], bytes.get(end.checked_add(2)?..)?))
}

/// Whether a `ROLE` reply (its first [`ROLE_PREFIX`] bytes) fits a connection that needs
/// `want`: `master` for the primary's; for a replica's (`slave`), a replica, or a primary that
/// serves no replica: one the Sentinel switched from, which it lists as a replica and which
/// answers `master` until `+convert-to-slave` (about 10 s); the primary it switched to serves
/// that one from then (and every other replica at once). `Err` with the role named (`?` when
/// the reply names none, `master serving N replicas`).
pub(crate) fn check_role(reply: &[u8], want: &str) -> Result<(), String> {
    match role_in(reply) {
        Some((got, _)) if got == want.as_bytes() => Ok(()),
        Some((b"master", rest)) if want == "slave" => {
            // `:offset`, then the replicas it serves: `*N`.
            let served = line(rest.strip_prefix(b":").unwrap_or_default())
                .and_then(|(_, rest)| line(rest.strip_prefix(b"*")?))
                .and_then(|(n, _)| std::str::from_utf8(n).ok()?.parse::<u64>().ok());
            match served {
                Some(0) => Ok(()),
                Some(n) => Err(format!("master serving {n} replicas")),
                None => Err("master".into()),
            }
        }
        Some((got, _)) => Err(String::from_utf8_lossy(got).into_owned()),
        None => Err("?".into()),
    }
}

/// How many of a `ROLE` reply's first bytes [`check_role`] reads at most.
pub(crate) const ROLE_PREFIX: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_from_replies() {
        let master = b"*3\r\n$6\r\nmaster\r\n:3129\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n";
        let alone = b"*3\r\n$6\r\nmaster\r\n:18446744073709551615\r\n*0\r\n";
        let slave = b"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n";
        assert_eq!(check_role(master, "master"), Ok(()));
        assert_eq!(check_role(alone, "master"), Ok(()));
        assert_eq!(check_role(slave, "master"), Err("slave".into()));
        assert_eq!(check_role(slave, "slave"), Ok(()));
        // A primary serving a replica is no replica; one serving none may be a demoted one.
        assert_eq!(check_role(master, "slave"), Err("master serving 1 replicas".into()));
        assert_eq!(check_role(alone, "slave"), Ok(()));
        assert_eq!(check_role(b"*3\r\n$6\r\nmaster\r\n:31", "slave"), Err("master".into()));
        // Cut short, not an array, a length past the bytes or out of range: no role.
        for bad in [
            &b"*3\r\n$6\r\nmas"[..],
            b"-ERR unknown\r\n",
            b"*1\r\n:5\r\n",
            b"*1\r\n$99999999999999999999999\r\n",
        ] {
            assert_eq!(check_role(bad, "master"), Err("?".into()), "{bad:?}");
        }
        let mut h = Handshake::new(None, Some("pw"), false, 0, false);
        h.expect_role("master");
        assert_eq!(h.commands, ["AUTH", "ROLE"]);
        assert_eq!((h.role, h.for_replica().role), (Some("master"), Some("slave")));
        assert_eq!(h.for_replica().bytes(), h.bytes());
        assert_eq!(Handshake::default().for_replica().role, None);
    }
}
