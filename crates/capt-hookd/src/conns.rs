//! The open client connections, oldest first, so the host can shed the ones that are only
//! holding a slot when a new client arrives at the cap.
//!
//! Each connection carries one exchange: it waits for its request (idle, then reading), then is
//! served. Only connections still waiting for their request are ever shed, the idle ones
//! (nothing received) before the ones part-way through a frame, oldest first, and only once they
//! have had [`SHED_GRACE`] to be read (a burst of new clients is not shed before the host got to
//! their requests). A connection being served is never shed: its event may already be running.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Connections admitted past the cap when every connection is being served: they may only carry
/// control requests (status, shutdown, …), so an operator can always reach a saturated host.
pub const CONTROL_LANE: usize = 16;

/// How long a new connection is safe from shedding: time for the host to read a request that
/// is already waiting in the socket.
pub const SHED_GRACE: Duration = Duration::from_millis(500);

const IDLE: u8 = 0;
const READING: u8 = 1;
const SERVING: u8 = 2;
const SHED: u8 = 3;

/// One open connection as the registry sees it.
#[derive(Debug)]
pub struct Conn {
    /// Registry key; grows with age, so the map's order is oldest first.
    id: u64,
    /// Where the exchange is; moves only forward, and to `SHED` only from `IDLE` or `READING`.
    phase: AtomicU8,
    /// Wakes the connection's task when it has been shed.
    shed: Notify,
    /// Admitted past the cap: control requests only.
    pub overflow: bool,
    /// When it was admitted, for [`SHED_GRACE`].
    opened: Instant,
}

impl Conn {
    /// Marks the request as started (first byte received); a no-op once shed.
    pub fn reading(&self) {
        let _ = self
            .phase
            .compare_exchange(IDLE, READING, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Marks the request as complete, so the connection can no longer be shed. False when it
    /// was shed first: the connection must then be dropped without serving.
    pub fn serving(&self) -> bool {
        loop {
            match self.phase.load(Ordering::SeqCst) {
                SHED => return false,
                SERVING => return true,
                p => {
                    if self
                        .phase
                        .compare_exchange(p, SERVING, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        return true;
                    }
                }
            }
        }
    }

    /// Resolves once the connection has been shed.
    pub async fn shed(&self) {
        self.shed.notified().await;
    }

    /// Sheds the connection if it is still in `from`; true when it was.
    fn try_shed(&self, from: u8, now: Instant) -> bool {
        if now.saturating_duration_since(self.opened) < SHED_GRACE {
            return false;
        }
        self.force_shed(from)
    }

    /// [`Conn::try_shed`] without the grace period (shutdown).
    fn force_shed(&self, from: u8) -> bool {
        let won = self
            .phase
            .compare_exchange(from, SHED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if won {
            // notify_one keeps a permit when the task is not waiting yet, so none is lost.
            self.shed.notify_one();
        }
        won
    }
}

/// The registry.
#[derive(Debug, Default)]
pub struct Conns {
    /// Open connections by age.
    open: Mutex<BTreeMap<u64, Arc<Conn>>>,
    /// Last id handed out.
    next: AtomicU64,
    /// Connections shed since start, for status and logs.
    pub shed_total: AtomicU64,
}

/// A registered connection; it leaves the registry when this is dropped.
#[derive(Debug)]
pub struct Registered {
    conns: Arc<Conns>,
    /// The connection.
    pub conn: Arc<Conn>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.conns.lock().remove(&self.conn.id);
    }
}

impl Conns {
    fn lock(&self) -> parking_lot::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.open.lock()
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Registers a new connection. At `cap`, the oldest connection still waiting for its request
    /// is shed to make room; when every open connection is being served, the new one joins the
    /// control lane (see [`CONTROL_LANE`]), and `None` once that is full too.
    pub fn admit(self: &Arc<Self>, cap: usize) -> Option<Registered> {
        self.admit_at(cap, Instant::now())
    }

    /// [`Conns::admit`] at a given time (tests step the clock).
    fn admit_at(self: &Arc<Self>, cap: usize, now: Instant) -> Option<Registered> {
        let mut open = self.lock();
        // Shed connections leave the map when their task ends, which is soon but not yet.
        let live = open
            .values()
            .filter(|c| c.phase.load(Ordering::SeqCst) != SHED)
            .count();
        let mut overflow = false;
        if live >= cap {
            if Self::shed_oldest(&open, now) {
                self.shed_total.fetch_add(1, Ordering::Relaxed);
            } else if live < cap + CONTROL_LANE {
                overflow = true;
            } else {
                return None;
            }
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new(Conn {
            id,
            phase: AtomicU8::new(IDLE),
            shed: Notify::new(),
            overflow,
            opened: now,
        });
        open.insert(id, Arc::clone(&conn));
        Some(Registered {
            conns: Arc::clone(self),
            conn,
        })
    }

    /// Sheds the oldest idle connection, else the oldest one part-way through its request;
    /// false when there is none (used when the process runs out of descriptors).
    pub fn shed_one(&self) -> bool {
        self.shed_one_at(Instant::now())
    }

    fn shed_one_at(&self, now: Instant) -> bool {
        let shed = Self::shed_oldest(&self.lock(), now);
        if shed {
            self.shed_total.fetch_add(1, Ordering::Relaxed);
        }
        shed
    }

    /// Sheds every connection still waiting for its request (shutdown: only admitted events
    /// are worth waiting for).
    pub fn shed_waiting(&self) {
        for c in self.lock().values() {
            if !c.force_shed(IDLE) {
                c.force_shed(READING);
            }
        }
    }

    fn shed_oldest(open: &BTreeMap<u64, Arc<Conn>>, now: Instant) -> bool {
        open.values().any(|c| c.try_shed(IDLE, now))
            || open.values().any(|c| c.try_shed(READING, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that moves one grace period per admission, so every earlier connection may be
    /// shed by the time the next one arrives.
    struct Clock(Instant);
    impl Clock {
        fn admit(&mut self, conns: &Arc<Conns>, cap: usize) -> Option<Registered> {
            self.0 += SHED_GRACE;
            conns.admit_at(cap, self.0)
        }

        fn shed_one(&mut self, conns: &Conns) -> bool {
            self.0 += SHED_GRACE;
            conns.shed_one_at(self.0)
        }
    }

    #[test]
    fn new_connections_are_not_shed_before_the_grace_period() {
        let conns = Arc::new(Conns::default());
        let now = Instant::now();
        let young = conns.admit_at(1, now).unwrap();
        let next = conns.admit_at(1, now + SHED_GRACE / 2).unwrap();
        assert!(next.conn.overflow, "the young one was kept");
        assert!(young.conn.serving());
    }

    #[test]
    fn sheds_idle_before_reading_and_never_serving() {
        let conns = Arc::new(Conns::default());
        let mut clock = Clock(Instant::now());
        let a = clock.admit(&conns, 3).unwrap();
        let b = clock.admit(&conns, 3).unwrap();
        let c = clock.admit(&conns, 3).unwrap();
        a.conn.reading();
        assert!(b.conn.serving());
        // At the cap: the oldest idle one (c) goes, not the older reading one (a).
        let d = clock.admit(&conns, 3).unwrap();
        assert!(!c.conn.serving());
        assert!(a.conn.serving() && b.conn.serving());
        // Everything live is being served or idle: d (idle) goes next.
        let e = clock.admit(&conns, 3).unwrap();
        assert!(!d.conn.serving());
        assert!(e.conn.serving());
        // All three live connections are being served: the next ones may only carry control
        // requests, and past the control lane nobody gets in.
        assert!(!e.conn.overflow);
        let lane: Vec<_> = (0..CONTROL_LANE)
            .map(|_| {
                let r = clock.admit(&conns, 3).unwrap();
                assert!(r.conn.overflow);
                assert!(r.conn.serving());
                r
            })
            .collect();
        assert!(clock.admit(&conns, 3).is_none());
        assert_eq!(conns.shed_total.load(Ordering::Relaxed), 2);
        drop((a, b, c, d, lane));
        assert_eq!(conns.len(), 1);
    }

    #[test]
    fn the_control_lane_is_never_shed_for_events() {
        let conns = Arc::new(Conns::default());
        let mut clock = Clock(Instant::now());
        let a = clock.admit(&conns, 1).unwrap();
        assert!(a.conn.serving());
        let ctl = clock.admit(&conns, 1).unwrap();
        assert!(ctl.conn.overflow);
        // An idle control-lane connection is still the oldest waiting one: it can be shed.
        assert!(clock.shed_one(&conns));
        assert!(!ctl.conn.serving());
    }

    #[test]
    fn out_of_descriptors_sheds_the_oldest_waiting_one() {
        let conns = Arc::new(Conns::default());
        let mut clock = Clock(Instant::now());
        let a = clock.admit(&conns, 9).unwrap();
        let b = clock.admit(&conns, 9).unwrap();
        assert!(a.conn.serving());
        assert!(clock.shed_one(&conns));
        assert!(!b.conn.serving());
        assert!(!clock.shed_one(&conns));
    }

    #[test]
    fn shutdown_sheds_only_waiting_connections() {
        let conns = Arc::new(Conns::default());
        let mut clock = Clock(Instant::now());
        let (a, b, c) = (
            clock.admit(&conns, 9).unwrap(),
            clock.admit(&conns, 9).unwrap(),
            clock.admit(&conns, 9).unwrap(),
        );
        b.conn.reading();
        assert!(c.conn.serving());
        conns.shed_waiting();
        assert!(!a.conn.serving() && !b.conn.serving() && c.conn.serving());
    }
}
