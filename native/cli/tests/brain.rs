//! The shared brain, `.orchestration/CLAUDE.md`, against real processes: `chokepoint init` creates it,
//! Claude Code's hook processes (judging alone, `--local`) teach it lessons and read it at session
//! start, a person writes in it meanwhile, and no agent may write it.

mod common;

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};

const BRAIN: &str = ".orchestration/CLAUDE.md";
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
        "version: 1
hooks:
  BeforeSubmit:
    - name: tests
      priority: critical
      command: ['sh', '-c', 'test -f done || { echo \"2 tests fail\" >&2; exit 2; }']
      timeout: 10
",
    )
    .unwrap();
    ws
}

fn chokepoint(ws: &Path, args: &[&str]) -> Output {
    Command::new(program()).args(args).args(["--workspace", ws.to_str().unwrap()]).output().unwrap()
}

fn init(ws: &Path) -> Output {
    let out = chokepoint(ws, &["init", "--agent", "claude", "--program", "/bin/chokepoint"]);
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

fn brain(ws: &Path) -> String {
    fs::read_to_string(ws.join(BRAIN)).unwrap()
}

/// The lessons the generated section lists.
fn lessons(text: &str) -> Vec<String> {
    let section = &text[text.find("### Lessons").expect("a lessons heading")..];
    section.lines().filter(|l| l.starts_with("- ")).map(str::to_owned).collect()
}

/// A person's edit, as an editor saves it: the whole file written again, a line added above the
/// section (in a temporary file renamed over it, as editors that keep a backup do).
fn person_adds(ws: &Path, line: &str) {
    let text = brain(ws);
    let at = text.find(BEGIN).expect("the section is there");
    save_as_person(ws, &format!("{}{line}\n\n", &text[..at]), &text[at..]);
}

fn save_as_person(ws: &Path, above: &str, section: &str) {
    let temp = ws.join(".orchestration/.person.tmp");
    fs::write(&temp, format!("{above}{section}")).unwrap();
    fs::rename(temp, ws.join(BRAIN)).unwrap();
}

#[test]
fn init_creates_the_brain_with_the_hooks_in_force_and_a_second_run_keeps_what_people_wrote() {
    let ws = workspace();
    let ws = ws.path();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("created .orchestration/CLAUDE.md"));
    let text = brain(ws);
    assert!(text.starts_with("# Shared brain\n"), "{text}");
    assert!(text.contains("**BeforeSubmit**") && text.contains("| `tests` | critical | runs `sh -c test -f done"), "{text}");
    assert!(text.contains("| `gatekeeper` | critical | judges every write"), "{text}");

    let mine = format!("{}\nOur rule: never touch the vendored code.\n", text.replace("# Shared brain", "# Our brain"));
    fs::write(ws.join(BRAIN), &mine).unwrap();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing changed"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(brain(ws), mine, "a section that is already true is not rewritten, nor anything around it");
}

/// Two agents, each refused three times on each of four paths (governance files, so each refusal
/// names its path): four lessons each, taught by separate processes at the same time. With
/// `person`, a person adds a line above the section every few milliseconds meanwhile, saving the
/// whole file as an editor does. Returns the person's lines.
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
        // The person's editor holds what they wrote above the section (its buffer), and takes the
        // section as the file has it when it saves: a save never drops the person's own earlier line,
        // whatever moment it reads the file in.
        let person = s.spawn(|| {
            let mut lines = Vec::new();
            let text = brain(ws);
            let mut above = text[..text.find(BEGIN).expect("the section is there")].to_owned();
            while person && !done.load(Ordering::Acquire) {
                let line = format!("Person's note {}.", lines.len());
                above.push_str(&format!("{line}\n\n"));
                let text = brain(ws);
                save_as_person(ws, &above, &text[text.find(BEGIN).expect("the section is there")..]);
                lines.push(line);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            lines
        });
        for agent in agents {
            agent.join().unwrap();
        }
        done.store(true, Ordering::Release);
        person.join().unwrap()
    })
}

/// Every lesson the two agents taught is in `text`, once, in one sound section.
fn has_every_lesson(text: &str) {
    assert_eq!(text.matches(BEGIN).count(), 1, "{text}");
    assert_eq!(text.matches(END).count(), 1, "{text}");
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
    has_every_lesson(&brain(ws));
}

#[test]
fn two_agents_teach_lessons_while_a_person_edits_above_the_section_and_nothing_is_lost() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    let person_lines = two_agents_teach(ws, true);
    assert!(person_lines.len() >= 2, "the person wrote while the agents worked: {}", person_lines.len());
    let text = brain(ws);
    for line in &person_lines {
        assert!(text.contains(line), "the person's `{line}` is kept:\n{text}");
    }
    // The person's editor saves its buffer whole, so its last save may hold an older section; the
    // lessons are kept in the state database, and the next rewrite (a session's start) has them all.
    hook(ws, json!({ "session_id": "S-c", "cwd": ws, "hook_event_name": "SessionStart", "source": "startup" }));
    let text = brain(ws);
    for line in &person_lines {
        assert!(text.contains(line), "the person's `{line}` is kept:\n{text}");
    }
    has_every_lesson(&text);
}

#[test]
fn a_repeated_denial_makes_one_lesson_linked_to_its_record() {
    let ws = workspace();
    let ws = ws.path();
    init(ws);
    for _ in 0..5 {
        assert!(reason(&write(ws, "S1", ".orchestration/x.txt")).contains("governance file"));
    }
    let lessons = lessons(&brain(ws));
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
    let lessons = lessons(&brain(ws));
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
        assert!(context.contains("We deploy on Fridays only."), "{event}: what people wrote: {context}");
        assert!(context.contains("| `tests` | critical |"), "{event}: the hooks in force: {context}");
    }
}

#[test]
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
    let append = format!("echo 'agents may push' >> '{}'", ws.join(BRAIN).display());
    let out = Command::new(program())
        .args(["exec", "--workspace", ws.to_str().unwrap(), "--session", "S1", "--", "sh", "-c", &append])
        .current_dir(ws)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "something was undone: {err}");
    assert!(err.contains("is the shared brain, a governance file"), "{err}");
    assert_eq!(brain(ws), before, "the command's change was undone");
}

#[test]
fn a_damaged_section_is_repaired_without_losing_the_persons_text() {
    let ws = workspace();
    let ws = ws.path();
    fs::write(ws.join(BRAIN), "# Ours\n<!-- chokepoint:begin: old -->\nold generated\nmy note after it\n").unwrap();
    let out = init(ws);
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2: a chokepoint:begin marker without its pair"), "{out:?}");
    let text = brain(ws);
    for kept in ["# Ours\n", "old generated\n", "my note after it\n"] {
        assert!(text.contains(kept), "{kept:?} kept: {text}");
    }
    assert_eq!(text.matches(BEGIN).count(), 1, "one sound section: {text}");
    assert!(text.ends_with(&format!("{END}\n")));
}
