// Where the PostgreSQL server binaries are, found as the tests find them (native/core/tests/support/
// postgres.rs, tests/support/postgres.js): $CHOKEPOINT_PG_BIN, else `pg_config --bindir`, else the newest
// /usr/lib/postgresql/<version>/bin, else where `initdb` on PATH really lives. Each must hold initdb,
// pg_ctl, postgres and psql. `ensureSystemPackages` asks it whether Debian's `postgresql` is installed.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const hasServer = (dir) => ['initdb', 'pg_ctl', 'postgres', 'psql'].every((p) => fs.existsSync(path.join(dir, p)));

/** The folder of the PostgreSQL server binaries, or null. */
function postgresBinDir() {
  const chosen = process.env.CHOKEPOINT_PG_BIN;
  if (chosen) return hasServer(chosen) ? chosen : null;
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (pgConfig.status === 0 && hasServer(pgConfig.stdout.trim())) return pgConfig.stdout.trim();
  const base = '/usr/lib/postgresql';
  const version = (v) => v.split('.').map(Number);
  const newer = (a, b) => {
    const [x, y] = [version(a), version(b)];
    for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) - (y[i] || 0);
    return 0;
  };
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => /^\d+(\.\d+)*$/.test(v) && hasServer(path.join(base, v, 'bin'))) : [];
  if (versions.length) return path.join(base, versions.sort(newer).pop(), 'bin');
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const initdb = dir && path.join(dir, 'initdb');
    if (!initdb || !fs.existsSync(initdb)) continue;
    const real = path.dirname(fs.realpathSync(initdb));
    if (hasServer(real)) return real;
  }
  return null;
}

module.exports = { postgresBinDir };
