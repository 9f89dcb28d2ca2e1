//! The shared brain against real processes: `chokepoint init` creates `.orchestration/CLAUDE.md` (the
//! people's) and its generated part `.orchestration/brain.generated.md`; Claude Code's hook processes
//! (judging alone, `--local`) teach it lessons and read both at session start, a person writes in
//! CLAUDE.md meanwhile, no agent may write either, an older generated section is taken out of
//! CLAUDE.md once, and two branches that each worked merge without a conflict in it (real git).

mod common;
use common::git;

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};

const BRAIN: &str = ".orchestration/CLAUDE.md";
const GENERATED: &str = ".orchestration/brain.generated.md";
const BEGIN: &str = "<!-- chokepoint:begin";
const END: &str = "<!-- chokepoint:end -->";

fn program() -> &'static str {
    env!("CARGO_BIN_EXE_chokepoint")
}

/// A workspace without intents (writes go anywhere but the governance files), with a completion
/// gate that fails until `done` exists.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(
        ws.path().join(".orchestration/hooks.yaml"),
        format!(
            "version: 1
hooks:
  BeforeSubmit:
    - name: tests
      priority: critical
      command: {GATE}
      timeout: 10
"
        ),
    )
    .unwrap();
    ws
}

/// The completion gate's command: fails with status 2 until `done` exists, in the platform's shell.
#[cfg(not(windows))]
const GATE: &str = "['sh', '-c', 'test -f done || { echo \"2 tests fail\" >&2; exit 2; }']";
#[cfg(windows)]
const GATE: &str = "['cmd', '/d', '/s', '/c', 'if exist done (exit 0) else (echo 2 tests fail>&2& exit 2)']";
/// How the generated brain names the gate's command.
const GATE_SHOWN: &str = if cfg!(windows) { "runs `cmd /d /s /c if exist done" } else { "runs `sh -c test -f done" };

fn chokepoint(ws: &Path, args: &[&str]) -> Output {
    Command::new(program()).args(args).args(["--workspace", ws.to_str().unwrap()]).output().unwrap()
}

fn init(ws: &Path) -> Output {
    let out = chokepoint(ws, &["init", "--agent", "claude"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// One call of Claude Code's hook, in a process of its own; its stdout as JSON (`Null` when empty).
fn hook(ws: &Path, input: Value) -> Value {
    let out = common::claude_hook(ws, &input);
    let stdout = String::from_utf8(out.stdout).unwrap();
    if stdout.trim().is_empty() { Value::Null } else { serde_json::from_str(&stdout).unwrap() }
}

fn write(ws: &Path, session: &str, path: &str) -> Value {
    hook(
        ws,
        json!({
            "session_id": session, "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": { "file_path": ws.join(path), "content": "x\n" }, "tool_use_id": "t",
        }),
    )
}

fn reason(answer: &Value) -> String {
    answer["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap_or_default().to_owned()
}

/// What people wrote.
fn brain(ws: &Path) -> String {
    fs::read_to_string(ws.join(BRAIN)).unwrap()
}

/// What Chokepoint generated.
fn generated(ws: &Path) -> String {
    fs::read_to_string(ws.join(GENERATED)).unwrap()
}

/// The lessons the generated part lists.
fn lessons(text: &str) -> Vec<String> {
    let section = &text[text.find("### Lessons").expect("a lessons heading")..];
    section.lines().filter(|l| l.starts_with("- ")).map(str::to_owned).collect()
}

/// A person's edit, as an editor saves it: the whole file written again, a line added at its end
/// (in a temporary file renamed over it, as editors that keep a backup do).
fn person_adds(ws: &Path, line: &str) {
    let text = brain(ws);
    save_as_person(ws, &format!("{text}{line}\n\n"));
}

fn save_as_person(ws: &Path, text: &str) {
    let temp = ws.join(".orchestration/.person.tmp");
    fs::write(&temp, text).unwrap();
    fs::rename(temp, ws.join(BRAIN)).unwrap();
}

#[test]
fn init_creates_the_peoples_brain_and_its_generated_part_and_a_second_run_keeps_what_people_wrote() {
    let ws = workspace();
    let ws = ws.path();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("created .orchestration/CLAUDE.md"));
    let text = brain(ws);
    assert!(text.starts_with("# Shared brain\n"), "{text}");
    assert!(!text.contains(BEGIN) && !text.contains("| `gatekeeper` |"), "nothing generated in the people's file: {text}");
    let generated = generated(ws);
    assert!(generated.contains("**BeforeSubmit**") && generated.contains(&format!("| `tests` | critical | {GATE_SHOWN}")), "{generated}");
    assert!(generated.contains("| `gatekeeper` | critical | judges every write"), "{generated}");
    let ignore = fs::read_to_string(ws.join(".orchestration/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "brain.generated.md"), "{ignore}");

    let mine = format!("{}\nOur rule: never touch the vendored code.\n", text.replace("# Shared brain", "# Our brain"));
    fs::write(ws.join(BRAIN), &mine).unwrap();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing changed"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(brain(ws), mine, "what people wrote is theirs, byte for byte");
}

/// Two agents, each refused three times on each of four paths (governance files, so each refusal
/// names its path): four lessons each, taught by separate processes at the same time. With
/// `person`, a person adds a line to CLAUDE.md every few milliseconds meanwhile, saving the whole
/// file as an editor does. Returns the person's lines.
fn two_agents_teach(ws: &Path, person: bool) -> Vec<String> {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let agents: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|agent| {
                s.spawn(move || {
                    for round in 0..3 {
                        for n in 0..4 {
                            let answer = write(ws, &format!("S-{agent}"), &format!(".orchestration/{agent}{n}.txt"));
                            assert!(reason(&answer).contains("governance file"), "{agent}{n} round {round}: {answer}");
                        }
                    }
                })
            })
            .collect();
        // The person's editor holds what they wrote (its buffer), and saves it whole.
        let person = s.spawn(|| {
            let mut lines = Vec::new();
            let mut text = brain(ws);
            while person && !done.load(Ordering::Acquire) {
                let line = format!("Person's note {}.", lines.len());
                text.push_str(&format!("{line}\n\n"));
                save_as_person(ws, &text);
                lines.push(line);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            lines
        });
        // Every agent is joined before any failure is raised: a panicking agent must still stop the
        // person, or the scope would wait for the person's loop forever (it hung under Wine so).
        let joined: Vec<_> = agents.into_iter().map(|agent| agent.join()).collect();
        done.store(true, Ordering::Release);
        let lines = person.join();
        for agent in joined {
            agent.unwrap();
        }
        lines.unwrap()
    })
}

/// Every lesson the two agents taught is in the generated `text`, once.
fn has_every_lesson(text: &str) {
    let lessons = lessons(text);
    assert_eq!(lessons.len(), 8, "{lessons:#?}");
    for agent in ["a", "b"] {
        for n in 0..4 {
            let path = format!("`.orchestration/{agent}{n}.txt`");
            let lesson = lessons.iter().find(|l| l.contains(&path)).unwrap_or_else(|| panic!("a lesson for {path}: {lessons:#?}"));
            assert!(lesson.contains("refused `Write` 3 times") && lesson.contains("(ledger #"), "{lesson}");
        }
    }
}

#[test]
fn two_agents_teaching_lessons_at_once_both_find_theirs_in_the_file() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    two_agents_teach(ws, false);
    // No rewrite after them: each process's own rewrite, serialised, left every lesson in.
    has_every_lesson(&generated(ws));
}

#[test]
#[cfg_attr(
    wine,
    ignore = "under Wine a file another process has open cannot be renamed over (Access denied), as the person's editor does here while the hook processes read the brain; Windows' own file handles (std's) share deletion"
)]
fn two_agents_teach_lessons_while_a_person_edits_the_brain_and_nothing_is_lost() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    let person_lines = two_agents_teach(ws, true);
    assert!(person_lines.len() >= 2, "the person wrote while the agents worked: {}", person_lines.len());
    let text = brain(ws);
    for line in &person_lines {
        assert!(text.contains(line), "the person's `{line}` is kept:\n{text}");
    }
    assert!(!text.contains("### Lessons"), "nothing generated went into the person's file: {text}");
    has_every_lesson(&generated(ws));
}

#[test]
fn a_repeated_denial_makes_one_lesson_linked_to_its_record() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    for _ in 0..5 {
        assert!(reason(&write(ws, "S1", ".orchestration/x.txt")).contains("governance file"));
    }
    let lessons = lessons(&generated(ws));
    assert_eq!(lessons.len(), 1, "{lessons:#?}");
    // Linked to the third denial: the ledger's third record, whose line hash it quotes.
    let ledger = common::ledger_text(ws).unwrap();
    let third = ledger.lines().nth(2).unwrap();
    let next: Value = serde_json::from_str(ledger.lines().nth(3).unwrap()).unwrap();
    let hash = next["prev"].as_str().unwrap();
    assert!(serde_json::from_str::<Value>(third).unwrap()["decision"]["decision"] == "deny");
    assert!(lessons[0].contains(&format!("(ledger #3 `{}`)", &hash[..8])), "{}", lessons[0]);
}

#[test]
fn a_completion_that_failed_then_passed_is_a_lesson() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    let stop = json!({ "session_id": "S1", "cwd": ws, "hook_event_name": "Stop", "stop_hook_active": false });
    let refused = hook(ws, stop.clone());
    assert_eq!(refused["decision"], "block", "{refused}");
    fs::write(ws.join("done"), "").unwrap();
    assert_eq!(hook(ws, stop), Value::Null, "the second round passes");
    let lessons = lessons(&generated(ws));
    assert_eq!(lessons.len(), 1, "{lessons:#?}");
    assert!(lessons[0].contains("`BeforeSubmit` failed on `tests`: 2 tests fail (ledger #1 "), "{}", lessons[0]);
    assert!(lessons[0].contains("What fixed it: a later round") && lessons[0].contains("(ledger #2 "), "{}", lessons[0]);
}

#[test]
fn an_external_agents_session_start_carries_the_brain() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    person_adds(ws, "We deploy on Fridays only.");
    // Claude Code takes no context at PreCompact: the SessionStart (`compact`) after a compaction
    // carries it again.
    for event in ["startup", "compact"] {
        let answer = hook(ws, json!({ "session_id": "S1", "cwd": ws, "hook_event_name": "SessionStart", "source": event }));
        let context = answer["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_else(|| panic!("{event}: {answer}"));
        assert!(context.contains("<shared_brain file=\".orchestration/CLAUDE.md\">"), "{event}: {context}");
        let people = context.find("We deploy on Fridays only.").unwrap_or_else(|| panic!("{event}: what people wrote: {context}"));
        let hooks = context.find("| `tests` | critical |").unwrap_or_else(|| panic!("{event}: the hooks in force: {context}"));
        assert!(people < hooks, "{event}: the people's part first: {context}");
    }
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
#[cfg_attr(
    windows,
    ignore = "needs a contained command run isolated (Linux namespaces over an overlay); Windows runs it observed, its changes compared and reported (doctor says so)"
)]
fn an_agents_write_or_shell_command_on_the_brain_is_refused_by_name() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    let before = brain(ws);
    let answer = write(ws, "S1", BRAIN);
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny", "{answer}");
    assert!(reason(&answer).contains("`.orchestration/CLAUDE.md` is the shared brain, a governance file"), "{answer}");

    let hooks = fs::read_to_string(ws.join(".orchestration/hooks.yaml")).unwrap();
    fs::write(ws.join(".orchestration/hooks.yaml"), format!("{hooks}gatekeeper:\n  landlock: off\n")).unwrap();
    // `--workspace` before `--`: after it, it would be the command's own argument.
    let append = if cfg!(windows) {
        format!("echo agents may push>> \"{}\"", ws.join(BRAIN).display())
    } else {
        format!("echo 'agents may push' >> '{}'", ws.join(BRAIN).display())
    };
    let out = Command::new(program())
        .args(["exec", "--workspace", ws.to_str().unwrap(), "--session", "S1", "--"])
        .args(chokepoint_core::base::shell::script_argv(&append))
        .current_dir(ws)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "something was undone: {err}");
    assert!(err.contains("is the shared brain, a governance file"), "{err}");
    assert_eq!(brain(ws), before, "the command's change was undone");
}

/// A CLAUDE.md an older Chokepoint wrote: the people's text around a generated section.
const OLDER: &str = "# Ours\r\n\nWe deploy on Fridays.\n\n<!-- chokepoint:begin: generated -->\n## Governed by Chokepoint\n- `INT-001` held by `claude:S-old`\n<!-- chokepoint:end -->\nA note below it, no newline at the end";

#[test]
fn an_older_generated_section_is_taken_out_once_keeping_every_byte_of_the_peoples_text() {
    let people = "# Ours\r\n\nWe deploy on Fridays.\n\nA note below it, no newline at the end";
    // By `chokepoint init`.
    let ws = workspace();
    let ws = ws.path();
    fs::write(ws.join(BRAIN), OLDER).unwrap();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("updated .orchestration/CLAUDE.md"), "{out:?}");
    assert_eq!(brain(ws), people);
    assert!(generated(ws).contains("### Lessons"));
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing changed"), "once: {out:?}");
    assert_eq!(brain(ws), people);

    // By the engine's next rewrite (a session's start), in a workspace nobody ran init in again:
    // its `.gitignore`, written by an older Chokepoint, gets the generated file's line.
    let ws = workspace();
    let ws = ws.path();
    fs::write(ws.join(BRAIN), OLDER).unwrap();
    let older_ignore = "# Written by Chokepoint: runtime state, not configuration.\nstate.db\nstate.db-*\nmine/\n";
    fs::write(ws.join(".orchestration/.gitignore"), older_ignore).unwrap();
    let answer = hook(ws, json!({ "session_id": "S1", "cwd": ws, "hook_event_name": "SessionStart", "source": "startup" }));
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert_eq!(context.matches("## Governed by Chokepoint").count(), 1, "shown once: {context}");
    assert!(!context.contains("claude:S-old"), "the old section's leases are gone: {context}");
    assert_eq!(brain(ws), people);
    let ignore = fs::read_to_string(ws.join(".orchestration/.gitignore")).unwrap();
    assert!(ignore.starts_with(older_ignore) && ignore.lines().any(|l| l == "brain.generated.md"), "{ignore}");
}

#[test]
fn damaged_markers_of_an_older_section_remove_nothing_and_are_reported() {
    let ws = workspace();
    let ws = ws.path();
    let text = "# Ours\n<!-- chokepoint:begin: old -->\nold generated\nmy note after it\n";
    fs::write(ws.join(BRAIN), text).unwrap();
    let out = init(ws);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 2: a chokepoint:begin marker of an older generated section without its pair"),
        "{out:?}"
    );
    assert_eq!(brain(ws), text, "nothing of the people's file is guessed away");
    assert!(!generated(ws).contains(BEGIN) && !generated(ws).contains(END));
}

/// In its own worktree and branch, an agent takes the lease of INT-001 and is refused three times on
/// one path (a lesson); then everything `git add -A` takes is committed, and the lease let go.
fn works_and_commits(wt: &Path, agent: &str) {
    let out = chokepoint(wt, &["intent", "select", "--session", &format!("claude:S-{agent}"), "INT-001"]);
    assert!(out.status.success(), "{out:?}");
    for _ in 0..3 {
        assert!(reason(&write(wt, &format!("S-{agent}"), &format!(".orchestration/{agent}.txt"))).contains("governance file"));
    }
    // The hook processes waited for their rewrites; the lease's is done by the next session start.
    hook(wt, json!({ "session_id": format!("S-{agent}-2"), "cwd": wt, "hook_event_name": "SessionStart", "source": "startup" }));
    let generated = generated(wt);
    assert!(generated.contains(&format!("held by `claude:S-{agent}`")), "{generated}");
    assert!(lessons(&generated).iter().any(|l| l.contains(&format!("`.orchestration/{agent}.txt`"))), "{generated}");
    git(wt, &["add", "-A"]);
    git(wt, &["commit", "-qm", &format!("work of {agent}")]);
    let status = git(wt, &["status", "--porcelain", "--ignored"]);
    assert!(status.contains("!! .orchestration/brain.generated.md"), "the generated part is ignored, not committed: {status}");
    // The worktrees share their leases: the next worktree's agent takes INT-001 once this one let go.
    assert!(chokepoint(wt, &["intent", "release", "--session", &format!("claude:S-{agent}")]).status.success());
}

#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn two_branches_that_each_took_a_lease_and_learnt_a_lesson_merge_without_a_conflict_in_the_brain() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("main");
    fs::create_dir_all(main.join(".orchestration")).unwrap();
    fs::write(main.join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    fs::write(
        main.join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-001\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    git(&main, &["init", "-q"]);
    init(&main);
    person_adds(&main, "We deploy on Fridays.");
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-qm", "governed"]);
    let other = dir.path().join("b");
    git(&main, &["worktree", "add", "-q", "-b", "b", other.to_str().unwrap()]);
    git(&main, &["checkout", "-q", "-b", "a"]);

    works_and_commits(&main, "a");
    works_and_commits(&other, "b");
    for (branch, committed) in [("a", &main), ("b", &other)] {
        let shown = git(committed, &["show", &format!("{branch}:{BRAIN}")]);
        assert!(!shown.contains("held by") && !shown.contains("### Lessons"), "{branch}: no live state in git: {shown}");
    }

    let merge = common::git_output(&main, &["merge", "--no-edit", "b"]);
    let conflicted = git(&main, &["diff", "--name-only", "--diff-filter=U"]);
    // No file Chokepoint writes conflicts: not the brain, not the ledger's chains.
    let conflicted: Vec<&str> = conflicted.lines().collect();
    assert_eq!(conflicted, Vec::<&str>::new(), "{}", String::from_utf8_lossy(&merge.stdout));
    assert!(merge.status.success(), "git merge: {}", String::from_utf8_lossy(&merge.stderr));
    assert_eq!(brain(&main).matches("We deploy on Fridays.").count(), 1);
}
