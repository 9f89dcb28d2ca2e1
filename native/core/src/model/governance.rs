//! The governance vocabulary every layer shares: the files no agent may write, and the names of the
//! intent handshake's tools. The gatekeeper enforces them for writes, containment for shell
//! commands.

/// The tool that performs the handshake.
pub const SELECT_INTENT_TOOL: &str = "select_active_intent";
/// The tool a refused write is pointed to.
pub const SCOPE_EXPANSION_TOOL: &str = "scope_expansion_request";

/// Never writable by an agent, whatever its scope: an agent that could edit its own rules would have
/// no rules.
pub const GOVERNANCE_FILES: &[&str] = &[
    ".orchestration",
    ".orchestration/**",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".cursor/hooks.json",
    ".gemini/settings.json",
    ".github/hooks/**",
    ".codex/hooks.json",
];

/// Why an agent may not write the shared brain, for a refusal of a write tool or of a shell command's
/// change: it says what the file is and who writes it, so the agent does not try another way.
pub fn brain_refusal() -> String {
    format!(
        "`{}` is the shared brain, a governance file: Chokepoint writes its generated section (hooks, intents, lessons) and people write the rest; agents never write it through a tool",
        crate::base::sidecar::BRAIN
    )
}
