//! A real PostgreSQL server in a temporary folder, for the tests of the coordination database (leases,
//! asks and a ledger copy on a team's PostgreSQL, issue 29), with the faults those tests inject: the
//! server killed, stopped, restarted on the same port, its connections cut.
//!
//! Included by path, not a crate: `#[path = "support/postgres.rs"] mod postgres;` from the core's tests,
//! `#[path = "../../core/tests/support/postgres.rs"] mod postgres;` from the CLI's. It needs only
//! `tempfile` and `nix`, which both crates have.
//!
//! The binaries are Debian's `postgresql` package (`npm test` installs it where missing), found as
//! `bin_dir` says. The server listens on 127.0.0.1 only, on a port picked free, with its socket, data,
//! log and certificates in the temporary folder; a superuser `chokepoint` logs in with a password
//! (scram-sha-256) to the database `chokepoint`. Dropping the `Server` stops it, also when a test
//! panics, so no postgres outlives its test (short of the test process itself being killed).
//!
//! Root: `initdb`, `postgres` and `pg_ctl` refuse to run as root, so as root they run as the `postgres`
//! user (`runuser -u postgres --`), the temporary folder is that user's (`chown -R`), and it is made
//! under `/tmp` rather than `$TMPDIR`, which may sit in a folder that user cannot enter. `psql` runs as
//! the test's own user: it is a client over TCP.
#![allow(dead_code)] // each test binary uses its own subset

use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The superuser the tests connect as, and the database they use.
pub const USER: &str = "chokepoint";
pub const DATABASE: &str = "chokepoint";
/// How long the server may take to accept connections, and to go away when killed.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// The user the server runs as when the tests run as root (Debian's package creates it).
const SERVER_USER: &str = "postgres";

pub struct Server {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    password: String,
    /// The server's commands run as `SERVER_USER` (the tests run as root).
    as_server_user: bool,
    tls: bool,
}

impl Server {
    /// A new server, ready for connections, with the database `chokepoint` created.
    pub fn start() -> Server {
        Server::start_with(false)
    }

    /// As `start`, with `ssl = on`: a test CA and a server certificate for 127.0.0.1 and localhost,
    /// both made with the `openssl` command in the temporary folder; clients find the CA at `ca_cert`.
    pub fn start_tls() -> Server {
        Server::start_with(true)
    }

    fn start_with(tls: bool) -> Server {
        let bin = bin_dir().unwrap_or_else(|| {
            panic!(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) were found in $CHOKEPOINT_PG_BIN, \
                 `pg_config --bindir`, /usr/lib/postgresql/*/bin or PATH: install them with \
                 `apt-get install postgresql` (npm test does so when run as root), or set CHOKEPOINT_PG_BIN to their folder"
            )
        });
        let as_server_user = is_root();
        if as_server_user && !server_user_exists() {
            panic!(
                "the tests run as root, which PostgreSQL refuses, and there is no `{SERVER_USER}` user to run it as: \
                 `apt-get install postgresql` creates it"
            );
        }
        // As root the server's user must be able to reach the folder: /tmp, not a $TMPDIR that may be
        // inside root's home.
        let parent = if as_server_user { PathBuf::from("/tmp") } else { std::env::temp_dir() };
        let dir = tempfile::Builder::new()
            .prefix("chokepoint-pg-")
            .tempdir_in(&parent)
            .unwrap_or_else(|e| panic!("cannot create a temporary folder in {}: {e}", parent.display()));
        let mut server = Server { dir, port: 0, bin, password: random_password(), as_server_user, tls };
        server.init();
        // The free port is picked by binding port 0 and letting it go: another process may take it in
        // between, so a start that could not bind tries another.
        for attempt in 1.. {
            server.port = free_port();
            match server.try_start() {
                Ok(()) => break,
                Err(log) if attempt < 3 && log.contains("could not bind") => continue,
                Err(log) => panic!("PostgreSQL did not start on port {}; the end of its log:\n{log}", server.port),
            }
        }
        server
            .psql_in("postgres", &format!("create database {DATABASE}"), &[])
            .unwrap_or_else(|e| panic!("cannot create the database {DATABASE}: {e}"));
        server
    }

    /// initdb with the superuser and its password, then this harness's settings in postgresql.conf
    /// (the port is given at each start, so `restart` keeps it). `fsync = off` only loses data when the
    /// machine crashes; `synchronous_commit` stays on, because with it off a commit acknowledged just
    /// before `kill` would be lost, and the tests of the coordination database rely on the opposite.
    fn init(&self) {
        let dir = self.dir.path();
        let pwfile = dir.join("pwfile");
        fs::write(&pwfile, format!("{}\n", self.password)).expect("write the password file");
        if self.tls {
            make_certificates(dir);
        }
        if self.as_server_user {
            run(Command::new("chown").arg("-R").arg(format!("{SERVER_USER}:")).arg(dir), "chown");
        }
        let mut initdb = self.server_command("initdb");
        initdb
            .arg("-D")
            .arg(self.data())
            .args(["-U", USER, "-A", "scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"])
            .arg(format!("--pwfile={}", pwfile.display()));
        run(&mut initdb, "initdb");
        fs::remove_file(&pwfile).ok();
        let mut conf = format!(
            "\n# chokepoint's test harness (native/core/tests/support/postgres.rs)\n\
             listen_addresses = '127.0.0.1'\n\
             unix_socket_directories = '{}'\n\
             max_connections = 100\n\
             shared_buffers = 16MB\n\
             fsync = off\n\
             full_page_writes = off\n",
            dir.display()
        );
        if self.tls {
            conf.push_str(&format!(
                "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                dir.join("server.crt").display(),
                dir.join("server.key").display()
            ));
        }
        let path = self.data().join("postgresql.conf");
        let mut text = fs::read_to_string(&path).expect("read postgresql.conf");
        text.push_str(&conf);
        fs::write(&path, text).expect("write postgresql.conf");
    }

    /// `pg_ctl start`, waiting until the server accepts connections; on failure, the log's tail.
    fn try_start(&self) -> Result<(), String> {
        let out = self
            .server_command("pg_ctl")
            .arg("start")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.log_file())
            .args(["-w", "-t", &READY_TIMEOUT.as_secs().to_string(), "-o", &format!("-p {}", self.port)])
            .output()
            .expect("run pg_ctl");
        if out.status.success() { Ok(()) } else { Err(format!("{}{}", String::from_utf8_lossy(&out.stderr), self.log_tail())) }
    }

    /// `postgres://chokepoint@127.0.0.1:<port>/chokepoint`, without the password (see `env`).
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// The URL with the password in it, for a client that takes nothing else.
    pub fn url_with_password(&self) -> String {
        format!("postgres://{USER}:{}@127.0.0.1:{}/{DATABASE}", self.password, self.port)
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temporary folder: the data folder `data`, the socket, `server.log`, the certificates.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What a chokepoint process needs to reach the server: `CHOKEPOINT_COORDINATION_URL` and `PGPASSWORD`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("CHOKEPOINT_COORDINATION_URL".to_string(), self.url()), ("PGPASSWORD".to_string(), self.password.clone())]
    }

    /// The CA that signed the server's certificate (a `start_tls` server only).
    pub fn ca_cert(&self) -> PathBuf {
        assert!(self.tls, "ca_cert: this server was started without TLS (Server::start_tls)");
        self.dir.path().join("ca.crt")
    }

    /// The server's log (what it wrote to stderr since it was created).
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    /// A crash: SIGKILL to the postmaster and to every process it started, then waits until they are
    /// gone and the port refuses connections. `restart` brings it back through crash recovery.
    pub fn kill(&self) {
        let pid = self
            .postmaster_pid()
            .unwrap_or_else(|| panic!("kill: the server is not running (no postmaster.pid in {})", self.data().display()));
        // The children are found before the postmaster dies: after, they belong to init.
        let mut pids = children_of(pid);
        pids.push(pid);
        for &p in &pids {
            kill_now(p);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        while pids.iter().any(|&p| alive(p)) || self.accepts() {
            assert!(Instant::now() < deadline, "kill: the server's processes {pids:?} did not go away");
            sleep(Duration::from_millis(20));
        }
        // Nobody may reap the postmaster (it was orphaned by pg_ctl), and PostgreSQL takes a zombie for
        // a running server: its lock files go with it, as a reboot would take them. Crash recovery
        // still runs on the next start (the data folder says it was not shut down).
        fs::remove_file(self.data().join("postmaster.pid")).ok();
        fs::remove_file(self.dir.path().join(format!(".s.PGSQL.{}.lock", self.port))).ok();
    }

    /// A clean stop (`pg_ctl stop -m fast`): sessions are ended, the data is checkpointed.
    pub fn stop(&self) {
        let mut cmd = self.server_command("pg_ctl");
        cmd.arg("stop").arg("-D").arg(self.data()).args(["-m", "fast", "-w"]);
        run(&mut cmd, "pg_ctl stop");
    }

    /// Starts the server again, on the same port and data, after `kill` or `stop`; waits until ready.
    pub fn restart(&self) {
        if let Err(log) = self.try_start() {
            panic!("PostgreSQL did not restart on port {}; the end of its log:\n{log}", self.port);
        }
    }

    /// A connection cut: every other session on the database is ended by the server.
    pub fn terminate_connections(&self) {
        self.psql(&format!(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity \
             where pid <> pg_backend_pid() and datname = '{DATABASE}'"
        ));
    }

    /// Runs SQL with `psql -At` on the database; returns its output without the last newline, and
    /// panics with psql's stderr when it fails.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql).unwrap_or_else(|e| panic!("psql `{sql}` failed: {e}"))
    }

    /// As `psql`, a failure returned: psql's stderr.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        self.psql_in(DATABASE, sql, &[])
    }

    /// As `try_psql`, with libpq's variables set for this one run, such as
    /// `[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca)]` (PGSSLMODE is `prefer` unless given).
    pub fn psql_with_env(&self, sql: &str, env: &[(&str, &str)]) -> Result<String, String> {
        self.psql_in(DATABASE, sql, env)
    }

    fn psql_in(&self, database: &str, sql: &str, env: &[(&str, &str)]) -> Result<String, String> {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg(format!("host=127.0.0.1 port={} user={USER} dbname={database} connect_timeout=5", self.port))
            .env("PGPASSWORD", &self.password)
            .env("PGSSLMODE", "prefer")
            .env_remove("PGSERVICE")
            .env_remove("PGSSLROOTCERT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run psql");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string())
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The last 40 lines of the server's log.
    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// The postmaster's pid, from the first line of `postmaster.pid`, if it is alive.
    fn postmaster_pid(&self) -> Option<i32> {
        let text = fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        let pid = text.lines().next()?.trim().parse().ok()?;
        alive(pid).then_some(pid)
    }

    fn accepts(&self) -> bool {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    }

    /// One of the server's programs, run as `SERVER_USER` when the tests run as root.
    fn server_command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_server_user {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", SERVER_USER, "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }
}

impl Drop for Server {
    /// `pg_ctl stop -m immediate`; should that fail, SIGKILL, so no server outlives its test.
    fn drop(&mut self) {
        if self.postmaster_pid().is_none() {
            return;
        }
        let _ = self.server_command("pg_ctl").arg("stop").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "-t", "10"]).output();
        if self.postmaster_pid().is_some() {
            self.kill();
        }
    }
}

/// The folder of the PostgreSQL server binaries: `$CHOKEPOINT_PG_BIN`, else `pg_config --bindir`, else
/// the newest `/usr/lib/postgresql/<version>/bin`, else where `initdb` on PATH really lives. Each
/// candidate must hold initdb, pg_ctl, postgres and psql. `scripts/postgres.js` looks the same way, for
/// the JS tests and for `npm test`'s check that Debian's `postgresql` is installed.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CHOKEPOINT_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has_server(d));
    }
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = from_pg_config.filter(|d| has_server(d)) {
        return Some(dir);
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.split('.').map(|n| n.parse().ok()).collect::<Option<Vec<u32>>>()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_server(bin))
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("initdb"))
        .filter(|p| p.is_file())
        .filter_map(|p| fs::canonicalize(p).ok()?.parent().map(Path::to_path_buf))
        .find(|d| has_server(d))
}

fn has_server(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres", "psql"].iter().all(|p| dir.join(p).is_file())
}

/// A CA and a server certificate it signed, for 127.0.0.1 and localhost (P-256 keys: quick to make).
/// The CA is a CA and the server's certificate is not, as rustls and OpenSSL both want.
fn make_certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = Command::new("openssl");
    ca.current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=chokepoint test CA"])
        .args(["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    run(&mut ca, "openssl req (the test CA)");
    let mut csr = Command::new("openssl");
    csr.current_dir(dir).args(["req", "-new"]).args(ec).args(["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
    run(&mut csr, "openssl req (the server's key)");
    fs::write(
        dir.join("server.ext"),
        "subjectAltName = IP:127.0.0.1, DNS:localhost\n\
         basicConstraints = critical, CA:FALSE\n\
         keyUsage = critical, digitalSignature, keyEncipherment\n\
         extendedKeyUsage = serverAuth\n",
    )
    .expect("write server.ext");
    let mut sign = Command::new("openssl");
    sign.current_dir(dir).args([
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "1",
        "-days",
        "2",
        "-out",
        "server.crt",
        "-extfile",
        "server.ext",
    ]);
    run(&mut sign, "openssl x509 (the server's certificate)");
    // PostgreSQL refuses a key others can read.
    #[cfg(unix)]
    fs::set_permissions(dir.join("server.key"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod server.key");
}

// The harness runs Debian's PostgreSQL, a Unix program: on Windows it builds, so that the tests
// that use it build, and those tests are ignored there (`cfg_attr(windows, ignore = …)`).
#[cfg(unix)]
fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(unix)]
fn server_user_exists() -> bool {
    nix::unistd::User::from_name(SERVER_USER).ok().flatten().is_some()
}

#[cfg(unix)]
fn kill_now(pid: i32) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

#[cfg(not(unix))]
fn server_user_exists() -> bool {
    false
}

#[cfg(not(unix))]
fn kill_now(_pid: i32) {
    unreachable!("no PostgreSQL server runs on Windows in these tests")
}

/// Runs a setup command; panics with its output when it fails.
fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what} ({cmd:?}): {e}"));
    if !out.status.success() {
        panic!("{what} failed ({}): {cmd:?}\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    out
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()).expect("bind a free port").port()
}

fn random_password() -> String {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).expect("read /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: i32) -> Vec<i32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| proc_stat(p).is_some_and(|(_, ppid)| ppid == pid))
        .collect()
}

/// Whether a process exists and is not a zombie.
fn alive(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// A process's state letter and parent pid from /proc/<pid>/stat (after the command name, which may
/// hold spaces and parentheses).
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}
