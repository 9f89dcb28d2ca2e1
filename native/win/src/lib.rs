//! The few Windows calls that std and the core's safe dependencies do not offer, behind a safe API,
//! so that `chokepoint-core` keeps `#![forbid(unsafe_code)]`. This crate is where Chokepoint's
//! `unsafe` lives on Windows, and it is kept small enough to audit in one reading: every block says
//! what it relies on.
//!
//! - [`Job`]: a process tree ended as one. A Job Object with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`:
//!   every process started by a process in the job is in it too (no breakaway is allowed), and
//!   [`Job::kill`], or dropping the job, ends them all, grandchildren that outlived their parent
//!   included. The process is started suspended ([`CREATE_SUSPENDED`]), put in the job, and only then
//!   resumed ([`Job::adopt`]), so it cannot start anything outside the job first.
//! - [`pipe`]: the live engine's named pipe, open only to this user: created with a DACL that grants
//!   the current user's SID alone (protected from inheritance), and each end's process checked to
//!   run as that same user (`GetNamedPipeClientProcessId` / `GetNamedPipeServerProcessId`, then the
//!   process token's user SID), as the Unix socket checks its peer's uid.
//! - [`supervisor`]: `chokepoint exec` guarded against the command it supervises (its process's
//!   and threads' DACLs grant its own user only waiting and naming, with `OWNER RIGHTS` so the
//!   owner cannot rewrite them), and the shell that started it watched, so that ending the shell
//!   still stops the command.
//!
//! On other platforms the crate is empty: a process group plays the job's part there.

#![cfg_attr(windows, allow(unsafe_code))]

#[cfg(windows)]
mod job;

#[cfg(windows)]
pub mod pipe;

#[cfg(windows)]
mod security;

#[cfg(windows)]
pub mod supervisor;

#[cfg(windows)]
mod toolhelp;

#[cfg(windows)]
pub use job::{CREATE_SUSPENDED, Job};
