//! `chokepoint doctor`'s coordination section: which store the agents of this repository coordinate
//! on (its own SQLite file, or a team's PostgreSQL database), and for a team's: which database
//! (its URL without a password, and whether the URL came from the environment or hooks.yaml), the
//! repository's namespace, this machine's name, whether it answers now (with the cause when it does
//! not), each store's schema version and what a gate does while it cannot be reached. A team's
//! database that does not answer (one read of the schema versions) exits 1.

use chokepoint_core::base::team::{Team, TeamError};
use serde_json::{Value, json};

/// What doctor found.
#[derive(Debug, Default)]
pub enum Coordination {
    /// No team's database: this repository's SQLite file (or the engine could not be opened).
    #[default]
    Local,
    Team {
        database: String,
        source: &'static str,
        namespace: String,
        machine: String,
        unreachable: &'static str,
        reached: Result<Vec<(String, i64)>, TeamError>,
    },
    Broken(TeamError),
}

pub fn examine(team: &Team) -> Coordination {
    match team {
        Team::Off => Coordination::Local,
        Team::Broken(e) => Coordination::Broken(e.clone()),
        Team::On(db) => Coordination::Team {
            database: db.shown().to_owned(),
            source: db.settings().source,
            namespace: db.namespace().to_owned(),
            machine: db.machine().to_owned(),
            unreachable: db.unreachable().as_str(),
            reached: db.probe(),
        },
    }
}

impl Coordination {
    /// Whether the gates that need a lease cannot work as configured: a setting that cannot work,
    /// or a database that does not answer.
    pub fn failing(&self) -> bool {
        matches!(self, Coordination::Broken(_) | Coordination::Team { reached: Err(_), .. })
    }

    /// Whether a team's database is configured and usable as configured (reachable or not).
    pub fn is_team(&self) -> bool {
        matches!(self, Coordination::Team { .. })
    }

    pub fn json(&self) -> Value {
        match self {
            Coordination::Local => json!({ "mode": "local" }),
            Coordination::Broken(e) => json!({ "mode": "broken", "error": e.to_string() }),
            Coordination::Team { database, source, namespace, machine, unreachable, reached } => json!({
                "mode": "team",
                "database": database,
                "source": source,
                "namespace": namespace,
                "machine": machine,
                "unreachable": unreachable,
                "reachable": reached.is_ok(),
                "error": reached.as_ref().err().map(ToString::to_string),
                "schema_versions": reached.as_ref().ok().map(|v| v.iter().map(|(c, n)| (c.clone(), json!(n))).collect::<serde_json::Map<_, _>>()),
            }),
        }
    }

    pub fn print(&self) {
        match self {
            Coordination::Local => {
                println!("coordination: this repository's own state (no coordination.url): agents on other machines are not seen")
            }
            Coordination::Broken(e) => println!("coordination: failing: {e}"),
            Coordination::Team { database, source, namespace, machine, unreachable, reached } => {
                println!("coordination: the team's database {database} (from {source}), repository `{namespace}`, machine `{machine}`");
                match reached {
                    Ok(versions) => {
                        let versions: Vec<String> = versions.iter().map(|(c, n)| format!("{c} {n}")).collect();
                        let versions = if versions.is_empty() { "no tables yet".to_owned() } else { versions.join(", ") };
                        println!("  reachable; schema versions: {versions}");
                    }
                    Err(e) => println!("  failing: {e}"),
                }
                let meaning = match *unreachable {
                    "local" => "coordinate on this machine alone, saying so in every answer",
                    _ => "deny every write that needs a lease",
                };
                println!("  while it cannot be reached: {unreachable} ({meaning})");
            }
        }
    }
}
