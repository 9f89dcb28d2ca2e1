// A real PostgreSQL server in a temporary folder for the JS tests of the coordination database (leases,
// asks and a ledger copy on a team's PostgreSQL, issue 29), with the faults those tests inject: killed,
// stopped, restarted on the same port, its connections cut. The same server, set up the same way, as
// the Rust tests' native/core/tests/support/postgres.rs: read that file's notes for the reasons.
//
// Binaries: as scripts/postgres.js finds them (Debian's `postgresql`, which `npm test` installs where
// missing). The server listens on 127.0.0.1 on a free port; a superuser `chokepoint` logs in with a
// password (scram-sha-256) to the database `chokepoint`. As root, initdb, pg_ctl and postgres run as
// the `postgres` user (they refuse root) in a folder under /tmp that user owns; psql runs as we are.
// Every server still running when the test file ends (node:test's `after`) or the process exits is
// stopped, and its folder removed.
'use strict';
const { execFile, spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { after } = require('node:test');
const { postgresBinDir } = require('../../scripts/postgres');

const USER = 'chokepoint';
const DATABASE = 'chokepoint';
const SERVER_USER = 'postgres';
const READY_TIMEOUT_S = 30;

/** Servers not yet stopped for good, stopped when the test file ends or the process exits. */
const running = new Set();
// Registered at the top level, when a test file first loads this module (see workspace.js for why).
after(() => [...running].forEach((s) => s.stopSync()));
process.on('exit', () => {
  for (const s of running) s.stopSync();
});

/** Runs a program; resolves with { code, stdout, stderr } (never rejects for an exit code). */
function exec(cmd, args, options = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      // A program that could not run (ENOENT) has no stderr of its own: its error says why.
      resolve({ code, stdout: stdout || '', stderr: stderr || (err ? err.message : '') });
    });
  });
}

/** Runs a setup command; rejects with its output when it fails. */
async function must(what, cmd, args, options) {
  const r = await exec(cmd, args, options);
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${cmd} ${args.join(' ')}\n${r.stdout}${r.stderr}`);
  return r;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      // Listening on a TCP port, address() is an AddressInfo (a string only for a pipe or socket file).
      const { port } = /** @type {import('net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(200);
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** A process's state letter and parent pid from /proc, or null. */
function procStat(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state, ppid: Number(ppid) };
  } catch {
    return null;
  }
}
const alive = (pid) => {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z' && s.state !== 'X';
};
const childrenOf = (pid) =>
  fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((p) => (procStat(p) || {}).ppid === pid);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A CA and a server certificate it signed, for 127.0.0.1 and localhost (as postgres.rs makes them). */
async function makeCertificates(dir) {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const o = { cwd: dir };
  await must(
    'openssl req (the test CA)',
    'openssl',
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=chokepoint test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    o,
  );
  await must("openssl req (the server's key)", 'openssl', ['req', '-new', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], o);
  fs.writeFileSync(
    path.join(dir, 'server.ext'),
    'subjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n',
  );
  await must(
    "openssl x509 (the server's certificate)",
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-set_serial',
      '1',
      '-days',
      '2',
      '-out',
      'server.crt',
      '-extfile',
      'server.ext',
    ],
    o,
  );
  fs.chmodSync(path.join(dir, 'server.key'), 0o600); // PostgreSQL refuses a key others can read
}

class Server {
  constructor({ dir, bin, password, asServerUser, tls }) {
    this.dir = dir;
    this.bin = bin;
    this.password = password;
    this.asServerUser = asServerUser;
    this.tls = tls;
    this.port = 0;
    this.data = path.join(dir, 'data');
    this.logFile = path.join(dir, 'server.log');
  }

  /** `postgres://chokepoint@127.0.0.1:<port>/chokepoint`, without the password (see env()). */
  get url() {
    return `postgres://${USER}@127.0.0.1:${this.port}/${DATABASE}`;
  }

  get urlWithPassword() {
    return `postgres://${USER}:${this.password}@127.0.0.1:${this.port}/${DATABASE}`;
  }

  /** The CA that signed the server's certificate (a `start({ tls: true })` server only). */
  get caCert() {
    if (!this.tls) throw new Error('caCert: this server was started without TLS (start({ tls: true }))');
    return path.join(this.dir, 'ca.crt');
  }

  /** What a chokepoint process needs to reach the server. */
  env() {
    return { CHOKEPOINT_COORDINATION_URL: this.url, PGPASSWORD: this.password };
  }

  /** The server's log so far. */
  log() {
    return fs.existsSync(this.logFile) ? fs.readFileSync(this.logFile, 'utf8') : '';
  }

  logTail() {
    return this.log().split('\n').slice(-40).join('\n');
  }

  /** [command, args] for one of the server's programs, as the `postgres` user when we are root.
   *  @param {string} program
   *  @param {string[]} args
   *  @returns {[string, string[]]} a pair, so that it can be spread into exec's or spawnSync's arguments */
  serverCommand(program, args) {
    const file = path.join(this.bin, program);
    return this.asServerUser ? ['runuser', ['-u', SERVER_USER, '--', file, ...args]] : [file, args];
  }

  /** `pg_ctl start` on this.port, waiting until it accepts connections; rejects with the log's tail. */
  async tryStart() {
    const r = await exec(
      ...this.serverCommand('pg_ctl', ['start', '-D', this.data, '-l', this.logFile, '-w', '-t', String(READY_TIMEOUT_S), '-o', `-p ${this.port}`]),
    );
    if (r.code !== 0) throw new Error(`PostgreSQL did not start on port ${this.port}: ${r.stderr}\nthe end of its log:\n${this.logTail()}`);
    running.add(this);
  }

  /** Starts the server again, on the same port and data, after kill() or stop(). */
  async restart() {
    await this.tryStart();
  }

  /** A clean stop (`pg_ctl stop -m fast`). `remove`: also delete its folder, for good. */
  async stop({ remove = false } = {}) {
    if (this.postmasterPid() !== null) await must('pg_ctl stop', ...this.serverCommand('pg_ctl', ['stop', '-D', this.data, '-m', 'fast', '-w']));
    if (remove) {
      running.delete(this);
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** For process exit: `pg_ctl stop -m immediate`, then SIGKILL should it still run; removes the folder. */
  stopSync() {
    if (this.postmasterPid() !== null) spawnSync(...this.serverCommand('pg_ctl', ['stop', '-D', this.data, '-m', 'immediate', '-w', '-t', '10']));
    const pid = this.postmasterPid();
    if (pid !== null) {
      for (const p of [...childrenOf(pid), pid]) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {}
      }
    }
    running.delete(this);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** A crash: SIGKILL to the postmaster and every process it started; resolves once they are gone and
   *  the port refuses. restart() brings it back through crash recovery. */
  async kill() {
    const pid = this.postmasterPid();
    if (pid === null) throw new Error(`kill: the server is not running (no live postmaster.pid in ${this.data})`);
    const pids = [...childrenOf(pid), pid]; // found before the postmaster dies: after, they are init's
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {}
    }
    const deadline = Date.now() + READY_TIMEOUT_S * 1000;
    while (pids.some(alive) || (await accepts(this.port))) {
      if (Date.now() > deadline) throw new Error(`kill: the server's processes ${pids} did not go away`);
      await sleep(20);
    }
    // An unreaped postmaster is a zombie PostgreSQL takes for a running server: its lock files go too.
    fs.rmSync(path.join(this.data, 'postmaster.pid'), { force: true });
    fs.rmSync(path.join(this.dir, `.s.PGSQL.${this.port}.lock`), { force: true });
  }

  /** A connection cut: every other session on the database is ended by the server. */
  async terminateConnections() {
    await this.psql(`select count(pg_terminate_backend(pid)) from pg_stat_activity where pid <> pg_backend_pid() and datname = '${DATABASE}'`);
  }

  /** Runs SQL with `psql -At`; resolves with its output without the last newline, rejects with psql's
   *  stderr. `env`: libpq's variables for this run, e.g. { PGSSLMODE: 'verify-full', PGSSLROOTCERT: caCert }. */
  async psql(sql, { env = {}, database = DATABASE } = {}) {
    const conninfo = `host=127.0.0.1 port=${this.port} user=${USER} dbname=${database} connect_timeout=5`;
    // An environment, from which two variables are deleted below.
    /** @type {NodeJS.ProcessEnv} */
    const base = { ...process.env, PGPASSWORD: this.password, PGSSLMODE: 'prefer' };
    delete base.PGSERVICE;
    delete base.PGSSLROOTCERT;
    const r = await exec(path.join(this.bin, 'psql'), ['-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-c', sql, conninfo], { env: { ...base, ...env } });
    if (r.code !== 0) throw new Error(`psql \`${sql}\` failed: ${r.stderr.trim()}`);
    return r.stdout.replace(/\n+$/, '');
  }

  /** The postmaster's pid from postmaster.pid, if it is alive; else null. */
  postmasterPid() {
    try {
      const pid = Number(fs.readFileSync(path.join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return pid > 0 && alive(pid) ? pid : null;
    } catch {
      return null;
    }
  }
}

/** A new server, ready, with the database `chokepoint` created. `tls`: ssl = on with a test CA's
 *  certificate for 127.0.0.1 (server.caCert). */
async function start({ tls = false } = {}) {
  const bin = postgresBinDir();
  if (!bin) {
    throw new Error(
      'no PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) were found in $CHOKEPOINT_PG_BIN, `pg_config --bindir`, /usr/lib/postgresql/*/bin or PATH: install them with `apt-get install postgresql` (npm test does so when run as root), or set CHOKEPOINT_PG_BIN to their folder',
    );
  }
  const asServerUser = typeof process.getuid === 'function' && process.getuid() === 0;
  if (asServerUser && spawnSync('id', ['-u', SERVER_USER]).status !== 0) {
    throw new Error(
      `the tests run as root, which PostgreSQL refuses, and there is no \`${SERVER_USER}\` user to run it as: \`apt-get install postgresql\` creates it`,
    );
  }
  const dir = fs.mkdtempSync(path.join(asServerUser ? '/tmp' : os.tmpdir(), 'chokepoint-pg-'));
  const server = new Server({ dir, bin, password: crypto.randomBytes(16).toString('hex'), asServerUser, tls });
  try {
    const pwfile = path.join(dir, 'pwfile');
    fs.writeFileSync(pwfile, `${server.password}\n`);
    if (tls) await makeCertificates(dir);
    if (asServerUser) await must('chown', 'chown', ['-R', `${SERVER_USER}:`, dir]);
    await must(
      'initdb',
      ...server.serverCommand('initdb', ['-D', server.data, '-U', USER, '-A', 'scram-sha-256', '-E', 'UTF8', '--no-locale', '--no-sync', `--pwfile=${pwfile}`]),
    );
    fs.rmSync(pwfile, { force: true });
    let conf = `\n# chokepoint's test harness (tests/support/postgres.js; synchronous_commit stays on: see postgres.rs)\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nmax_connections = 100\nshared_buffers = 16MB\nfsync = off\nfull_page_writes = off\n`;
    if (tls) conf += `ssl = on\nssl_cert_file = '${path.join(dir, 'server.crt')}'\nssl_key_file = '${path.join(dir, 'server.key')}'\n`;
    fs.appendFileSync(path.join(server.data, 'postgresql.conf'), conf);
    // The port was free when picked; another process may take it before the server binds: try another.
    for (let attempt = 1; ; attempt++) {
      server.port = await freePort();
      try {
        await server.tryStart();
        break;
      } catch (e) {
        if (attempt >= 3 || !/could not bind/.test(e.message)) throw e;
      }
    }
    await server.psql(`create database ${DATABASE}`, { database: 'postgres' });
    return server;
  } catch (e) {
    server.stopSync();
    throw e;
  }
}

module.exports = { start, USER, DATABASE };
