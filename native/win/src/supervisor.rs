//! `chokepoint exec` as the supervisor of a command on Windows: one its command cannot stop, and
//! that stops its command when the shell that started it ends. See the crate's doc.
//!
//! Windows runs a contained command in the open: no namespace hides the supervisor from it, and a
//! process may open any other process of its user with every right that process's DACL grants,
//! which by default (the token's default DACL) is all of them. A command could end its supervisor
//! (`TerminateProcess`, `taskkill`), suspend it or write into it, and with it the comparison and
//! the record of what the command changed: the job closes with the supervisor, so the command
//! dies too, but what it wrote stays, unreported. [`guard`] replaces the DACL of this process and
//! of each of its threads with one that grants this user, and the object's owner, only what waiting
//! for it and naming it take, and SYSTEM everything. The owner's entry is `OWNER RIGHTS`
//! (`S-1-3-4`): without it the owner could always rewrite the DACL (an implicit right), and then
//! terminate. This process keeps every right through its own pseudo-handles, and its job's handle
//! is its own, so it still ends the command.
//!
//! What it does not stop: a process with `SeDebugPrivilege` enabled (an elevated administrator's,
//! which needs no DACL), and threads this process starts after the call, which keep the default
//! DACL (the supervisor's waiting and reporting run on the thread that called it).
//!
//! The price: the agent cannot end `chokepoint exec` directly either. Agents run it from a shell
//! and cancel by ending that shell (or its tree: `taskkill /T`, which ends the command's processes
//! as well), so [`Parent`] lets the supervisor stop the command when that shell ends; its changes
//! are still compared and recorded.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::time::Duration;
use windows_sys::Win32::Foundation::{ERROR_INVALID_PARAMETER, FILETIME, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::Security::{DACL_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, SetKernelObjectSecurity};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetProcessTimes, OpenProcess, OpenThread, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
    THREAD_QUERY_LIMITED_INFORMATION, THREAD_SYNCHRONIZE, WaitForSingleObject,
};

use crate::security::{Descriptor, user_sid_string};
use crate::toolhelp::{parent_of, threads_of};

/// What this user's other processes may still do to the guarded process: wait for it, read its
/// basic information (its name, its exit code).
pub const PROCESS_GRANTED: u32 = PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION;
/// The same for each of its threads.
pub const THREAD_GRANTED: u32 = THREAD_SYNCHRONIZE | THREAD_QUERY_LIMITED_INFORMATION;

/// `WRITE_DAC`, the right to replace an object's DACL (a standard right windows-sys names only for files).
const WRITE_DAC: u32 = 0x0004_0000;

/// The DACL of a guarded object: `granted` to its owner and to the user `sid`, everything to SYSTEM,
/// nothing inherited.
fn dacl(granted: u32, sid: &str) -> String {
    format!("D:P(A;;0x{granted:08x};;;OW)(A;;0x{granted:08x};;;{sid})(A;;GA;;;SY)")
}

/// Guards this process and its threads against this user's other processes (the module's doc).
pub fn guard() -> io::Result<()> {
    let sid = user_sid_string()?;
    let thread = Descriptor::from_sddl(&dacl(THREAD_GRANTED, &sid))?;
    for id in threads_of(std::process::id())? {
        // SAFETY: plain integers in; the handle is checked, then owned once.
        let raw = unsafe { OpenThread(WRITE_DAC, 0, id) };
        if raw.is_null() {
            let error = io::Error::last_os_error();
            // A thread that ended since the snapshot is no longer there to guard.
            if error.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) {
                continue;
            }
            return Err(io::Error::other(format!("cannot open thread {id} to guard it: {error}")));
        }
        // SAFETY: `raw` is a valid handle that nothing else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
        set(handle.as_raw_handle() as HANDLE, &thread).map_err(|e| io::Error::other(format!("cannot guard thread {id}: {e}")))?;
    }
    let process = Descriptor::from_sddl(&dacl(PROCESS_GRANTED, &sid))?;
    // SAFETY: GetCurrentProcess returns a pseudo-handle with every right, which needs no closing.
    set(unsafe { GetCurrentProcess() }, &process).map_err(|e| io::Error::other(format!("cannot guard this process: {e}")))
}

fn set(handle: HANDLE, descriptor: &Descriptor) -> io::Result<()> {
    // SAFETY: the handle is valid for the call and the descriptor lives across it.
    let ok =
        unsafe { SetKernelObjectSecurity(handle, DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, descriptor.as_ptr()) };
    if ok == 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// The process that started this one, held open so that its end can be waited for.
#[derive(Debug)]
pub struct Parent {
    process: OwnedHandle,
}

impl Parent {
    /// The process that started this one, while it runs; `None` when it has ended (its pid gone,
    /// or taken by a process started after this one).
    pub fn of_this_process() -> io::Result<Option<Parent>> {
        let Some(pid) = parent_of(std::process::id())? else { return Ok(None) };
        // SAFETY: plain integers in; the handle is checked, then owned once.
        let raw = unsafe { OpenProcess(PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
        if raw.is_null() {
            let error = io::Error::last_os_error();
            return if error.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) { Ok(None) } else { Err(error) };
        }
        // SAFETY: `raw` is a valid handle that nothing else owns.
        let process = unsafe { OwnedHandle::from_raw_handle(raw) };
        // A parent never starts after its child: a process that did took a dead parent's pid.
        // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
        if created(process.as_raw_handle() as HANDLE)? > created(unsafe { GetCurrentProcess() })? {
            return Ok(None);
        }
        Ok(Some(Parent { process }))
    }

    /// Waits up to `wait` for it to end; whether it has.
    pub fn ended_within(&self, wait: Duration) -> bool {
        let millis = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX - 1);
        // SAFETY: the handle is valid for the call (held by `self`).
        unsafe { WaitForSingleObject(self.process.as_raw_handle() as HANDLE, millis) == WAIT_OBJECT_0 }
    }
}

/// When `process` was created, in 100-nanosecond intervals since 1601.
fn created(process: HANDLE) -> io::Result<u64> {
    let mut times = [FILETIME::default(); 4];
    let [creation, exit, kernel, user] = &mut times;
    // SAFETY: the handle is valid for the call; the four out pointers are distinct FILETIMEs.
    if unsafe { GetProcessTimes(process, creation, exit, kernel, user) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::from(creation.dwHighDateTime) << 32 | u64::from(creation.dwLowDateTime))
}
