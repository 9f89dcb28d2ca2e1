//! The thread that hears a team's Pendings: one per registry sharing through a database, on a
//! connection of its own waiting on `LISTEN` (`TeamDb::connect_listener`), so nothing polls.
//!
//! On `opened` of another machine's Pending it shows that Pending here (a live engine only); on
//! `decided` it settles this engine's own Pending with the decider's action, or removes another
//! machine's card. Notifications sent while the connection was away are lost for this listener, so
//! every connection starts by reading the table again (`catch_up`): the open rows, and the rows of
//! every Pending shared here. No decision is missed for good; at worst it arrives when the
//! connection is back.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::team::{CHANNEL, Notice, NoticeEvent, TeamPendings, TeamRow, left_ms, open_rows, select_row};

/// What the listener needs of a registry (`broker.rs`'s, which starts it): kept here so the two
/// files do not import each other.
pub(super) trait Registry: Send + Sync + 'static {
    /// Whether the listener of `team` should go on: the registry lives and still shares through it.
    fn still_listening(&self, team: &Arc<TeamPendings>) -> bool;
    /// Whether other machines' Pendings are shown (a live engine).
    fn shows_others(&self) -> bool;
    /// Why the listener has no connection (`None`: it has one again).
    fn set_team_down(&self, why: Option<String>);
    /// The open Pendings the registry published, and the other machines' it shows.
    fn shared_open(&self) -> (Vec<String>, Vec<String>);
    /// Shows another machine's open Pending `row` until it is decided or `left` passes.
    fn mirror(self: &Arc<Self>, team: &Arc<TeamPendings>, row: &TeamRow, left: Duration);
    /// A decision found in the database for the Pending of `row`, applied.
    fn apply_row(&self, row: &TeamRow);
}

/// How long one wait for a notification lasts before the thread checks it is still wanted.
const TICK: Duration = Duration::from_millis(250);
/// The longest pause between two attempts to connect.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Runs until the registry is dropped or stops sharing through `team`.
pub(super) fn run<R: Registry>(registry: &Weak<R>, team: &Arc<TeamPendings>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(inner) = registry.upgrade() else { return };
        if !inner.still_listening(team) {
            return;
        }
        let result = session(registry, team);
        let Some(inner) = registry.upgrade() else { return };
        match result {
            // The registry went or stopped sharing.
            Ok(()) => return,
            Err(why) => {
                inner.set_team_down(Some(why));
                drop(inner);
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// One connection: listen, catch up, then apply what is heard until the connection breaks (`Err`,
/// why) or the registry no longer wants it (`Ok`).
fn session<R: Registry>(registry: &Weak<R>, team: &Arc<TeamPendings>) -> Result<(), String> {
    team.ensure_schema().map_err(|e| e.to_string())?;
    let mut client = team.db().connect_listener().map_err(|e| e.to_string())?;
    let describe = |e: postgres::Error| format!("the team's coordination database `{}` cannot be reached ({e})", team.db().shown());
    client.batch_execute(&format!("LISTEN {CHANNEL}")).map_err(describe)?;
    {
        let Some(inner) = registry.upgrade() else { return Ok(()) };
        inner.set_team_down(None);
        catch_up(&inner, team, &mut client).map_err(describe)?;
    }
    loop {
        let notice = {
            let mut notifications = client.notifications();
            let mut waiting = notifications.timeout_iter(TICK);
            postgres::fallible_iterator::FallibleIterator::next(&mut waiting).map_err(describe)?
        };
        let Some(inner) = registry.upgrade() else { return Ok(()) };
        if !inner.still_listening(team) {
            return Ok(());
        }
        if client.is_closed() {
            return Err(format!("the team's coordination database `{}` closed the connection", team.db().shown()));
        }
        let Some(notice) = notice.and_then(|n| Notice::parse(n.payload())) else { continue };
        if notice.namespace != team.namespace() {
            continue;
        }
        heard(&inner, team, &mut client, &notice).map_err(describe)?;
    }
}

/// What a notification says, applied: the row is read again (the payload names it only).
fn heard<R: Registry>(
    inner: &Arc<R>,
    team: &Arc<TeamPendings>,
    client: &mut postgres::Client,
    notice: &Notice,
) -> Result<(), postgres::Error> {
    match notice.event {
        // Our own Pendings are in the registry already: `mirror` skips them.
        NoticeEvent::Opened if inner.shows_others() => {
            if let Some(row) = select_row(client, team.namespace(), &notice.id)?
                && row.decision.is_none()
            {
                let left = left_ms(client, row.deadline_ms)?;
                if left > 0 {
                    inner.mirror(team, &row, Duration::from_millis(left.unsigned_abs()));
                }
            }
        }
        NoticeEvent::Opened => {}
        NoticeEvent::Decided => {
            if let Some(row) = select_row(client, team.namespace(), &notice.id)? {
                inner.apply_row(&row);
            }
        }
    }
    Ok(())
}

/// The table read again after a (re)connection: decisions of this engine's shared Pendings and of
/// the cards it shows, and (a live engine) the other machines' open Pendings.
fn catch_up<R: Registry>(inner: &Arc<R>, team: &Arc<TeamPendings>, client: &mut postgres::Client) -> Result<(), postgres::Error> {
    let (published, remote) = inner.shared_open();
    for id in published.iter().chain(&remote) {
        if let Some(row) = select_row(client, team.namespace(), id)? {
            inner.apply_row(&row);
        }
    }
    if inner.shows_others() {
        for row in open_rows(client, team.namespace())? {
            let left = left_ms(client, row.deadline_ms)?;
            if left > 0 {
                inner.mirror(team, &row, Duration::from_millis(left.unsigned_abs()));
            }
        }
    }
    Ok(())
}
