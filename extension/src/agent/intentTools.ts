// The intent handshake as VS Code language model tools (package.json `languageModelTools`), so VS
// Code's own agent declares its intent natively: list_intents, select_active_intent, intent_context,
// scope_expansion_request. The tools and their answers are the core's (agents::handshake, the same
// that `chokepoint mcp` serves other agents; tests/node/handshake.test.js fails when package.json's
// declarations drift from them).
//
// The session is bound by the hooks, not here: VS Code runs the PreToolUse hook of
// .github/hooks/chokepoint.json on these tools too, with its chat session's id, and the gatekeeper
// takes the intent's lease for that session before the tool runs. A tool never learns the session;
// it answers what the workspace says now (who holds the intent), and says how to connect the hooks
// when they did not see the call.
import * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';

/** How a person connects VS Code's agent, for the answer that says its hooks did not run. */
const CONNECT = 'the command "Chokepoint: Connect VS Code\u2019s Agent", or `chokepoint init --agent vscode`';

/** Registers every handshake tool that package.json declares. */
export function registerIntentTools(engine: EngineHost, declared: readonly { name: string }[]): vscode.Disposable[] {
  return declared.map(({ name }) =>
    vscode.lm.registerTool<Record<string, unknown>>(name, {
      invoke(options) {
        const native = engine.nativeEngine;
        // Never an empty success: a model told "done" by a governance tool that did nothing would write on.
        if (!native)
          return text(
            `Error: Chokepoint's engine is not running (${engine.state.status}); no intent can be selected and every write is denied. Open the Chokepoint log for why.`,
          );
        const answer = native.handshakeTool(name, options.input ?? {}, CONNECT);
        return text(answer.isError ? `Error: ${answer.text}` : answer.text);
      },
    }),
  );
}

function text(value: string): vscode.LanguageModelToolResult {
  return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(value)]);
}
