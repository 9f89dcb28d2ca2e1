// What the status-bar item says for an engine state, apart from VS Code (so plain Node tests it):
// its text, its tone, and the warning a person must not miss: a missing active_intents.yaml is "scope checks off", in the
// warning colour (tests/unit/statusLine.test.ts).
import type { EngineState } from '../../../protocol/messages';

export interface StatusLine {
  text: string;
  /** The item's background: `error` and `warning` are the theme's status-bar colours. */
  tone?: 'error' | 'warning';
  /** Said in the tooltip, after the engine's description. */
  warning?: string;
}

/** The engine's state at a glance: a team's database it coordinates on, or a warning while it cannot
 *  (falling back to this machine alone, or a setting that cannot work). Without active_intents.yaml the gatekeeper requires no intent and
 *  checks no scope (`EngineInfo::warnings` in the core, which `chokepoint config check` and `doctor`
 *  say): a deleted file must not look like a healthy engine. */
export function statusLine(state: EngineState): StatusLine {
  if (state.status === 'failed') return { text: '$(error) Chokepoint: engine failed', tone: 'error' };
  if (state.status === 'noWorkspace') return { text: '$(shield) Chokepoint: no workspace' };
  if (state.diagnostics.length > 0) return { text: `$(warning) Chokepoint ${state.version}: config error`, tone: 'warning' };
  if (state.intents.status === 'missing') {
    return {
      text: `$(warning) Chokepoint ${state.version}: scope checks off`,
      tone: 'warning',
      warning:
        'active_intents.yaml is missing: scope checks are off, so any agent may write anywhere in the workspace but the ' +
        'governance files, without selecting an intent. Restore it (git checkout -- .orchestration/active_intents.yaml) or ' +
        'declare the intents work is done under.',
    };
  }
  const team = state.coordination;
  if (team?.mode === 'broken') {
    return { text: `$(error) Chokepoint ${state.version}: team database broken`, tone: 'error', warning: team.cause ?? undefined };
  }
  if (team?.mode === 'local-fallback') {
    return { text: `$(warning) Chokepoint ${state.version}: this machine alone`, tone: 'warning', warning: team.cause ?? undefined };
  }
  if (team?.mode === 'team') return { text: `$(shield) Chokepoint ${state.version} · team: ${shortDatabase(team.database ?? '')}` };
  return { text: `$(shield) Chokepoint ${state.version}` };
}

/** `postgres://team@db.example:5432/chokepoint` as `db.example:5432/chokepoint`: where, not who. */
function shortDatabase(url: string): string {
  const rest = url.replace(/^[a-z]+:\/\//, '');
  return rest.slice(rest.lastIndexOf('@') + 1);
}
