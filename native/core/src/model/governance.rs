//! The governance vocabulary every layer shares: the files no agent may write, with who reads each
//! and why, and the names of the intent handshake's tools. The gatekeeper refuses a write tool on a
//! governance file, containment a shell command's change to one; both ask [`is_governance_file`]
//! and say [`refusal`].
//!
//! **What is governed, under every scope:** Chokepoint's own configuration and runtime state, and
//! every file in the workspace that configures an agent we support or runs code when its session
//! starts (hooks, MCP servers, settings that switch hooks off or point them elsewhere). An agent
//! that could write one plants a hook or a server the next session starts, outside every gate, or
//! turns the gate off. Globs match case-insensitively: on a file system that ignores case,
//! `.MCP.json` is the file the agent reads.
//!
//! Where each fact comes from, as in docs/agents/protocols.md: [src] read in the client's source or
//! shipped code, [rec] recorded from the real client (docs/agents/clients.md), [docs] the vendor's
//! documentation, [2nd] second-hand (third-party references, documentation read through search,
//! not checked against the client). Second-hand entries are governed anyway: refusing a write an
//! agent did not need costs a person one edit, missing one costs the gate.
//!
//! **Invariant: what configures an agent is governed under every scope**: `.orchestration/`, the
//! repository's shared folder `.git/chokepoint/` (inside the main checkout), and each supported
//! agent's hooks, MCP servers and settings (`.claude/`, `.mcp.json`, `.codex/`, `.gemini/`,
//! `.github/hooks/`, `.cursor/`, `.vscode/settings.json`, …), each glob in [`GOVERNED`] with who
//! reads it ([`covers_governance`]: whether a requested scope glob could cover one). Pinned by
//! `tests/gatekeeper.rs`.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::sync::OnceLock;

/// The tool that performs the handshake.
pub const SELECT_INTENT_TOOL: &str = "select_active_intent";
/// The tool a refused write is pointed to.
pub const SCOPE_EXPANSION_TOOL: &str = "scope_expansion_request";

/// One governed glob (workspace-relative, `/`-separated, `*` crossing `/` as in globset's default):
/// who reads what it matches, and what an agent could do by writing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Governed {
    pub glob: &'static str,
    /// A path the glob matches, to test whether a requested scope could cover it.
    pub probe: &'static str,
    /// Who reads it, for the refusal: "Claude Code", "Chokepoint".
    pub read_by: &'static str,
    /// What it is to that reader, completing "it ..." (after "read by {read_by}").
    pub what: &'static str,
}

const fn g(glob: &'static str, probe: &'static str, read_by: &'static str, what: &'static str) -> Governed {
    Governed { glob, probe, read_by, what }
}

const CHOKEPOINT: &str =
    "holds Chokepoint's configuration (hooks.yaml, active_intents.yaml), its ledger and its runtime state (leases, the ledger's head)";
const COORDINATION: &str = "holds what the worktrees of this repository coordinate on: the intent leases, revocations and approved scope expansions (Chokepoint's shared database)";
const CLAUDE: &str = "configures Claude Code: hooks (settings.json, settings.local.json, and the `hooks` of sub-agents and skills), MCP servers, permissions, sub-agents and commands";
const CODEX: &str = "configures Codex: hooks (hooks.json, `[hooks]` of config.toml) and MCP servers (`[mcp_servers]` of config.toml)";
const GEMINI: &str = "configures Gemini CLI: hooks and their master switch (`hooksConfig`), MCP servers (settings.json), extensions that bring their own servers and hooks";
const CURSOR: &str = "configures Cursor: hooks (hooks.json), MCP servers (mcp.json), rules";
const HOOKS_DIR: &str = "holds the hooks they run at every event";
const MCP_JSON: &str = "lists the MCP servers they start with a session";

/// Every governed glob, Chokepoint's own first. The agents' facts:
/// - Claude Code: `.claude/settings.json`, `.claude/settings.local.json` hold hooks and
///   `enableAllProjectMcpServers` [docs][rec]; `.mcp.json` its project servers [docs][rec]; sub-agents
///   (`.claude/agents/*.md`) and skills carry `hooks` and `mcpServers` in their frontmatter [2nd:
///   third-party references of the sub-agent format], and commands run shell lines on invocation
///   [2nd]: the whole folder is governed, it holds nothing an agent needs to write.
/// - Codex: `.codex/hooks.json`, `.codex/config.toml` (`[hooks]`, `[mcp_servers]`) [src][rec]; the
///   whole folder.
/// - Gemini CLI: `.gemini/settings.json` (`hooks`, `hooksConfig.enabled`, `mcpServers`) [src];
///   `.gemini/extensions/*/gemini-extension.json` loaded at start, with MCP servers [2nd: Gemini CLI's
///   extension docs]; custom commands run shell on invocation [2nd]: the whole folder.
/// - Copilot CLI: `.github/hooks/*.json` [rec], `.mcp.json` [rec, 1.0.102], `.github/mcp.json`
///   [2nd, unverified], custom agents in `.github/agents/` with MCP servers in their frontmatter
///   [2nd], `.copilot/` [unverified: its user folder is `~/.copilot`, governed here in case a
///   session's home is the workspace].
/// - Cursor: `.cursor/hooks.json`, `.cursor/mcp.json` [docs][2nd]; also reads Claude Code's hooks
///   (covered above) [docs]: the whole folder.
/// - VS Code's agent: `.github/hooks/*.json` [src][rec]; `.vscode/settings.json` (`chat.useHooks`,
///   `chat.hookFilesLocations`, `chat.useClaudeHooks`) [src]; `.vscode/mcp.json` its MCP servers
///   [2nd: VS Code's docs]; `.vscode/tasks.json`, whose `runOn: folderOpen` tasks run when the folder
///   opens [2nd]; a `.code-workspace` file holds settings, tasks and MCP servers alike [2nd].
pub const GOVERNED: &[Governed] = &[
    g(".orchestration", ".orchestration", "Chokepoint", CHOKEPOINT),
    g(".orchestration/**", ".orchestration/hooks.yaml", "Chokepoint", CHOKEPOINT),
    // In the main checkout the repository's shared folder is inside the workspace (a linked
    // worktree's is outside it); only Chokepoint's own folder of `.git`, git's are git's.
    g(".git/chokepoint", ".git/chokepoint", "Chokepoint", COORDINATION),
    g(".git/chokepoint/**", ".git/chokepoint/state.db", "Chokepoint", COORDINATION),
    g(".claude", ".claude", "Claude Code", CLAUDE),
    g(".claude/**", ".claude/settings.json", "Claude Code", CLAUDE),
    g(".mcp.json", ".mcp.json", "Claude Code and Copilot CLI", MCP_JSON),
    g(".codex", ".codex", "Codex", CODEX),
    g(".codex/**", ".codex/config.toml", "Codex", CODEX),
    g(".gemini", ".gemini", "Gemini CLI", GEMINI),
    g(".gemini/**", ".gemini/settings.json", "Gemini CLI", GEMINI),
    g(".github/hooks", ".github/hooks", "Copilot CLI and VS Code's agent", HOOKS_DIR),
    g(".github/hooks/**", ".github/hooks/chokepoint.json", "Copilot CLI and VS Code's agent", HOOKS_DIR),
    g(".github/mcp.json", ".github/mcp.json", "Copilot CLI", "lists MCP servers it may start with a session"),
    g(
        ".github/agents/**",
        ".github/agents/x.agent.md",
        "Copilot CLI and VS Code's agent",
        "defines custom agents, with their tools and MCP servers",
    ),
    g(".copilot", ".copilot", "Copilot CLI", "configures it (MCP servers, hooks) when a session's home is here"),
    g(".copilot/**", ".copilot/mcp-config.json", "Copilot CLI", "configures it (MCP servers, hooks) when a session's home is here"),
    g(".cursor", ".cursor", "Cursor", CURSOR),
    g(".cursor/**", ".cursor/hooks.json", "Cursor", CURSOR),
    g(
        ".vscode/settings.json",
        ".vscode/settings.json",
        "VS Code's agent",
        "switches its hooks off (`chat.useHooks`) or points them elsewhere (`chat.hookFilesLocations`)",
    ),
    g(".vscode/mcp.json", ".vscode/mcp.json", "VS Code's agent", "lists the MCP servers it starts"),
    g(".vscode/tasks.json", ".vscode/tasks.json", "VS Code", "holds tasks that run when the folder opens (`runOn: folderOpen`)"),
    g(
        "**/*.code-workspace",
        "x.code-workspace",
        "VS Code",
        "holds a workspace's settings, tasks and MCP servers, hooks' switches included",
    ),
];

/// [`GOVERNED`] compiled once per process.
fn compiled() -> &'static GlobSet {
    static SET: OnceLock<GlobSet> = OnceLock::new();
    SET.get_or_init(|| {
        let mut set = GlobSetBuilder::new();
        for governed in GOVERNED {
            set.add(GlobBuilder::new(governed.glob).case_insensitive(true).build().expect("the governance globs are valid"));
        }
        set.build().expect("the governance globs build")
    })
}

/// The governance files as one set, for a caller that keeps a `GlobSet` (the gatekeeper's shell
/// scope). Same answers as [`is_governance_file`].
pub fn governance_set() -> GlobSet {
    compiled().clone()
}

/// Whether the workspace-relative, `/`-separated path `rel` is a governance file (or a folder that
/// holds them): no agent may create, change or remove it, whatever its scope.
pub fn is_governance_file(rel: &str) -> bool {
    compiled().is_match(rel)
}

/// Why no agent may write `rel`, for the refusal of a write tool or of a shell command's change;
/// `None` when it is not a governance file. Names who reads the file and what a write could do, so
/// the agent does not try another way.
pub fn refusal(rel: &str) -> Option<String> {
    if rel.eq_ignore_ascii_case(crate::base::sidecar::BRAIN) {
        return Some(brain_refusal());
    }
    let index = compiled().matches(rel).into_iter().min()?;
    let governed = &GOVERNED[index];
    Some(format!(
        "`{rel}` is a governance file, read by {}: it {}; an agent that wrote it could plant a hook or an MCP server \
         that the next session starts outside every gate, or turn the gate off, so no agent writes it under any scope",
        governed.read_by, governed.what
    ))
}

/// What an agent refused by [`refusal`] should do instead.
pub fn remediation(rel: &str) -> String {
    if rel.eq_ignore_ascii_case(crate::base::sidecar::BRAIN) {
        return "Leave the file as it is; say in your answer what a person should add to it.".to_owned();
    }
    format!("Leave `{rel}` as it is; say in your answer what a person should change in it and why.")
}

/// Whether a requested scope glob could cover a governance file: it matches one of
/// [`GOVERNED`]'s probes (`**`, `.orch*`, `.claude/*`, `*.json` at the root). Compiled as scopes are
/// (`*` stops at `/`).
pub fn covers_governance(glob: &str) -> bool {
    let Ok(glob) = GlobBuilder::new(glob).literal_separator(true).case_insensitive(true).build() else { return false };
    let matcher = glob.compile_matcher();
    GOVERNED.iter().any(|governed| matcher.is_match(governed.probe))
}

/// Why an agent may not write the shared brain, for a refusal of a write tool or of a shell command's
/// change: it says what the file is and who writes it, so the agent does not try another way.
pub fn brain_refusal() -> String {
    format!(
        "`{}` is the shared brain, a governance file: people write it, and Chokepoint generates the rest (hooks, intents, lessons) beside it; agents never write it through a tool",
        crate::base::sidecar::BRAIN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_is_governed() {
        for governed in GOVERNED {
            assert!(is_governance_file(governed.probe), "{}", governed.probe);
            assert!(refusal(governed.probe).is_some_and(|r| r.contains(governed.read_by)), "{}", governed.probe);
        }
    }

    #[test]
    fn agents_files_are_governed_and_ordinary_ones_are_not() {
        for path in [
            ".mcp.json",
            ".MCP.json",
            ".codex/config.toml",
            ".codex/hooks.json",
            ".claude/settings.local.json",
            ".claude/agents/reviewer.md",
            ".gemini/extensions/x/gemini-extension.json",
            ".cursor/mcp.json",
            ".vscode/settings.json",
            ".vscode/mcp.json",
            ".github/hooks/other.json",
            "team.code-workspace",
            "sub/dir/team.code-workspace",
            ".orchestration/state.db-shm",
            ".orchestration/agent_trace.jsonl",
            ".orchestration/trace/20261122T043005Z-0123abcd.jsonl",
        ] {
            assert!(is_governance_file(path), "{path}");
        }
        for path in ["src/mcp.json", "README.md", ".vscode/launch.json", ".github/workflows/ci.yml", "docs/.claude.md", "src/.codex.ts"] {
            assert!(!is_governance_file(path), "{path}");
        }
        assert!(refusal(".mcp.json").unwrap().contains("Claude Code and Copilot CLI"));
        assert!(refusal(".orchestration/CLAUDE.md").unwrap().contains("shared brain"));
    }

    #[test]
    fn a_scope_that_could_cover_a_governance_file_is_refused() {
        for glob in ["**", "*", ".*", "*.json", ".vscode/*", ".codex/**", ".orch*/**", "**/*.code-workspace"] {
            assert!(covers_governance(glob), "{glob}");
        }
        for glob in ["src/**", "docs/*.md", ".github/workflows/**"] {
            assert!(!covers_governance(glob), "{glob}");
        }
    }
}
