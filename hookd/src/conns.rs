//! The open client connections, oldest first, so the host can shed the ones that are only
//! holding a slot when a new client arrives at the cap.
//!
//! Each connection carries one exchange: it waits for its request (idle, then reading), then is
//! served. Only connections still waiting for their request are ever shed, the idle ones
//! (nothing received) before the ones part-way through a frame, oldest first. A connection being
//! served is never shed: its event may already be running.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

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
    fn try_shed(&self, from: u8) -> bool {
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
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Registers a new connection. At `cap`, the oldest connection still waiting for its request
    /// is shed to make room; `None` when every open connection is being served.
    pub fn admit(self: &Arc<Self>, cap: usize) -> Option<Registered> {
        let mut open = self.lock();
        // Shed connections leave the map when their task ends, which is soon but not yet.
        let live = open
            .values()
            .filter(|c| c.phase.load(Ordering::SeqCst) != SHED)
            .count();
        if live >= cap && !Self::shed_oldest(&open) {
            return None;
        }
        if live >= cap {
            self.shed_total.fetch_add(1, Ordering::Relaxed);
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new(Conn {
            id,
            phase: AtomicU8::new(IDLE),
            shed: Notify::new(),
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
        let shed = Self::shed_oldest(&self.lock());
        if shed {
            self.shed_total.fetch_add(1, Ordering::Relaxed);
        }
        shed
    }

    /// Sheds every connection still waiting for its request (shutdown: only admitted events
    /// are worth waiting for).
    pub fn shed_waiting(&self) {
        for c in self.lock().values() {
            if !c.try_shed(IDLE) {
                c.try_shed(READING);
            }
        }
    }

    fn shed_oldest(open: &BTreeMap<u64, Arc<Conn>>) -> bool {
        open.values().any(|c| c.try_shed(IDLE)) || open.values().any(|c| c.try_shed(READING))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheds_idle_before_reading_and_never_serving() {
        let conns = Arc::new(Conns::default());
        let a = conns.admit(3).unwrap();
        let b = conns.admit(3).unwrap();
        let c = conns.admit(3).unwrap();
        a.conn.reading();
        assert!(b.conn.serving());
        // At the cap: the oldest idle one (c) goes, not the older reading one (a).
        let d = conns.admit(3).unwrap();
        assert!(!c.conn.serving());
        assert!(a.conn.serving() && b.conn.serving());
        // Everything live is being served or idle: d (idle) goes next.
        let e = conns.admit(3).unwrap();
        assert!(!d.conn.serving());
        assert!(e.conn.serving());
        // All three live connections are being served: nobody else gets in.
        assert!(conns.admit(3).is_none());
        assert_eq!(conns.shed_total.load(Ordering::Relaxed), 2);
        drop((a, b, c, d));
        assert_eq!(conns.len(), 1);
    }

    #[test]
    fn out_of_descriptors_sheds_the_oldest_waiting_one() {
        let conns = Arc::new(Conns::default());
        let a = conns.admit(9).unwrap();
        let b = conns.admit(9).unwrap();
        assert!(a.conn.serving());
        assert!(conns.shed_one());
        assert!(!b.conn.serving());
        assert!(!conns.shed_one());
    }

    #[test]
    fn shutdown_sheds_only_waiting_connections() {
        let conns = Arc::new(Conns::default());
        let (a, b, c) = (
            conns.admit(9).unwrap(),
            conns.admit(9).unwrap(),
            conns.admit(9).unwrap(),
        );
        b.conn.reading();
        assert!(c.conn.serving());
        conns.shed_waiting();
        assert!(!a.conn.serving() && !b.conn.serving() && c.conn.serving());
    }
}
