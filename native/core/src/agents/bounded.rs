//! One hook call from the agent's bytes to its reply, within a deadline: what `chokepoint hook` runs
//! alone and what the live engine runs for it, so that the two fail the same way.
//!
//! - Input that cannot be read is answered in the event's format when the event is known (a gate is
//!   denied), else with exit 2, which blocks wherever an agent can block.
//! - The judging runs on its own thread: a panic there, or a judgment still running at the deadline,
//!   is answered as a failure (a gate denied, saying what to do), never by letting the call through.

use std::sync::mpsc;
use std::time::Duration;

use crate::agents::input::{self, Call};
use crate::agents::reply::{self, Reply};
use crate::model::external_events::{self, Agent};

/// Reads the agent's hook input into a [`Call`], or the reply that refuses it.
pub fn read(agent: Agent, bytes: &[u8], event: Option<&str>) -> Result<Call, Reply> {
    input::parse(agent, bytes, event).map_err(|e| {
        // Answered as the agent whose input this is: VS Code's agent runs the `--agent copilot`
        // hooks of the file it shares with Copilot CLI, and blocks only on a deny in its own format.
        let writer = input::agent_of_bytes(agent, bytes);
        let reason = format!(
            "Chokepoint could not read this {} hook input ({e}); check that the hook is `chokepoint hook --agent {}`",
            writer.unwrap_or(agent).as_str(),
            agent.id()
        );
        let vscode_event = || {
            let input = serde_json::from_slice::<serde_json::Value>(bytes).ok()?;
            input::event_name(Agent::VsCode, &input, event)
        };
        match (writer, event) {
            (Some(Agent::VsCode), _) => match vscode_event() {
                Some(name) => reply::failure(&Call::bare(Agent::VsCode, &name), &reason),
                None => Reply::block(&reason),
            },
            // The command line says which event: answered in its format (a gate is denied).
            (Some(writer), Some(event)) => reply::failure(&Call::bare(writer, event), &reason),
            // Not even a JSON object, on the file VS Code's agent and Copilot CLI share: a deny that
            // each of them reads as one.
            (None, Some(event)) => reply::failure_to_either(
                &Call::bare(Agent::Copilot, event),
                &Call::bare(Agent::VsCode, external_events::vscode_event_of_key(event).unwrap_or(event)),
                &reason,
            ),
            // We cannot tell which event this is: exit 2 blocks wherever blocking is possible.
            (_, None) => Reply::block(&reason),
        }
    })
}

/// Runs `judge` on a thread of its own and waits at most `deadline` for its reply; a panic or the
/// deadline is answered with [`reply::failure`] for `call`. A judge still running at the deadline is
/// left to finish on its own: its answer no longer counts.
pub fn within(call: &Call, deadline: Duration, judge: impl FnOnce() -> Reply + Send + 'static) -> Reply {
    let (send, receive) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("chokepoint-hook".into()).spawn(move || {
        // A panic is caught here and answered below: the channel closes without a reply.
        if let Ok(reply) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(judge)) {
            let _ = send.send(reply);
        }
    });
    if let Err(e) = spawned {
        return reply::failure(call, &format!("Chokepoint could not start judging: {e}"));
    }
    awaited(call, deadline, &receive)
}

/// The reply a judging started elsewhere sends on `receive`, waited for at most `deadline`; the
/// deadline, or a judging that ended without replying (it panicked), is answered with
/// [`reply::failure`] for `call`.
pub fn awaited(call: &Call, deadline: Duration, receive: &mpsc::Receiver<Reply>) -> Reply {
    match receive.recv_timeout(deadline) {
        Ok(reply) => reply,
        Err(mpsc::RecvTimeoutError::Timeout) => reply::failure(
            call,
            &format!(
                "Chokepoint did not decide within {} s (a hook of .orchestration/hooks.yaml may be slow); raise `--deadline` together with the agent's hook timeout, or make the hook faster",
                deadline.as_secs_f64().round()
            ),
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => reply::failure(
            call,
            "Chokepoint's hook crashed while judging this call (the message is above); please report it with the hook input",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Call {
        read(
            Agent::ClaudeCode,
            br#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a","content":""}}"#,
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_panic_and_a_deadline_deny_a_gate() {
        let call = gate();
        let panicked = within(&call, Duration::from_secs(5), || panic!("judging failed"));
        assert!(panicked.blocks(Agent::ClaudeCode) && panicked.stdout.contains("crashed"), "{panicked:?}");
        let late = within(&call, Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2));
            Reply::default()
        });
        assert!(late.blocks(Agent::ClaudeCode) && late.stdout.contains("did not decide"), "{late:?}");
        assert_eq!(within(&call, Duration::from_secs(5), Reply::default), Reply::default());
    }

    #[test]
    fn unreadable_input_blocks() {
        let refused = read(Agent::ClaudeCode, b"not json", None).unwrap_err();
        assert_eq!(refused.exit, 2);
        let refused = read(Agent::Copilot, b"not json", Some("preToolUse")).unwrap_err();
        assert!(refused.blocks(Agent::Copilot), "{refused:?}");
    }

    #[test]
    fn unreadable_input_on_the_shared_file_blocks_whichever_agent_sent_it() {
        // VS Code's agent's gate without its tool input, through the `--agent copilot` entry: denied
        // in VS Code's format, the only one it reads.
        let vscode = br#"{"hook_event_name":"PreToolUse","session_id":"v","tool_name":"create_file"}"#;
        for id in [Agent::Copilot, Agent::VsCode] {
            let refused = read(id, vscode, Some("preToolUse")).unwrap_err();
            assert!(refused.blocks(Agent::VsCode), "{refused:?}");
            assert!(refused.stdout.contains("VS Code"), "{refused:?}");
        }
        // Not even an object: a deny for both.
        for garbage in [&b"not json"[..], b"[1]", b""] {
            let refused = read(Agent::Copilot, garbage, Some("preToolUse")).unwrap_err();
            assert!(refused.blocks(Agent::VsCode) && refused.blocks(Agent::Copilot), "{refused:?}");
        }
        // Neither a gate: nothing blocks on our account.
        let refused = read(Agent::Copilot, b"not json", Some("sessionStart")).unwrap_err();
        assert!(!refused.blocks(Agent::VsCode) && !refused.blocks(Agent::Copilot), "{refused:?}");
    }
}
