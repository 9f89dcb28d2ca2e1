//! One request and one answer per connection, each a 4-byte big-endian length and that many bytes of
//! JSON, tagged by `kind`. A hook's request carries its input as the agent sent it: the server reads
//! it exactly as `chokepoint hook` would, so the two cannot judge the same call differently. The
//! other requests are the engine's Pendings, for `chokepoint approvals` (list, read, decide): one
//! protocol, one server, one client, with the same checks of who asks and how much. And one more:
//! a hook that judged alone in another worktree of the repository relays its ask (`ask`), to be
//! shown to a person here and answered with its settlement (`serve::relay`).

use std::io::{self, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agents::reply::Reply;
use crate::approvals::Settlement;

/// The most a request may hold: the hook's own limit on its input (a write's content included), and
/// a little for the fields around it.
pub const MAX_REQUEST: u32 = 64 * 1024 * 1024 + 64 * 1024;

/// The most an answer may hold (a rewritten command, the rules at session start, the open Pendings).
pub const MAX_ANSWER: u32 = 16 * 1024 * 1024;

/// What one connection asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// Judge a hook call.
    Hook(HookRequest),
    /// The open Pendings, oldest first.
    Pendings,
    /// One Pending, open or decided a short while ago.
    Pending { id: String },
    /// Decide a Pending: `decision` as `apply_decision` takes it (`{ "action": …, …its arguments }`).
    /// `by` is the client's name for itself; the server records the decider it sees instead (the
    /// peer's user, pid and terminal, from the kernel) and refuses an agent's process
    /// (`serve::deciders`).
    Decide { id: String, decision: Value, by: String },
    /// Open a Pending about a tool call that a hook of another worktree judged alone and that its
    /// chain asks about, wait for its decision, and answer with its settlement (`Answer::Settled`).
    Ask(AskRequest),
}

/// A tool call's ask, relayed by a hook that judged it alone in another worktree of the repository:
/// what `Engine::open_agent_ask` takes, and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRequest {
    /// The agent's id (`claude`, `codex`, …).
    pub agent: String,
    pub tool: Option<String>,
    /// The tool input as the chain left it (a hook's rewrite included).
    pub input: Value,
    /// The workspace paths the call writes, as the asking worktree's gatekeeper resolves them.
    pub paths: Vec<String>,
    /// The hooks that asked and why, in chain order.
    pub asked: Vec<crate::model::decision::Asked>,
    /// The agent's session id, as the hook read it.
    pub session_id: Option<String>,
    /// The asking worktree's name and branch: the Pending's subject names them.
    pub worktree: String,
    pub branch: Option<String>,
    /// The asking workspace's root, which `paths` are relative to (a write's diff reads the file there).
    pub workspace_root: String,
    /// Milliseconds the hook still waits: a person has that, less a margin, to decide.
    pub deadline_ms: u64,
}

/// A relayed ask's Pending, decided or timed out: what `Engine::settle` returned for it, without the
/// Pending itself (the asker applies the settlement; the Pending stays in the engine that opened it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settled {
    /// The Pending's id in the engine that opened it.
    pub id: String,
    #[serde(flatten)]
    pub settlement: Settlement,
    /// How long the Pending waited for a decision, in milliseconds.
    pub waited_ms: u64,
}

/// A hook call to judge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRequest {
    /// The agent's id (`claude`, `codex`, …).
    pub agent: String,
    /// The event, for an agent that does not name it in its input (`--event`).
    pub event: Option<String>,
    /// The hook's input, as read from its stdin.
    pub input: String,
    /// `CHOKEPOINT_HOOK_DEPTH` of the hook's process.
    pub depth: u32,
    /// The `chokepoint` program the hook runs as, for the commands a rewrite and a next step name.
    pub program: Option<PathBuf>,
    /// Milliseconds the hook still waits for its answer (its `--deadline`, less what it spent before
    /// sending): a person deciding an ask has that, less a margin, before the fallback answers.
    /// Absent (an older hook): the fallback answers an ask at once.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// The server's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// What the hook prints and how it exits.
    Reply(Reply),
    /// The request was not judged (malformed, too large, too slow): the hook judges it alone. For a
    /// request about Pendings: why it was refused (an unknown id, an action the kind does not allow).
    Refused { reason: String },
    /// The open Pendings (each as `PendingDict` serialises).
    Pendings { pendings: Vec<Value> },
    /// One Pending.
    Pending { pending: Value },
    /// A decision taken: the Pending as it is now, and the line that says what happened.
    Decided { pending: Value, text: String },
    /// A relayed ask's settlement (boxed: the largest answer by far, and the rarest).
    Settled(Box<Settled>),
}

/// Writes one frame.
pub fn write_frame(to: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a frame over 4 GiB"))?;
    to.write_all(&len.to_be_bytes())?;
    to.write_all(body)?;
    to.flush()
}

/// Reads one frame of at most `max` bytes; a longer one is refused before any of its body is read.
pub fn read_frame(from: &mut impl Read, max: u32) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len);
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a frame of {len} bytes, over the limit of {max}")));
    }
    let mut body = vec![0u8; len as usize];
    from.read_exact(&mut body)?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_an_oversized_one_is_refused_unread() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"{\"a\":1}").unwrap();
        assert_eq!(read_frame(&mut wire.as_slice(), 100).unwrap(), b"{\"a\":1}");
        let mut huge = (1000u32).to_be_bytes().to_vec();
        huge.extend_from_slice(b"xx");
        let refused = read_frame(&mut huge.as_slice(), 100).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidData);
        let mut short = (10u32).to_be_bytes().to_vec();
        short.extend_from_slice(b"xx");
        assert_eq!(read_frame(&mut short.as_slice(), 100).unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_relayed_ask_and_its_settlement_are_tagged_and_round_trip() {
        let ask = Request::Ask(AskRequest {
            agent: "claude".into(),
            tool: Some("Write".into()),
            input: serde_json::json!({ "file_path": "/w/a.ts" }),
            paths: vec!["a.ts".into()],
            asked: vec![crate::model::decision::Asked { hook: "confirm".into(), reason: "a person confirms".into() }],
            session_id: Some("s2".into()),
            worktree: "wt2".into(),
            branch: Some("feature-x".into()),
            workspace_root: "/w".into(),
            deadline_ms: 24_000,
        });
        let wire = serde_json::to_value(&ask).unwrap();
        assert_eq!((&wire["kind"], &wire["worktree"]), (&serde_json::json!("ask"), &serde_json::json!("wt2")));
        assert_eq!(serde_json::from_value::<Request>(wire).unwrap(), ask);
        let settlement = Settlement {
            next: crate::approvals::Next::RunModified,
            by: "cli:me".into(),
            reason: None,
            note: Some("y".into()),
            input: Some(serde_json::json!({ "file_path": "/w/a.ts" })),
            message: "modified".into(),
            pending: None,
        };
        let settled = Answer::Settled(Box::new(Settled { id: "pnd-1".into(), settlement, waited_ms: 5 }));
        let wire = serde_json::to_value(&settled).unwrap();
        assert_eq!((&wire["kind"], &wire["next"]), (&serde_json::json!("settled"), &serde_json::json!("run_modified")));
        assert_eq!(serde_json::from_value::<Answer>(wire).unwrap(), settled);
    }
}
