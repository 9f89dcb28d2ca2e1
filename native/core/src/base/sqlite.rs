//! How every SQLite connection of the engine waits for a lock another process holds: the leases and
//! the ledger's head share `state.db`, and wait for it the same way.

use rusqlite::ErrorCode;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

/// How long one statement waits for another connection's lock ([`busy_wait`]) before answering busy.
/// Writes here take well under a millisecond, so a wait this long means a stuck or very slow writer.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(3);

/// The busy timeout: SQLite calls this (with 0, 1, 2, … for one wait) while another connection holds
/// the lock it needs; `true` means "try again", `false` gives up with `SQLITE_BUSY` after
/// [`BUSY_TIMEOUT`].
///
/// It replaces `sqlite3_busy_timeout`'s own schedule, which sleeps 1, 2, 5, 10, … then 100 ms at a
/// time: a write here holds the lock for tens of microseconds, so a waiter sleeping that long misses
/// many free moments and, with four processes taking leases in a loop, was measured waiting up to
/// half a second while the others kept winning. Short sleeps (50 µs doubling to 1.6 ms), jittered so
/// waiters do not wake in step, keep the wait close to the actual contention. The ledger's head, in the
/// same database, waits the same way.
pub(crate) fn busy_wait() -> impl FnMut(i32) -> bool + Send + 'static {
    let jitter = RandomState::new();
    let mut draws = 0u64;
    let mut waiting_since = Instant::now();
    move |count| {
        if count == 0 {
            waiting_since = Instant::now();
        }
        let waited = waiting_since.elapsed();
        if waited >= BUSY_TIMEOUT {
            return false;
        }
        let ceiling = 50u64 << count.clamp(0, 5);
        draws += 1;
        let micros = ceiling / 2 + jitter.hash_one(draws) % (ceiling / 2 + 1);
        std::thread::sleep(Duration::from_micros(micros).min(BUSY_TIMEOUT - waited));
        true
    }
}

pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}
