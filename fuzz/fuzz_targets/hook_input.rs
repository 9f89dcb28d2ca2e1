//! Fuzzes what `chokepoint hook` does with an agent's hook input before and instead of judging it:
//! whatever the bytes, the answer never lets a gate through by accident. The first byte picks the
//! agent and whether the event comes from the command line (Copilot CLI's way); the rest is stdin.
//!
//! Checked for every input: input that cannot be read is answered exit 2 with a reason (or, when
//! the command line names the event, that event's blocking answer); input that is read as a gate is
//! denied in its agent's blocking form when judging fails (a broken configuration, a deadline, a
//! panic all answer this way), and its deny and ask are never an allow; every answer is exit 0 or 2
//! with one JSON object or nothing on stdout; nothing panics.
//!
//! Run it with `npm run fuzz [-- SECONDS]`, or `cargo fuzz run hook_input`.
#![no_main]

use chokepoint_core::agents::bounded;
use chokepoint_core::agents::input::{self, Call};
use chokepoint_core::agents::reply::{self, Outcome, Reply, Verdict};
use chokepoint_core::model::external_events::Agent;
use libfuzzer_sys::fuzz_target;

const EVENTS: [&str; 4] = ["preToolUse", "postToolUse", "sessionStart", "agentStop"];

fn well_formed(reply: &Reply, what: &str) {
    assert!(reply.exit == 0 || reply.exit == 2, "{what}: exit {}", reply.exit);
    assert!(
        reply.stdout.is_empty() || serde_json::from_str::<serde_json::Value>(&reply.stdout).is_ok_and(|v| v.is_object()),
        "{what}: stdout is not one JSON object: {}",
        reply.stdout
    );
    if reply.exit == 2 {
        assert!(!reply.stderr.trim().is_empty(), "{what}: exit 2 without a reason (Codex lets that through)");
    }
}

fn check(call: &Call) {
    let what = format!("{} {}", call.agent.as_str(), call.event);
    let failed = reply::failure(call, "the engine failed");
    well_formed(&failed, &what);
    if call.is_gate() {
        assert!(failed.blocks(call.agent), "{what}: a failure let a gate through: {failed:?}");
        let deny = reply::render(call, &Verdict::of(Outcome::Deny("no".into())));
        well_formed(&deny, &what);
        assert!(deny.blocks(call.agent), "{what}: a deny did not block: {deny:?}");
    } else {
        assert!(!failed.blocks(call.agent), "{what}: a failure blocked an event that is not a gate: {failed:?}");
    }
    for outcome in [Outcome::Pass, Outcome::Ask("a person decides".into()), Outcome::Rewrite(serde_json::json!({ "command": "true" }))] {
        let reply = reply::render(call, &Verdict { context: vec!["context".into()], ..Verdict::of(outcome) });
        well_formed(&reply, &what);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stdin)) = data.split_first() else { return };
    let agent = Agent::ALL[usize::from(selector) % Agent::ALL.len()];
    let event = (selector & 0x80 != 0).then(|| EVENTS[usize::from(selector >> 4) % EVENTS.len()]);
    match input::parse(agent, stdin, event) {
        Ok(call) => check(&call),
        Err(e) => {
            assert!(!e.message().is_empty());
            // What the hook answers (`bounded::read`): the event's blocking form when the command
            // line (or VS Code's input) names it, else exit 2; in the form of the agent the input
            // shows, or of both VS Code's agent and Copilot CLI when their shared file's input
            // shows neither.
            let reply = bounded::read(agent, stdin, event).expect_err("input that does not parse is refused");
            well_formed(&reply, "unreadable");
            let readers = match input::agent_of_bytes(agent, stdin) {
                Some(reader) => vec![reader],
                None => vec![Agent::Copilot, Agent::VsCode],
            };
            let value = serde_json::from_slice::<serde_json::Value>(stdin).ok();
            for reader in readers {
                let name = value.as_ref().and_then(|v| input::event_name(reader, v, event)).or(event.map(str::to_owned));
                if name.is_none_or(|name| Call::bare(reader, &name).is_gate()) {
                    assert!(reply.blocks(reader), "{}: unreadable input let a gate through: {reply:?}", reader.as_str());
                }
            }
        }
    }
});
