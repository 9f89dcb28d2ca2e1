//! `chokepoint task claim --agent A --task-type T [--task ID]`: an agent claims a task of a type, from
//! a scheduler or a script. The core checks the type's allowlist (the same check as selecting an
//! intent of that type) and records the verdict (`Engine::claim_task`); this prints it. Exit code: 0
//! claimed, 1 refused, 2 an undeclared type, a configuration that does not load, or a claim that
//! cannot be recorded.

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::ClaimRefusal;
use chokepoint_core::engine::claim::Claim;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Claim a task of a type for an agent: refused unless the type's `agents` in hooks.yaml names
    /// it (or lists none). Recorded in the trace ledger either way.
    Claim {
        /// The agent's id, as the type's `agents` list names it.
        #[arg(long)]
        agent: String,
        /// A `task_types` key of hooks.yaml.
        #[arg(long)]
        task_type: String,
        /// The task's id, recorded with the claim.
        #[arg(long)]
        task: Option<String>,
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

pub fn run(command: TaskCommand) -> ExitCode {
    let TaskCommand::Claim { agent, task_type, task, workspace } = command;
    crate::with_valid_engine(&workspace, |engine| {
        let claim = Claim { agent, task_type, task };
        match engine.claim_task(&claim) {
            Ok(Ok(())) => {
                let task = claim.task.as_deref().map_or("a task".to_owned(), |t| format!("task `{t}`"));
                println!("claimed: agent `{}` works on {task} of type `{}` (recorded in the trace ledger)", claim.agent, claim.task_type);
                ExitCode::SUCCESS
            }
            Ok(Err(refusal @ ClaimRefusal::UnknownType { .. })) => {
                eprintln!("error: {refusal}");
                ExitCode::from(EXIT_CONFIG)
            }
            Ok(Err(refusal)) => {
                eprintln!("refused: {refusal}");
                ExitCode::from(EXIT_DENY)
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_CONFIG)
            }
        }
    })
}
