// The mocha entry that VS Code's extension host runs (`extensionTestsPath`). The host's stdout goes
// nowhere, so results are written to the file named by CHOKEPOINT_TEST_REPORT: one line per test and
// a final JSON summary line that the harness (scripts/test.js) reads. Deliberately no mock of the `vscode` module anywhere:
// extension tests run in a real extension host.
import * as fs from 'fs';
import * as path from 'path';
import Mocha from 'mocha';

export function run(): Promise<void> {
  const report = process.env.CHOKEPOINT_TEST_REPORT;
  const write = (line: string) => {
    if (report) fs.appendFileSync(report, line + '\n');
    else console.log(line);
  };
  const mocha = new Mocha({ ui: 'bdd', timeout: 40000, color: false, reporter: 'base' });
  for (const f of fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.test.js'))
    .sort()) {
    mocha.addFile(path.join(__dirname, f));
  }
  return new Promise((resolve, reject) => {
    let passed = 0;
    let failed = 0;
    const runner = mocha.run();
    runner.on('pass', (t) => {
      passed++;
      write(`  ✔ ${t.fullTitle()} (${t.duration ?? 0} ms)`);
    });
    runner.on('fail', (t, err: Error) => {
      failed++;
      write(
        `  ✘ ${t.fullTitle()}\n      ${String(err?.stack ?? err)
          .split('\n')
          .join('\n      ')}`,
      );
    });
    runner.on('end', () => {
      write(`CHOKEPOINT_SUMMARY ${JSON.stringify({ passed, failed })}`);
      if (failed > 0) reject(new Error(`${failed} test(s) failed`));
      else resolve();
    });
  });
}
