//! A team's coordination database: one PostgreSQL database that the engines of several machines
//! (each developer's laptop, CI runners, cloud dev boxes) share for what their agents coordinate on.
//!
//! Named by `coordination.url` in hooks.yaml, or `CHOKEPOINT_COORDINATION_URL`, which wins. Without
//! either, nothing here runs and every engine coordinates through its repository's SQLite file, as
//! before. The stores that live here (leases and revocations, approved expansions, Pendings, the
//! ledger's copy) each create and migrate their own tables through [`TeamDb::migrate`]; this module
//! knows none of them.
//!
//! - **Why the synchronous `postgres` client on a thread of its own.** The stores it serves are
//!   synchronous (they run inside a hook's judging, as the SQLite ones do), and the judging runs
//!   inside a tokio runtime, where the `postgres` client's own `block_on` is not allowed. One worker
//!   thread per database owns the connection; a caller hands it a closure and waits on a channel with
//!   a deadline. rust-postgres is the long-kept client whose async half (`tokio-postgres`) the Rust
//!   ecosystem builds on; sqlx would bring a second async stack, macros and a pool for what is one
//!   connection per engine.
//! - **Why rustls, always verifying.** A static `chokepoint` program cannot rely on the machine's
//!   OpenSSL; rustls with ring needs no system library. A TLS connection always verifies the
//!   server's certificate and name (against the system's trusted roots, or the `sslrootcert` file
//!   the URL names): `sslmode=require` here means what libpq calls `verify-full`. A coordination
//!   database that anyone on the path could impersonate would hand out leases.
//! - **Why the password never comes from hooks.yaml.** hooks.yaml is committed. A password in its
//!   URL is a configuration error; it comes from the environment (`PGPASSWORD`, or the URL in
//!   `CHOKEPOINT_COORDINATION_URL`) or from the user's `~/.pgpass` (`PGPASSFILE`).
//! - **Which rows are this workspace's.** One database may serve many repositories: every row is
//!   keyed by the repository's name ([`TeamDb::namespace`]): `coordination.repository`, else the
//!   `origin` remote's URL without credentials, scheme or `.git`, plus the governed folder's path
//!   when it is below the work tree's root. Two clones of one repository on two machines agree on it
//!   without being told.
//! - **Time is the database's.** Machines' clocks disagree; a lease's expiry compared with the
//!   clock of whichever machine asks could hand one intent to two holders. The stores use the
//!   server's clock ([`NOW_MS`]).
//! - **Failing closed.** Every failure to reach or use the database is a [`TeamError`] whose
//!   message names the database and how to fix it; the gate denies with it, unless
//!   `coordination.unreachable: local` lets it fall back to this machine's state (the stores decide
//!   that, and say so in every answer's reason).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::types::{ToSql, Type};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::base::repo::Repo;
use crate::base::yaml::Problem;

/// The environment variable that names the team's database, over hooks.yaml's `coordination.url`.
pub const URL_ENV: &str = "CHOKEPOINT_COORDINATION_URL";
/// The environment variable that names this machine in the team's rows, over its host name.
pub const MACHINE_ENV: &str = "CHOKEPOINT_MACHINE";

/// The server's clock in milliseconds since the Unix epoch, for the stores' SQL.
pub const NOW_MS: &str = "(floor(extract(epoch from clock_timestamp()) * 1000))::bigint";

/// How long a connection attempt may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a caller waits for one operation (connecting included) before it fails: well inside
/// the hook deadlines of every agent, so the gate's denial reaches the agent as a denial.
pub const OPERATION_DEADLINE: Duration = Duration::from_secs(6);

/// hooks.yaml's `coordination:` section: the team's database and what to do without it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoordinationConfig {
    /// The team's PostgreSQL database, as a URL (`postgres://user@host:5432/db?sslmode=require`),
    /// without a password: the password comes from `PGPASSWORD` or `~/.pgpass`.
    /// `CHOKEPOINT_COORDINATION_URL` overrides it. Unset: this repository's own SQLite file.
    #[serde(default)]
    pub url: Option<String>,
    /// The repository's name in the database, when its `origin` remote should not name it (or it
    /// has none). Every clone of the repository must agree on it.
    #[serde(default)]
    pub repository: Option<String>,
    /// What a gate does while the database cannot be reached: `deny` (the default) refuses every
    /// write that needs it; `local` coordinates on this machine's state meanwhile, and says so.
    #[serde(default)]
    pub unreachable: Unreachable,
}

/// What a gate does while the team's database cannot be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unreachable {
    /// Deny, saying which database and how to fix it.
    #[default]
    Deny,
    /// Coordinate on this machine's state meanwhile (other machines are not consulted), saying so in
    /// every answer.
    Local,
}

impl Unreachable {
    pub fn as_str(self) -> &'static str {
        match self {
            Unreachable::Deny => "deny",
            Unreachable::Local => "local",
        }
    }
}

impl CoordinationConfig {
    /// What is wrong with the section, for hooks.yaml's diagnostics.
    pub fn problems(&self) -> Vec<Problem> {
        let Some(url) = &self.url else { return Vec::new() };
        match Target::parse(url) {
            Err(e) => vec![Problem::new("url", e.to_string())],
            Ok(target) if target.config.get_password().is_some() => vec![Problem::new(
                "url",
                "coordination.url holds a password, and hooks.yaml is committed: remove it from the URL and set PGPASSWORD \
                 (or a line in ~/.pgpass) on each machine instead",
            )],
            Ok(_) => Vec::new(),
        }
    }
}

/// Why the team's database could not serve an operation. Every message names the database and
/// says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamError {
    /// The URL or the TLS settings are wrong.
    Config { target: String, message: String },
    /// No connection could be made (refused, timed out, authentication, TLS).
    Unreachable { target: String, cause: String },
    /// A connection was made and an operation failed on it.
    Failed { target: String, op: &'static str, cause: String },
    /// The operation took longer than [`OPERATION_DEADLINE`].
    Deadline { target: String, op: &'static str },
    /// The database's tables were made by a newer Chokepoint.
    Schema { target: String, component: &'static str, found: i64, known: i64 },
}

impl TeamError {
    /// Whether the database could not be reached at all (as opposed to a refused operation):
    /// what `coordination.unreachable: local` falls back on.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, TeamError::Unreachable { .. } | TeamError::Deadline { .. })
    }
}

impl fmt::Display for TeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeamError::Config { target, message } => write!(
                f,
                "the team's coordination database `{target}` is misconfigured: {message}; fix coordination.url in \
                 .orchestration/hooks.yaml or {URL_ENV}"
            ),
            TeamError::Unreachable { target, cause } => write!(
                f,
                "the team's coordination database `{target}` cannot be reached ({cause}): start it or fix coordination.url \
                 in .orchestration/hooks.yaml ({URL_ENV} overrides it; the password comes from PGPASSWORD or ~/.pgpass), \
                 or set `coordination.unreachable: local` to coordinate on this machine alone meanwhile"
            ),
            TeamError::Failed { target, op, cause } => {
                write!(f, "the team's coordination database `{target}` failed to {op} ({cause}); `chokepoint doctor` checks it")
            }
            TeamError::Deadline { target, op } => write!(
                f,
                "the team's coordination database `{target}` did not answer within {} s ({op}): check the server and the \
                 network, or set `coordination.unreachable: local` to coordinate on this machine alone meanwhile",
                OPERATION_DEADLINE.as_secs()
            ),
            TeamError::Schema { target, component, found, known } => write!(
                f,
                "the team's coordination database `{target}` holds {component} tables of schema version {found}, newer than \
                 this Chokepoint's {known}: upgrade Chokepoint on this machine"
            ),
        }
    }
}

impl std::error::Error for TeamError {}

/// Where the database is, as parsed from its URL: the client's settings, TLS, and a description
/// for messages that never holds the password.
#[derive(Clone)]
struct Target {
    config: postgres::Config,
    tls: Option<Arc<rustls::ClientConfig>>,
    shown: String,
}

impl Target {
    /// Parses a `postgres://` URL (or libpq's `key=value` form). `sslrootcert` and the verifying
    /// `sslmode`s (`verify-ca`, `verify-full`), which the client does not take, are read here.
    fn parse(url: &str) -> Result<Target, TeamError> {
        let shown = redact(url);
        let config_error = |message: String| TeamError::Config { target: shown.clone(), message };
        let (url, root_cert, verify) = take_tls_params(url);
        let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| config_error(cause_of(&e)))?;
        if verify {
            config.ssl_mode(postgres::config::SslMode::Require);
        }
        let tls = match config.get_ssl_mode() {
            postgres::config::SslMode::Disable => None,
            _ => Some(Arc::new(tls_config(root_cert.as_deref()).map_err(config_error)?)),
        };
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // A connection whose server vanished without a FIN (a cable, a killed VM) fails within
        // seconds rather than at TCP's default of many minutes.
        config.keepalives(true).keepalives_idle(Duration::from_secs(10));
        #[cfg(target_os = "linux")]
        config.tcp_user_timeout(OPERATION_DEADLINE);
        if config.get_options().is_none() {
            // A statement, or a wait for a lock, never outlasts a gate's deadline.
            config.options("-c statement_timeout=5000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=10000");
        }
        Ok(Target { config, tls, shown })
    }

    fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        match &self.tls {
            None => self.config.connect(postgres::NoTls),
            Some(tls) => self.config.connect(tokio_postgres_rustls::MakeRustlsConnect::new((**tls).clone())),
        }
    }
}

/// `url` without `sslrootcert` and a verifying `sslmode` (the client knows neither), what they
/// said, and whether verification was asked for.
fn take_tls_params(url: &str) -> (String, Option<PathBuf>, bool) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), None, false) };
    let (mut root, mut verify, mut kept) = (None, false, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslrootcert", value)) => root = Some(PathBuf::from(percent_decode(value))),
            Some(("sslmode", "verify-full" | "verify-ca")) => verify = true,
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    (url, root, verify)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The client's TLS settings: the system's trusted roots, and the `sslrootcert` file's when named.
fn tls_config(root_cert: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(file) => {
            let pem = std::fs::read(file).map_err(|e| format!("cannot read sslrootcert `{}`: {e}", file.display()))?;
            let certs: Vec<_> = rustls::pki_types::pem::PemObject::pem_slice_iter(&pem)
                .collect::<Result<Vec<rustls::pki_types::CertificateDer<'static>>, _>>()
                .map_err(|e| format!("sslrootcert `{}` is not PEM certificates: {e}", file.display()))?;
            if certs.is_empty() {
                return Err(format!("sslrootcert `{}` holds no certificate", file.display()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| format!("sslrootcert `{}`: {e}", file.display()))?;
            }
        }
        None => {
            // The system's roots are read when a server first offers a certificate, not here: with
            // the default `sslmode` (prefer) and a server without TLS they are never needed, and
            // reading and parsing them was 3.5 ms of every hook process's 10 ms on a team's database.
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let verifier = Arc::new(SystemRoots { provider: Arc::clone(&provider), verifier: std::sync::OnceLock::new() });
            return Ok(rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// rustls' own verifier (`WebPkiServerVerifier`: the chain to a trusted root, the name, the
/// signatures) over the system's trusted roots, made on first use. Nothing is verified less: every
/// check is the wrapped verifier's or rustls' own signature checks.
#[derive(Debug)]
struct SystemRoots {
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: std::sync::OnceLock<Result<Arc<rustls::client::WebPkiServerVerifier>, rustls::Error>>,
}

impl SystemRoots {
    fn verifier(&self) -> Result<&Arc<rustls::client::WebPkiServerVerifier>, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                let mut roots = rustls::RootCertStore::empty();
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
                rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&self.provider))
                    .build()
                    .map_err(|e| rustls::Error::General(format!("the system's trusted certificates: {e}")))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl rustls::client::danger::ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// `url` with its password, if any, replaced by `***`, for every message and log.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => match user.split_once(':') {
                Some((name, _)) => format!("{name}:***@{host}"),
                None => format!("{user}@{host}"),
            },
            None => authority.to_owned(),
        };
        let path = path.map(|p| p.split('?').next().unwrap_or(p).to_owned());
        return match path {
            Some(path) => format!("{scheme}://{authority}/{path}"),
            None => format!("{scheme}://{authority}"),
        };
    }
    // libpq's `key=value` form.
    url.split_whitespace().filter(|p| !p.starts_with("password=")).collect::<Vec<_>>().join(" ")
}

/// The password of `config`'s user from `PGPASSWORD`, else the first matching line of `~/.pgpass`
/// (`PGPASSFILE`), as libpq finds it.
fn password_for(config: &postgres::Config, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(password) = env("PGPASSWORD").filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = env("PGPASSFILE").map(PathBuf::from).or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(_)) => "localhost".to_owned(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or_default().to_owned();
    let db = config.get_dbname().map_or_else(|| user.clone(), str::to_owned);
    text.lines().filter(|l| !l.trim_start().starts_with('#')).find_map(|line| {
        let fields = split_pgpass(line);
        let [h, p, d, u, password] = fields.as_slice() else { return None };
        let matches = |field: &String, value: &str| field == "*" || field == value;
        (matches(h, &host) && matches(p, &port) && matches(d, &db) && matches(u, &user)).then(|| password.clone())
    })
}

/// One `~/.pgpass` line's five fields (`:` separated, `\:` and `\\` escaped).
fn split_pgpass(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut chars) = (Vec::new(), String::new(), line.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// The repository's name in the team's database: `configured`, else its `origin` remote's URL
/// without credentials, scheme or `.git`; with the governed folder's path below the work tree's root.
pub fn namespace_of(repo: Option<&Repo>, configured: Option<&str>) -> Option<String> {
    let name = match configured {
        Some(name) => name.trim().to_owned(),
        None => normalise_remote(&repo?.remote_url("origin")?)?,
    };
    let subdir = repo.map(|r| r.subdir.as_str()).unwrap_or("");
    Some(if subdir.is_empty() { name } else { format!("{name}//{subdir}") })
}

/// `https://user:token@github.com/acme/web.git`, `git@github.com:acme/web.git` and
/// `ssh://git@github.com/acme/web` all name `github.com/acme/web`; a local path names itself.
fn normalise_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest,
        None => match url.split_once(':') {
            // scp-like `git@host:path` (not a Windows drive letter).
            Some((host, path)) if host.len() > 1 && !host.contains('/') => {
                return Some(clean(&format!("{}/{path}", host.rsplit('@').next().unwrap_or(host))));
            }
            _ => url,
        },
    };
    let rest = rest.rsplit_once('@').filter(|(user, _)| !user.contains('/')).map_or(rest, |(_, host)| host);
    let name = clean(rest);
    (!name.is_empty()).then_some(name)
}

fn clean(name: &str) -> String {
    let name = name.trim_end_matches('/');
    name.strip_suffix(".git").unwrap_or(name).trim_end_matches('/').to_owned()
}

/// This machine's name in the team's rows: `CHOKEPOINT_MACHINE`, else its host name.
pub fn machine_name(env: &dyn Fn(&str) -> Option<String>) -> String {
    env(MACHINE_ENV)
        .filter(|m| !m.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .or_else(|| env("HOSTNAME"))
        .or_else(|| env("COMPUTERNAME"))
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Which database, for which repository, from which machine: what an engine needs to open
/// [`TeamDb`], resolved from hooks.yaml and the environment by [`Settings::resolve`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Settings {
    pub url: String,
    pub namespace: String,
    pub machine: String,
    pub unreachable: Unreachable,
    /// Where the URL came from, for doctor: `CHOKEPOINT_COORDINATION_URL` or `hooks.yaml`.
    pub source: &'static str,
}

impl Settings {
    /// The team's database for a workspace of `repo`, from the environment over hooks.yaml's
    /// section; `Ok(None)` when neither names one. An `Err` is a setting that cannot work (no name
    /// for the repository): the gate denies with it.
    pub fn resolve(
        section: &CoordinationConfig,
        repo: Option<&Repo>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, TeamError> {
        let (url, source) = match env(URL_ENV).filter(|u| !u.trim().is_empty()) {
            Some(url) => (url, URL_ENV),
            None => match &section.url {
                Some(url) => (url.clone(), "hooks.yaml"),
                None => return Ok(None),
            },
        };
        let namespace = namespace_of(repo, section.repository.as_deref()).ok_or_else(|| TeamError::Config {
            target: redact(&url),
            message: "this repository has no `origin` remote to name it by in the team's database: set coordination.repository \
                      in .orchestration/hooks.yaml to a name every clone shares"
                .to_owned(),
        })?;
        Ok(Some(Settings { url, namespace, machine: machine_name(env), unreachable: section.unreachable, source }))
    }
}

/// What an engine coordinates on, as its last good hooks.yaml and the environment say: this
/// repository's own SQLite file (`Off`), a team's database, or a setting that cannot work, which
/// every gate that needs coordination denies with.
#[derive(Debug, Clone, Default)]
pub enum Team {
    #[default]
    Off,
    On(Arc<TeamDb>),
    Broken(TeamError),
}

impl Team {
    /// The choice for `section` of a workspace of `repo`, keeping `previous`'s handle (and its
    /// connection) when the settings did not change.
    pub fn resolve(previous: &Team, section: &CoordinationConfig, repo: Option<&Repo>, env: &dyn Fn(&str) -> Option<String>) -> Team {
        match Settings::resolve(section, repo, env) {
            Ok(None) => Team::Off,
            Err(e) => Team::Broken(e),
            Ok(Some(settings)) => match previous {
                Team::On(db) if db.settings == settings => Team::On(Arc::clone(db)),
                _ => match TeamDb::new(settings, env) {
                    Ok(db) => Team::On(Arc::new(db)),
                    Err(e) => Team::Broken(e),
                },
            },
        }
    }

    /// The process's environment, as [`Team::resolve`] reads it.
    pub fn process_env(name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    pub fn db(&self) -> Option<&Arc<TeamDb>> {
        match self {
            Team::On(db) => Some(db),
            _ => None,
        }
    }
}

/// Where an engine reads the team's settings from the environment: the process's, or a test's (two
/// engines of one process playing two machines).
#[derive(Clone)]
pub struct TeamEnv(pub Arc<EnvLookup>);

/// A look-up of one environment variable.
pub type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl TeamEnv {
    /// The process's environment.
    pub fn process() -> TeamEnv {
        TeamEnv(Arc::new(Team::process_env))
    }

    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl fmt::Debug for TeamEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TeamEnv")
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// One connection as an operation sees it: the client (what it derefs to), and the statements
/// [`Session::query_hot`] prepared on it.
///
/// - **Why statements are prepared at their second run, not their first.** A statement sent with
///   its parameters' types (`query_typed`) is one round trip, but the server parses and plans it
///   every time: for a lease's take and release that was a third of their cost on loopback. A
///   prepared one skips both, but preparing is a round trip of its own, which a `chokepoint hook`
///   process that runs each statement once would pay for nothing. The second run says the
///   connection is kept (a live engine's), and from then on the statement is prepared.
pub struct Session {
    client: postgres::Client,
    prepared: HashMap<String, postgres::Statement>,
    seen: HashSet<String>,
}

impl Deref for Session {
    type Target = postgres::Client;
    fn deref(&self) -> &postgres::Client {
        &self.client
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

impl Session {
    fn new(client: postgres::Client) -> Session {
        Session { client, prepared: HashMap::new(), seen: HashSet::new() }
    }

    /// Runs `sql` with `params`, as `query_typed` the first time this connection sees it and as a
    /// statement prepared on it after that (see the type's doc). For the statements an engine runs
    /// over and over (a lease's take, release and check); the others use the client.
    pub fn query_hot(&mut self, sql: &str, params: &[(&(dyn ToSql + Sync), Type)]) -> Result<Vec<postgres::Row>, postgres::Error> {
        match self.prepared_at_second_run(sql, params)? {
            Some(statement) => self.client.query(&statement, &values(params)),
            None => self.client.query_typed(sql, params),
        }
    }

    /// [`Session::query_hot`] for a statement that returns no rows: how many it changed.
    pub fn execute_hot(&mut self, sql: &str, params: &[(&(dyn ToSql + Sync), Type)]) -> Result<u64, postgres::Error> {
        match self.prepared_at_second_run(sql, params)? {
            Some(statement) => self.client.execute(&statement, &values(params)),
            None => self.client.execute_typed(sql, params),
        }
    }

    /// The statement prepared for `sql`, preparing it at its second run; `None` at its first.
    fn prepared_at_second_run(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Option<postgres::Statement>, postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(Some(statement.clone()));
        }
        if self.seen.insert(sql.to_owned()) {
            return Ok(None);
        }
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.client.prepare_typed(sql, &types)?;
        self.prepared.insert(sql.to_owned(), statement.clone());
        Ok(Some(statement))
    }

    /// Forgets the prepared statements, after an error of the server: a migration that replaced a
    /// function or table under one makes it fail ("cached plan must not change result type") until
    /// it is prepared again.
    fn forget_statements(&mut self) {
        self.prepared.clear();
    }
}

/// Whether the server sent this error as it ended the session: class 57P (operator intervention:
/// terminated, shutting down, crashed) or 08 (connection exception).
fn ends_the_session(code: &postgres::error::SqlState) -> bool {
    let code = code.code();
    code.starts_with("57P") || code.starts_with("08")
}

fn values<'a>(params: &[(&'a (dyn ToSql + Sync), Type)]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|(value, _)| *value).collect()
}

/// The worker's side: the connection, made on first use and again after it broke.
struct Connection {
    target: Target,
    password: Option<String>,
    machine: String,
    client: Option<Session>,
}

impl Connection {
    /// The open connection, or a new one. `Ok((session, fresh))`.
    fn client(&mut self) -> Result<(&mut Session, bool), postgres::Error> {
        let fresh = match &self.client {
            Some(client) if !client.is_closed() => false,
            _ => {
                let mut target = self.target.clone();
                if target.config.get_password().is_none()
                    && let Some(password) = &self.password
                {
                    target.config.password(password);
                }
                target.config.application_name(&format!("chokepoint {}", self.machine));
                self.client = Some(Session::new(target.connect()?));
                true
            }
        };
        Ok((self.client.as_mut().expect("connected above"), fresh))
    }
}

/// The team's database as one engine uses it: a connection owned by a worker thread, made on first
/// use, made again after it broke; operations with a deadline; each store's tables migrated once.
pub struct TeamDb {
    settings: Settings,
    shown: String,
    target: Target,
    password: Option<String>,
    worker: Mutex<Option<mpsc::Sender<Job>>>,
    migrated: Mutex<HashSet<&'static str>>,
    /// Every store's schema version as first read through this handle (see `migrate`).
    versions: Mutex<Option<HashMap<String, i64>>>,
}

impl fmt::Debug for TeamDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamDb").field("target", &self.shown).field("namespace", &self.settings.namespace).finish()
    }
}

impl TeamDb {
    /// A handle on the database `settings` names; nothing is connected until the first operation.
    /// `Err` when the URL cannot be parsed or its TLS files read.
    pub fn new(settings: Settings, env: &dyn Fn(&str) -> Option<String>) -> Result<TeamDb, TeamError> {
        let target = Target::parse(&settings.url)?;
        let password = password_for(&target.config, env);
        Ok(TeamDb {
            shown: target.shown.clone(),
            settings,
            target,
            password,
            worker: Mutex::new(None),
            migrated: Mutex::new(HashSet::new()),
            versions: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The database as messages name it (the URL without its password or parameters).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The repository's name in the database: every store's rows carry it.
    pub fn namespace(&self) -> &str {
        &self.settings.namespace
    }

    /// This machine's name in the database's rows.
    pub fn machine(&self) -> &str {
        &self.settings.machine
    }

    pub fn unreachable(&self) -> Unreachable {
        self.settings.unreachable
    }

    fn sender(&self) -> Result<mpsc::Sender<Job>, TeamError> {
        let mut worker = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = worker.as_ref() {
            return Ok(sender.clone());
        }
        let (sender, jobs) = mpsc::channel::<Job>();
        let mut connection = Connection {
            target: self.target.clone(),
            password: self.password.clone(),
            machine: self.settings.machine.clone(),
            client: None,
        };
        std::thread::Builder::new()
            .name("chokepoint-team-db".into())
            .spawn(move || {
                for job in jobs {
                    job(&mut connection);
                }
            })
            .map_err(|e| TeamError::Unreachable { target: self.shown.clone(), cause: format!("cannot start its thread: {e}") })?;
        *worker = Some(sender.clone());
        Ok(sender)
    }

    /// Runs `body` on the connection, within [`OPERATION_DEADLINE`]. A connection that broke since
    /// its last use (the server restarted, a proxy cut it) is made again and `body` run once more,
    /// so `body` must be safe to repeat (every store's operations are: a transaction that did not
    /// commit changed nothing, and one that did is found done).
    pub fn run<R: Send + 'static>(
        &self,
        op: &'static str,
        mut body: impl FnMut(&mut Session) -> Result<R, postgres::Error> + Send + 'static,
    ) -> Result<R, TeamError> {
        let (done, result) = mpsc::sync_channel(1);
        let shown = self.shown.clone();
        let job: Job = Box::new(move |connection| {
            let mut attempt = |connection: &mut Connection| -> Result<R, (TeamError, bool)> {
                let (client, fresh) =
                    connection.client().map_err(|e| (TeamError::Unreachable { target: shown.clone(), cause: cause_of(&e) }, false))?;
                body(client).map_err(|e| {
                    // An error of the server (a constraint, a timeout it enforced) leaves the
                    // connection usable; any other means the connection is gone, and so does the
                    // server's own word that it ended this session (an administrator's
                    // `pg_terminate_backend`, a shutdown), read as the answer to the next statement.
                    let broken = e.as_db_error().is_none_or(|db| ends_the_session(db.code()));
                    if broken {
                        connection.client = None;
                    } else if let Some(session) = connection.client.as_mut() {
                        session.forget_statements();
                    }
                    let error = if broken {
                        TeamError::Unreachable { target: shown.clone(), cause: cause_of(&e) }
                    } else {
                        TeamError::Failed { target: shown.clone(), op, cause: cause_of(&e) }
                    };
                    (error, broken && !fresh)
                })
            };
            let outcome = match attempt(connection) {
                Err((_, true)) => attempt(connection).map_err(|(e, _)| e),
                other => other.map_err(|(e, _)| e),
            };
            let _ = done.send(outcome);
        });
        self.sender()?.send(job).map_err(|_| TeamError::Unreachable { target: self.shown.clone(), cause: "its thread ended".into() })?;
        match result.recv_timeout(OPERATION_DEADLINE) {
            Ok(outcome) => outcome,
            Err(_) => Err(TeamError::Deadline { target: self.shown.clone(), op }),
        }
    }

    /// Brings `component`'s tables to the last of `steps` (each one transaction of SQL, applied in
    /// order from the version the database records), once per handle; concurrent engines serialise
    /// on an advisory lock. A database a newer Chokepoint migrated further is refused.
    pub fn migrate(&self, component: &'static str, steps: &'static [&'static str]) -> Result<(), TeamError> {
        if self.migrated.lock().unwrap_or_else(|p| p.into_inner()).contains(component) {
            return Ok(());
        }
        let known = steps.len() as i64;
        // Most calls find the schema current: one read of every store's version, no lock and no
        // DDL, made once per handle (a hook's process, which uses two or three stores once each,
        // pays one round trip for all of them). A table not made yet is an error of the server,
        // not of the connection, and sends it down the locked path.
        let versions = {
            let mut read = self.versions.lock().unwrap_or_else(|p| p.into_inner());
            if read.is_none() {
                *read = Some(self.run("read its schema versions", move |client| {
                    match client.query_typed("SELECT component, version FROM chokepoint.schema_versions", &[]) {
                        Ok(rows) => Ok(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1))).collect()),
                        Err(e) if e.as_db_error().is_some() => Ok(HashMap::new()),
                        Err(e) => Err(e),
                    }
                })?);
            }
            read.clone().unwrap_or_default()
        };
        if versions.get(component) == Some(&known) {
            self.migrated.lock().unwrap_or_else(|p| p.into_inner()).insert(component);
            return Ok(());
        }
        let found = self.run("migrate its schema", move |client| {
            let mut tx = client.transaction()?;
            tx.batch_execute(
                "SELECT pg_advisory_xact_lock(hashtext('chokepoint.schema'));
                 CREATE SCHEMA IF NOT EXISTS chokepoint;
                 CREATE TABLE IF NOT EXISTS chokepoint.schema_versions (
                     component text PRIMARY KEY, version bigint NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now());",
            )?;
            let found: i64 = tx
                .query_opt("SELECT version FROM chokepoint.schema_versions WHERE component = $1", &[&component])?
                .map_or(0, |row| row.get(0));
            if found > known {
                return Ok(found);
            }
            for step in &steps[found as usize..] {
                tx.batch_execute(step)?;
            }
            if found < known {
                tx.execute(
                    "INSERT INTO chokepoint.schema_versions (component, version) VALUES ($1, $2)
                     ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated_at = now()",
                    &[&component, &known],
                )?;
            }
            tx.commit()?;
            Ok(found)
        })?;
        if found > known {
            return Err(TeamError::Schema { target: self.shown.clone(), component, found, known });
        }
        self.migrated.lock().unwrap_or_else(|p| p.into_inner()).insert(component);
        Ok(())
    }

    /// Connects (or uses the open connection) and reads every component's schema version, for
    /// `chokepoint doctor`: `Ok` says the database answers; an empty list, that no store made its
    /// tables yet.
    pub fn probe(&self) -> Result<Vec<(String, i64)>, TeamError> {
        self.run("read the schema versions", |client| {
            let exists: bool = client.query_one("SELECT to_regclass('chokepoint.schema_versions') IS NOT NULL", &[])?.get(0);
            if !exists {
                return Ok(Vec::new());
            }
            let rows = client.query("SELECT component, version FROM chokepoint.schema_versions ORDER BY component", &[])?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// A second connection of this database's, for a thread that waits on `LISTEN` (a connection
    /// waiting for notifications cannot serve operations meanwhile).
    pub fn connect_listener(&self) -> Result<postgres::Client, TeamError> {
        let mut connection = Connection {
            target: self.target.clone(),
            password: self.password.clone(),
            machine: self.settings.machine.clone(),
            client: None,
        };
        connection.client().map_err(|e| TeamError::Unreachable { target: self.shown.clone(), cause: cause_of(&e) })?;
        Ok(connection.client.take().expect("connected above").client)
    }
}

/// The deepest cause of a client error, which says what happened (`Connection refused`, the
/// server's message) where the client's own says only "error connecting to server".
fn cause_of(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{}: {}", db.code().code(), db.message());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = inner.to_string();
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_hooks_yaml_is_a_problem_and_never_shown() {
        let section = CoordinationConfig { url: Some("postgres://team:s3cret@db.example:5432/chokepoint".into()), ..Default::default() };
        let problems = section.problems();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("PGPASSWORD"), "{}", problems[0].message);
        assert_eq!(
            redact("postgres://team:s3cret@db.example:5432/chokepoint?sslmode=require"),
            "postgres://team:***@db.example:5432/chokepoint"
        );
        assert!(
            CoordinationConfig { url: Some("postgres://team@db.example/chokepoint".into()), ..Default::default() }.problems().is_empty()
        );
        let bad = CoordinationConfig { url: Some("postgres://team@db.example/chokepoint?sslmode=sometimes".into()), ..Default::default() };
        assert!(bad.problems()[0].message.contains("sslmode"), "{:?}", bad.problems());
    }

    #[test]
    fn every_clone_of_a_repository_names_it_alike() {
        for url in [
            "https://user:token@github.com/acme/web.git",
            "git@github.com:acme/web.git",
            "ssh://git@github.com/acme/web",
            "https://github.com/acme/web/",
        ] {
            assert_eq!(normalise_remote(url).as_deref(), Some("github.com/acme/web"), "{url}");
        }
        assert_eq!(normalise_remote("/srv/git/web.git").as_deref(), Some("/srv/git/web"));
    }

    #[test]
    fn the_verifying_ssl_modes_and_root_certificate_are_read_before_the_client_parses() {
        let (url, root, verify) = take_tls_params("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x");
        assert_eq!((url.as_str(), root, verify), ("postgres://u@h/db?application_name=x", Some(PathBuf::from("/tmp/ca.pem")), true));
        let err = Target::parse("postgres://u@h/db?sslmode=require&sslrootcert=/nonexistent/ca.pem").err().expect("no such file");
        assert!(err.to_string().contains("cannot read sslrootcert"), "{err}");
    }

    #[test]
    fn the_password_comes_from_the_environment_or_pgpass() {
        let dir = tempfile::tempdir().unwrap();
        let pgpass = dir.path().join("pgpass");
        std::fs::write(&pgpass, "# team\nother:5432:*:team:no\ndb.example:5433:chokepoint:team:pa\\:ss\n").unwrap();
        let config: postgres::Config = "postgres://team@db.example:5433/chokepoint".parse().unwrap();
        let file = pgpass.to_string_lossy().into_owned();
        let env = |k: &str| (k == "PGPASSFILE").then(|| file.clone());
        assert_eq!(password_for(&config, &env).as_deref(), Some("pa:ss"));
        let env = |k: &str| (k == "PGPASSWORD").then(|| "from-env".to_owned());
        assert_eq!(password_for(&config, &env).as_deref(), Some("from-env"));
    }
}
