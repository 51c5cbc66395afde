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

    /// The handshake of a replica's connection: the same without the `ROLE` check, which only
    /// the primary's connections make (a primary the Sentinel has switched from still answers
    /// `master` while it lists it as a replica, about 10 s until `+convert-to-slave`: a
    /// replica's connection checking for `slave` would find no replica to read from then).
    pub(crate) fn for_replica(&self) -> Handshake {
        let mut h = self.clone();
        if h.role.take().is_some() {
            h.commands.pop();
            h.bytes.truncate(h.bytes.len().saturating_sub(ROLE.len()));
        }
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
/// reply's first bytes; `None` when they are not an array led by a bulk string.
pub(crate) fn role_in(reply: &[u8]) -> Option<&[u8]> {
    let rest = reply.strip_prefix(b"*")?;
    let rest = &rest[rest.iter().position(|&b| b == b'\n')?.checked_add(1)?..];
    let rest = rest.strip_prefix(b"$")?;
    let end = rest.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    let start = end.checked_add(2)?;
    rest.get(start..start.checked_add(len)?)
}

/// `ROLE` encoded, as [`Handshake::expect_role`] ends the handshake with it.
const ROLE: &[u8] = b"*1\r\n$4\r\nROLE\r\n";

/// How many of a `ROLE` reply's first bytes [`role_in`] reads at most.
pub(crate) const ROLE_PREFIX: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_read_from_replies() {
        let master = b"*3\r\n$6\r\nmaster\r\n:3129\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n";
        assert_eq!(role_in(master), Some(&b"master"[..]));
        assert_eq!(role_in(b"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n"), Some(&b"slave"[..]));
        // Cut short, not an array, a length past the bytes or out of range: no role.
        for bad in [
            &b"*3\r\n$6\r\nmas"[..],
            b"-ERR unknown\r\n",
            b"*1\r\n:5\r\n",
            b"*1\r\n$99999999999999999999999\r\n",
        ] {
            assert_eq!(role_in(bad), None, "{bad:?}");
        }
        let mut h = Handshake::new(None, Some("pw"), false, 0, false);
        h.expect_role("master");
        assert_eq!(h.commands, ["AUTH", "ROLE"]);
        assert!(h.bytes().ends_with(ROLE));
        let r = h.for_replica();
        assert_eq!((h.role, r.role, &r.commands[..]), (Some("master"), None, &["AUTH"][..]));
        assert_eq!(r.bytes(), Handshake::new(None, Some("pw"), false, 0, false).bytes());
        assert_eq!(Handshake::default().for_replica().bytes(), b"");
    }
}
