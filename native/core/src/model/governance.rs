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
