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
