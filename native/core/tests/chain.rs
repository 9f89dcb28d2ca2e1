//! The chain's order and combining rules, one `check` per rule. Hooks here are native test hooks that
//! answer from a script and record what they saw.

use chokepoint_core::hooks::command::CommandSpec;
use chokepoint_core::{
    Answer, Chain, ChainHook, Decision, Denial, Evaluation, Event, EventKind, FailureMode, HookAnswer, HookFailure, HookImpl, Matcher,
    NativeHook, Priority,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

#[derive(Debug)]
struct Scripted {
    name: String,
    answer: Result<HookAnswer, HookFailure>,
    seen: Seen,
}

impl NativeHook for Scripted {
    fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure> {
        self.seen.lock().unwrap().push((self.name.clone(), event.subject.clone()));
        self.answer.clone()
    }
}

#[derive(Debug)]
struct Panics;
impl NativeHook for Panics {
    fn call(&self, _: &Event) -> Result<HookAnswer, HookFailure> {
        panic!("gate bug")
    }
}

/// A hook per (name, priority, answer), registered in the order given.
struct Fixture {
    hooks: Vec<ChainHook>,
    seen: Seen,
}

impl Fixture {
    fn new() -> Self {
        Fixture { hooks: Vec::new(), seen: Seen::default() }
    }

    fn hook(mut self, name: &str, priority: Priority, answer: Result<Answer, HookFailure>) -> Self {
        self.push(name, priority, None, answer.map(HookAnswer::from));
        self
    }

    fn with_mode(mut self, name: &str, priority: Priority, mode: FailureMode, answer: Result<Answer, HookFailure>) -> Self {
        self.push(name, priority, Some(mode), answer.map(HookAnswer::from));
        self
    }

    fn push(&mut self, name: &str, priority: Priority, mode: Option<FailureMode>, answer: Result<HookAnswer, HookFailure>) {
        let hook = Scripted { name: name.into(), answer, seen: self.seen.clone() };
        self.native(name, priority, mode, Matcher::default(), Arc::new(hook));
    }

    fn native(&mut self, name: &str, priority: Priority, mode: Option<FailureMode>, matcher: Matcher, hook: Arc<dyn NativeHook>) {
        let registration = self.hooks.len();
        self.hooks.push(ChainHook {
            name: name.into(),
            priority,
            failure: mode.unwrap_or(FailureMode::default_for(priority)),
            matcher,
            imp: HookImpl::Native(hook),
            registration,
            pipe_output: false,
        });
    }

    fn run(self, event: Event) -> (Evaluation, Vec<(String, Value)>) {
        let evaluation = Chain::new(self.hooks).run_sync(event).unwrap();
        let seen = self.seen.lock().unwrap().clone();
        (evaluation, seen)
    }
}

fn pre_tool(input: Value) -> Event {
    Event::tool(EventKind::PreToolUse, "write_to_file", input)
}

fn ran(e: &Evaluation) -> Vec<String> {
    e.outcomes.iter().map(|o| format!("{}:{}", o.hook, o.kind.as_str())).collect()
}

fn deny(reason: &str) -> Result<Answer, HookFailure> {
    Ok(Answer::Deny(Denial::new(reason)))
}

use Priority::{Critical, High, Low, Normal};
const ALLOW: Result<Answer, HookFailure> = Ok(Answer::Allow);

#[test]
fn runs_by_priority_then_registration_order() {
    let (e, _) = Fixture::new()
        .hook("n1", Normal, ALLOW)
        .hook("c1", Critical, ALLOW)
        .hook("l1", Low, ALLOW)
        .hook("c2", Critical, ALLOW)
        .hook("h1", High, ALLOW)
        .hook("n2", Normal, ALLOW)
        .run(pre_tool(json!({})));
    assert_eq!(ran(&e), ["c1:allow", "c2:allow", "h1:allow", "n1:allow", "n2:allow", "l1:allow"]);
    assert_eq!(e.decision, Decision::Allow);
}

#[test]
fn ties_keep_registration_order() {
    let names = ["z", "a", "m", "b", "y"];
    let mut f = Fixture::new();
    for n in names {
        f = f.hook(n, High, ALLOW);
    }
    let (e, _) = f.run(pre_tool(json!({})));
    assert_eq!(ran(&e), names.map(|n| format!("{n}:allow")));
}

#[test]
fn a_rewrite_is_seen_by_every_later_hook() {
    let (e, seen) = Fixture::new()
        .hook("rewrite", High, Ok(Answer::Modify(json!({ "path": "src/b.js" }))))
        .hook("validate", Normal, ALLOW)
        .run(pre_tool(json!({ "path": "src/a.js" })));
    assert_eq!(seen, [("rewrite".into(), json!({ "path": "src/a.js" })), ("validate".into(), json!({ "path": "src/b.js" }))]);
    assert_eq!(e.decision, Decision::Allow);
    assert_eq!(e.modified, Some(json!({ "path": "src/b.js" })));
}

#[test]
fn two_rewrites_compose_in_order() {
    let (e, _) = Fixture::new()
        .hook("first", High, Ok(Answer::Modify(json!(1))))
        .hook("second", Normal, Ok(Answer::Modify(json!(2))))
        .run(pre_tool(json!(0)));
    assert_eq!(e.modified, Some(json!(2)));
}

#[test]
fn a_borrowed_event_keeps_the_input_as_given_and_the_rewrite_is_in_the_evaluation() {
    // The engine records the input the agent sent (its digest), whatever a hook rewrote it to, so
    // after the chain the event it lent holds that input again.
    let f = Fixture::new().hook("a", Priority::High, Ok(Answer::Modify(json!({ "path": "b" })))).hook(
        "b",
        Priority::Normal,
        Ok(Answer::Modify(json!({ "path": "c" }))),
    );
    let seen = f.seen.clone();
    let chain = Chain::new(f.hooks);
    let mut event = pre_tool(json!({ "path": "a" }));
    let evaluation = chain.judge_sync(&mut event).unwrap();
    assert_eq!(evaluation.modified, Some(json!({ "path": "c" })));
    assert_eq!(event.subject, json!({ "path": "a" }));
    assert_eq!(seen.lock().unwrap()[1].1, json!({ "path": "b" }), "the second hook saw the first rewrite");
    // A deny discards the rewrite, and the input is still as given.
    let denied =
        Chain::new(Fixture::new().hook("a", Priority::High, Ok(Answer::Modify(json!(1)))).hook("b", Priority::Low, deny("no")).hooks);
    let mut event = pre_tool(json!({ "path": "a" }));
    assert_eq!(denied.judge_sync(&mut event).unwrap().modified, None);
    assert_eq!(event.subject, json!({ "path": "a" }));
}

#[test]
fn the_first_deny_ends_the_chain() {
    let (e, seen) = Fixture::new().hook("gate", Critical, deny("outside scope")).hook("after", Normal, ALLOW).run(pre_tool(json!({})));
    assert_eq!(ran(&e), ["gate:deny"]);
    assert!(seen.iter().all(|(n, _)| n != "after"), "a hook after a deny must not run");
    assert_eq!(e.decision, Decision::Deny(Denial::new("outside scope")));
}

#[test]
fn ask_is_kept_and_a_later_deny_still_wins() {
    let (e, _) = Fixture::new()
        .hook("review", High, Ok(Answer::Ask { reason: "big change".into() }))
        .hook("gate", Normal, deny("no"))
        .run(pre_tool(json!({})));
    assert_eq!(ran(&e), ["review:ask", "gate:deny"]);
    assert!(matches!(e.decision, Decision::Deny(_)));
}

#[test]
fn asks_without_a_deny_make_the_decision_ask_with_every_reason() {
    let (e, _) = Fixture::new()
        .hook("a", High, Ok(Answer::Ask { reason: "one".into() }))
        .hook("b", Normal, ALLOW)
        .hook("c", Low, Ok(Answer::Ask { reason: "two".into() }))
        .run(pre_tool(json!({})));
    assert_eq!(e.decision.ask_reasons(), ["a: one", "c: two"]);
    let Decision::Ask { asks } = &e.decision else { panic!("{:?}", e.decision) };
    assert_eq!(asks.iter().map(|a| &*a.hook).collect::<Vec<_>>(), ["a", "c"]);
}

#[test]
fn a_deny_discards_earlier_rewrites() {
    let (e, _) =
        Fixture::new().hook("rewrite", High, Ok(Answer::Modify(json!(1)))).hook("gate", Normal, deny("no")).run(pre_tool(json!(0)));
    assert_eq!(e.modified, None);
}

#[test]
fn a_critical_hook_that_fails_denies_by_default() {
    for failure in
        [HookFailure::Error("db locked".into()), HookFailure::Timeout { after_ms: 30_000 }, HookFailure::BadAnswer("garbage".into())]
    {
        let (e, seen) = Fixture::new().hook("gate", Critical, Err(failure.clone())).hook("after", Normal, ALLOW).run(pre_tool(json!({})));
        assert_eq!(ran(&e), ["gate:failed_closed"]);
        assert_eq!(seen.len(), 1);
        let Decision::Deny(d) = e.decision else { panic!("a broken gate must deny, got {:?}", e.decision) };
        assert_eq!(d.reason, format!("hook `gate` {failure}; it fails closed, so the action is denied"));
    }
}

#[test]
fn a_non_critical_hook_that_fails_is_recorded_and_the_chain_goes_on() {
    let (e, _) = Fixture::new()
        .hook("lint", Normal, Err(HookFailure::Crashed("exit signal 9".into())))
        .hook("after", Low, ALLOW)
        .run(pre_tool(json!({})));
    assert_eq!(ran(&e), ["lint:failed_open", "after:allow"]);
    assert_eq!(e.decision, Decision::Allow);
}

#[test]
fn failure_modes_can_be_set_either_way() {
    let (e, _) =
        Fixture::new().with_mode("gate", Critical, FailureMode::Open, Err(HookFailure::Error("x".into()))).run(pre_tool(json!({})));
    assert_eq!(e.decision, Decision::Allow);
    let (e, _) = Fixture::new().with_mode("lint", Low, FailureMode::Closed, Err(HookFailure::Error("x".into()))).run(pre_tool(json!({})));
    assert!(matches!(e.decision, Decision::Deny(_)));
}

#[test]
fn a_panicking_native_hook_is_a_crash_not_a_crashed_session() {
    let mut f = Fixture::new();
    f.native("gate", Critical, None, Matcher::default(), Arc::new(Panics));
    let (e, _) = f.run(pre_tool(json!({})));
    assert_eq!(ran(&e), ["gate:failed_closed"]);
    let Decision::Deny(d) = e.decision else { panic!() };
    assert!(d.reason.contains("crashed: gate bug"), "{}", d.reason);
}

#[test]
fn modify_where_nothing_can_be_rewritten_is_a_bad_answer() {
    let (e, _) = Fixture::new().hook("odd", Normal, Ok(Answer::Modify(json!(1)))).run(Event::new(EventKind::SessionStart));
    assert_eq!(ran(&e), ["odd:failed_open"]);
    assert_eq!(e.modified, None);
}

#[test]
fn additional_context_is_kept_in_chain_order() {
    let mut f = Fixture::new();
    for (name, p) in [("low", Low), ("high", High)] {
        f.push(name, p, None, Ok(HookAnswer { answer: Answer::Allow, additional_context: Some(format!("from {name}")) }));
    }
    let (e, _) = f.run(pre_tool(json!({})));
    assert_eq!(e.additional_context, ["from high", "from low"]);
}

#[test]
fn tool_patterns_are_anchored_and_paths_are_globs() {
    let m = Matcher::new(Some("write_to_file|apply_diff"), &["src/**".into()]).unwrap();
    let with = |tool: &str, path: &str| Event { paths: vec![path.into()], ..Event::tool(EventKind::PreToolUse, tool, json!({})) };
    assert!(m.matches(&with("write_to_file", "src/a.js")));
    assert!(m.matches(&with("apply_diff", "src/deep/b.ts")));
    assert!(!m.matches(&with("rewrite_to_file", "src/a.js")), "the pattern is anchored");
    assert!(!m.matches(&with("write_to_file_x", "src/a.js")), "the pattern is anchored");
    assert!(!m.matches(&with("write_to_file", "docs/a.md")));
    assert!(!m.matches(&Event::new(EventKind::TurnStart)), "a tool pattern never matches an event without a tool");
    assert!(Matcher::new(Some("(unclosed"), &[]).is_err());
}

#[test]
fn hooks_whose_matcher_fails_are_not_run() {
    let mut f = Fixture::new();
    let seen = f.seen.clone();
    let hook = Arc::new(Scripted { name: "shell-only".into(), answer: deny("no").map(HookAnswer::from), seen });
    f.native("shell-only", Critical, None, Matcher::new(Some("execute_command"), &[]).unwrap(), hook);
    let (e, seen) = f.run(pre_tool(json!({})));
    assert!(e.outcomes.is_empty() && seen.is_empty());
    assert_eq!(e.decision, Decision::Allow);
}

/// A hook that asks the same chain to judge something while it runs.
#[derive(Debug)]
struct Reenters {
    chain: Arc<OnceLock<Chain>>,
    inner: Arc<Mutex<Option<Evaluation>>>,
}
impl NativeHook for Reenters {
    fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure> {
        let inner = self.chain.get().unwrap().run_sync(event.clone()).unwrap();
        *self.inner.lock().unwrap() = Some(inner);
        Ok(Answer::Allow.into())
    }
}

#[test]
fn work_a_hook_triggers_does_not_re_enter_the_chain() {
    let chain = Arc::new(OnceLock::new());
    let inner = Arc::new(Mutex::new(None));
    let mut f = Fixture::new();
    f.native("reenters", High, None, Matcher::default(), Arc::new(Reenters { chain: chain.clone(), inner: inner.clone() }));
    chain.set(Chain::new(f.hooks)).unwrap();
    let outer = chain.get().unwrap().run_sync(pre_tool(json!({}))).unwrap();
    assert!(!outer.reentered);
    assert_eq!(outer.outcomes.len(), 1);
    let inner = inner.lock().unwrap().clone().unwrap();
    assert!(inner.reentered && inner.outcomes.is_empty());
    // The guard is released after the outer run: the next evaluation runs the hooks again.
    assert!(!chain.get().unwrap().run_sync(pre_tool(json!({}))).unwrap().reentered);
}

#[test]
fn the_synchronous_path_refuses_chains_with_process_hooks() {
    let hooks = vec![ChainHook {
        name: "lint".into(),
        priority: Normal,
        failure: FailureMode::Open,
        matcher: Matcher::new(Some("write_to_file"), &[]).unwrap(),
        imp: HookImpl::Command(CommandSpec {
            argv: vec!["npm".into(), "run".into(), "lint".into()],
            shell: false,
            timeout: Duration::from_secs(30),
        }),
        registration: 0,
        pipe_output: false,
    }];
    let chain = Chain::new(hooks);
    let err = chain.run_sync(pre_tool(json!({}))).unwrap_err();
    assert_eq!(err.to_string(), "hook `lint` is a command hook and cannot run on the synchronous path");
    // An event the command hook does not match still runs synchronously.
    assert!(chain.run_sync(Event::tool(EventKind::PreToolUse, "read_file", json!({}))).is_ok());
}

#[test]
fn the_chains_combined_index_agrees_with_each_hooks_own_matcher() {
    // Every combination of a few tool patterns and path globs, against every combination of a few
    // tools and paths: the chain's one-pass index must pick exactly the hooks their matchers pick.
    let tools = [None, Some("write_to_file|apply_diff"), Some("execute_command"), Some("read_.*")];
    let globs: [&[&str]; 4] = [&[], &["src/**"], &["**/.env", "*.md"], &["docs/*.md"]];
    let mut f = Fixture::new();
    for (i, t) in tools.iter().enumerate() {
        for (j, g) in globs.iter().enumerate() {
            let matcher = Matcher::new(*t, &g.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
            let hook = Arc::new(Scripted { name: format!("h{i}{j}"), answer: Ok(Answer::Allow.into()), seen: f.seen.clone() });
            f.native(&format!("h{i}{j}"), Normal, None, matcher, hook);
        }
    }
    let hooks = f.hooks.clone();
    let chain = Chain::new(f.hooks);
    for tool in [None, Some("write_to_file"), Some("apply_diff"), Some("execute_command"), Some("read_file"), Some("rewrite_to_file")] {
        for paths in [vec![], vec!["src/a.js"], vec!["README.md"], vec!["docs/x.md", "a/.env"], vec!["lib/b.rs"]] {
            let mut event = Event::new(EventKind::PreToolUse);
            event.tool = tool.map(Into::into);
            event.paths = paths.iter().map(|p| p.to_string()).collect();
            let by_index: Vec<&str> = chain.matching(&event).iter().map(|h| &*h.name).collect();
            let by_matcher: Vec<&str> = hooks.iter().filter(|h| h.matcher.matches(&event)).map(|h| &*h.name).collect();
            assert_eq!(by_index, by_matcher, "tool {tool:?}, paths {paths:?}");
        }
    }
}
