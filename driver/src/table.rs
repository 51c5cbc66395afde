//! The loop skeleton of a backend that keeps its own sockets and timers (mio's readiness loop,
//! io_uring's completion loop): the slot table, starting, connecting, the drain rule and what
//! a loop does about its outcome, the timers, the stop watch, publishing and closing, written
//! once. What differs between the two, how a socket is opened, written and closed, is the
//! backend's [`Sockets`].

use std::io;

use respbench_core::{Outcome, Time};

use crate::{Link, Next, Tally, Target, TestRun, Timers, Watch, PUBLISH_EVERY};

/// What a loop does with the socket of one slot: the part of [`Table`]'s loop that is the
/// backend's own.
pub trait Sockets {
    /// Opens a socket for slot `i` to `target` and starts its connect; an `Err` is the
    /// connect's failure.
    fn open(&mut self, i: usize, target: io::Result<Target>) -> io::Result<()>;

    /// The drain rule on slot `i`: [`Link::drain`] of `node` with the slot's writer (none while
    /// it is not connected).
    fn drain(&mut self, i: usize, link: &mut Link, node: usize, tally: &mut Tally) -> Next;

    /// Closes slot `i`'s socket, if it has one; with a reset (`SO_LINGER` 0) when `reset`
    /// ([`Link::must_reset`]).
    fn close(&mut self, i: usize, reset: bool);
}

/// One loop's clients and the slots of their sockets: slot `c * nodes + n` is node `n` of the
/// loop's client `c`.
pub struct Table<'a> {
    links: Vec<Link>,
    /// Sockets per client.
    nodes: usize,
    /// A socket was opened for the slot (a node that has not appeared waits).
    started: Vec<bool>,
    /// Slots to drain next: nodes of a client that queued requests for them.
    wakes: Vec<usize>,
    timers: Timers,
    watch: Watch,
    /// Slots not yet ended.
    open: usize,
    /// Each node's address (one without several nodes).
    targets: &'a [Target],
    last_publish: Time,
    /// The deadline the loop last asked to be woken at ([`Table::next_timer`]), to time how
    /// late it woke.
    asked: std::cell::Cell<Option<Time>>,
    /// `--sentinel`: the primary's moves this loop has acted on ([`crate::Locate::moves`]).
    moves_seen: u64,
    /// What the loop records.
    pub tally: Tally,
}

impl<'a> Table<'a> {
    /// The clients of loop `t` of `run`, recording into `tally`, their sockets going to
    /// `targets`.
    pub fn new(run: &TestRun, t: usize, tally: Tally, targets: &'a [Target]) -> Table<'a> {
        let links: Vec<Link> = run.clients_of(t).into_iter().map(|c| Link::new(&tally, c)).collect();
        let nodes = run.plan.nodes();
        let slots = links.len() * nodes;
        Table {
            links,
            nodes,
            started: vec![false; slots],
            wakes: Vec::new(),
            timers: Timers::new(slots),
            watch: Watch::default(),
            open: 0,
            targets,
            last_publish: tally.now(),
            asked: std::cell::Cell::new(None),
            moves_seen: 0,
            tally,
        }
    }

    /// How many slots: one per client and node.
    pub fn slots(&self) -> usize {
        self.started.len()
    }

    /// Whether a slot has not ended yet: the loop goes on.
    pub fn is_open(&self) -> bool {
        self.open > 0
    }

    /// Slot `i`'s client and node, and the tally, for an input from its socket.
    pub fn link(&mut self, i: usize) -> (&mut Link, usize, &mut Tally) {
        (&mut self.links[i / self.nodes], i % self.nodes, &mut self.tally)
    }

    /// The earliest time a slot wakes: the deadline the backend waits for (how late it woke
    /// against it is recorded after the wait).
    pub fn next_timer(&self) -> Option<Time> {
        let t = self.timers.next();
        self.asked.set(t);
        t
    }

    /// Opens the sockets of every node that is known (a node that has not appeared waits).
    pub fn start(&mut self, io: &mut impl Sockets) {
        for i in 0..self.slots() {
            if !self.links[i / self.nodes].is_dormant(i % self.nodes) {
                self.start_one(i, io);
            } else if self.links[i / self.nodes].waits_until().is_some() {
                // A clients ramp: woken at its step, when drain_one opens it.
                self.schedule(i);
            }
        }
    }

    fn start_one(&mut self, i: usize, io: &mut impl Sockets) {
        self.started[i] = true;
        self.open += 1;
        self.connect(i, io);
    }

    /// Opens a socket for slot `i` and drains it.
    pub fn connect(&mut self, i: usize, io: &mut impl Sockets) {
        let targets = self.targets;
        let (link, n, tally) = self.link(i);
        link.connecting(n, tally);
        let target = link.target(n, targets, tally);
        if let Err(e) = io.open(i, target) {
            let (link, n, tally) = self.link(i);
            link.connect_failed(n, &e, tally);
        }
        self.drain(i, io);
    }

    /// After a wait: timeouts taken earlier are asked again when the test's stop or budget
    /// changed; the slots whose time has come are called; the loop publishes every
    /// [`PUBLISH_EVERY`].
    pub fn after_wait(&mut self, io: &mut impl Sockets) {
        let now = self.tally.now();
        if let Some(asked) = self.asked.take().filter(|&t| t <= now) {
            self.tally.woke_late(now.saturating_since(asked));
        }
        if self.watch.changed(self.tally.plan(), now) {
            // A stop asked for, or the budget spent: timeouts taken earlier are out of date.
            for i in 0..self.slots() {
                self.schedule(i);
            }
        }
        let moves =
            self.tally.run.locate.as_ref().map(|l| l.moves.load(std::sync::atomic::Ordering::Relaxed));
        if let Some(m) = moves.filter(|&m| m != self.moves_seen) {
            // --sentinel: the primary moved; the connections that are up follow it.
            self.moves_seen = m;
            for i in 0..self.slots() {
                let (link, n, tally) = self.link(i);
                if link.move_away(n, tally) {
                    self.drain(i, io);
                }
            }
        }
        // Schedules and deadlines are due whether or not a socket woke us.
        while let Some(i) = self.timers.pop_due(now) {
            let (link, n, tally) = self.link(i);
            if link.timeout(n).is_some_and(|t| t <= now) {
                link.on_timeout(n, tally);
                self.drain(i, io);
            } else {
                // Moved later since (a reply arrived, a request went out): wait for the new time.
                self.schedule(i);
            }
        }
        if now.saturating_since(self.last_publish) >= PUBLISH_EVERY {
            self.last_publish = now;
            self.tally.publish();
        }
    }

    /// Wakes slot `i` at its connection's timeout.
    fn schedule(&mut self, i: usize) {
        let t = self.links[i / self.nodes].timeout(i % self.nodes);
        self.timers.schedule(i, t);
    }

    /// The drain rule on slot `i`, then on the slots of its client it woke.
    pub fn drain(&mut self, i: usize, io: &mut impl Sockets) {
        self.drain_one(i, io);
        while let Some(j) = self.wakes.pop() {
            self.drain_one(j, io);
        }
    }

    /// The drain rule, and what the loop does about its outcome.
    fn drain_one(&mut self, i: usize, io: &mut impl Sockets) {
        let (c, n) = (i / self.nodes, i % self.nodes);
        if !self.started[i] {
            // Kept for a node that has not appeared: woken when it has.
            if !self.links[c].is_dormant(n) {
                self.start_one(i, io);
            }
            return;
        }
        let link = &mut self.links[c];
        let next = io.drain(i, link, n, &mut self.tally);
        while let Some(w) = link.poll_wake() {
            self.wakes.push(c * self.nodes + w);
        }
        match next {
            Next::Wait { .. } => self.schedule(i),
            Next::Reconnect => {
                self.close(i, io);
                self.connect(i, io); // drains the new socket
            }
            Next::Ended => {
                self.close(i, io);
                self.open -= 1;
            }
            // --reconnect: the socket goes; the timer brings the connection back.
            Next::Down => {
                self.close(i, io);
                self.schedule(i);
            }
        }
    }

    /// Closes slot `i`'s socket.
    pub fn close(&mut self, i: usize, io: &mut impl Sockets) {
        let (link, n, _) = self.link(i);
        let reset = link.must_reset(n);
        io.close(i, reset);
        let (link, n, _) = self.link(i);
        link.disconnected(n);
    }

    /// Closes every socket and gives the loop's outcome.
    pub fn finish(mut self, io: &mut impl Sockets) -> Outcome {
        for i in 0..self.slots() {
            self.close(i, io);
        }
        self.tally.finish()
    }
}
