// The extension makes the `chokepoint` it ships findable by the guard of the committed agent
// settings (extension/src/engine/findable.ts): its folder first on PATH (terminals and this process's
// children), and the per-user pointer, which the guard itself then reads: run here through `sh`
// exactly as `chokepoint init` writes it, with a stand-in program.
import assert from 'node:assert/strict';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { test } from 'node:test';
import { makeFindable, pointerFile } from '../../extension/src/engine/findable';

/** The guard `chokepoint init` writes for Claude Code's PreToolUse, read from a plan of the real CLI
 *  when it is built, else written out as `agents::portable::guarded` makes it. */
function guard(): string {
  const cli = path.resolve(__dirname, '../../../target/debug/chokepoint');
  if (fs.existsSync(cli)) {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-findable-ws-'));
    try {
      const r = spawnSync(cli, ['init', '--agent', 'claude', '--workspace', ws], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const settings = JSON.parse(fs.readFileSync(path.join(ws, '.claude/settings.json'), 'utf8'));
      return settings.hooks.PreToolUse[0].hooks[0].command;
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  }
  return 'chokepoint_bin="$CHOKEPOINT_PROGRAM"; [ -n "$chokepoint_bin" ] || chokepoint_bin=$(command -v chokepoint 2>/dev/null) || chokepoint_bin=$(cat "$XDG_STATE_HOME/chokepoint/program" 2>/dev/null) || chokepoint_bin=$(cat "$HOME/.local/state/chokepoint/program" 2>/dev/null); [ -f "$chokepoint_bin" ] && [ -x "$chokepoint_bin" ] || { echo \'not found\' >&2; exit 2; }; exec "$chokepoint_bin" hook --agent claude --deadline 600';
}

test('the shipped program is put first on PATH and named by the pointer the guard reads', { skip: process.platform === 'win32' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-findable-'));
  try {
    const bin = path.join(dir, "ext dir's", 'bin');
    fs.mkdirSync(bin, { recursive: true });
    const program = path.join(bin, 'chokepoint');
    fs.writeFileSync(program, '#!/bin/sh\necho "ran $0 $*"\n', { mode: 0o755 });
    const env: NodeJS.ProcessEnv = { PATH: '/usr/bin:/bin', HOME: path.join(dir, 'home'), XDG_STATE_HOME: path.join(dir, 'state') };
    const prepended: [string, string][] = [];
    const done = makeFindable(program, { prepend: (v, value) => prepended.push([v, value]) }, env);
    assert.deepEqual(prepended, [['PATH', `${bin}:`]], 'VS Code terminals');
    assert.equal(env.PATH, `${bin}:/usr/bin:/bin`, "this extension host's children");
    assert.deepEqual(done?.pointer, { file: path.join(dir, 'state/chokepoint/program'), written: true });
    assert.equal(fs.readFileSync(pointerFile(env), 'utf8'), `${program}\n`);
    // Again: nothing changes, PATH holds the folder once.
    assert.deepEqual(makeFindable(program, undefined, env)?.pointer, { file: pointerFile(env), written: false });
    assert.equal(env.PATH, `${bin}:/usr/bin:/bin`);

    // An agent started outside VS Code (no such PATH) finds it through the pointer; with neither,
    // the guard blocks (exit 2).
    const run = (e: NodeJS.ProcessEnv) => spawnSync('sh', ['-c', guard()], { env: e, encoding: 'utf8' });
    const outside = run({ PATH: '/usr/bin:/bin', HOME: env.HOME, XDG_STATE_HOME: env.XDG_STATE_HOME });
    assert.equal(outside.status, 0, outside.stderr);
    assert.equal(outside.stdout, `ran ${program} hook --agent claude --deadline 600\n`);
    const nowhere = run({ PATH: '/usr/bin:/bin', HOME: env.HOME, XDG_STATE_HOME: path.join(dir, 'elsewhere') });
    assert.equal(nowhere.status, 2, nowhere.stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
