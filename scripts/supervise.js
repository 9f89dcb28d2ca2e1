// The supervisor of one VS Code server (started by startCodeServer in scripts/vscode.js):
//
//   node supervise.js <program> <args...>      environment: CHOKEPOINT_VSCODE_SERVER=<run folder>
//
// runs the server as its child and ends it, and every process under it, when
//   - its standard input reaches end of file: that pipe's other end is held by the process that started
//     us (npm start, a test), so this happens however that process ended, SIGKILL included, which no
//     handler in it could catch;
//   - it gets SIGTERM, SIGINT or SIGHUP;
// and exits with the server's exit code when the server ends by itself.
'use strict';
const { spawn } = require('child_process');
const { SERVER_MARKER, endServer } = require('./processes');

const marker = process.env[SERVER_MARKER];
const [program, ...args] = process.argv.slice(2);
if (!marker || !program) {
  console.error(`usage: ${SERVER_MARKER}=<run folder> node supervise.js <program> <args...>`);
  process.exit(2);
}

const say = (msg) => console.log(`[supervisor ${new Date().toISOString()}] ${msg}`);
const server = spawn(program, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let stopping = false;

async function stop(reason, code) {
  if (stopping) return;
  stopping = true;
  say(`${reason}: ending the VS Code server and every process under it`);
  try {
    const n = await endServer(marker);
    say(`ended ${n} process(es)`);
  } catch (e) {
    say(`error: ${e.message}`);
    code = 1;
  }
  process.exit(code);
}

server.on('error', (e) => stop(`cannot start ${program}: ${e.message}`, 1));
server.on('exit', (code, signal) => stop(`the server exited (${signal || `exit code ${code}`})`, code ?? 1));
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => stop(`got ${sig}`, 0));
process.stdin.on('end', () => stop('the process that started the server has ended (its pipe closed)', 0));
process.stdin.on('error', () => stop('the pipe from the process that started the server broke', 0));
process.stdin.resume();
