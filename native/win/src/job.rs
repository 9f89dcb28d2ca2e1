//! A Job Object that ends its whole process tree: see the crate's doc.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectExtendedLimitInformation, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    OpenProcess, OpenThread, PROCESS_SET_QUOTA, PROCESS_TERMINATE, ResumeThread, THREAD_SUSPEND_RESUME,
};

use crate::toolhelp::threads_of;

/// The creation flag a process must be spawned with before [`Job::adopt`] (std's and tokio's
/// `Command::creation_flags`).
pub const CREATE_SUSPENDED: u32 = windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

/// The exit code of the processes a [`Job::kill`] ends (the one a timed-out command reports).
const KILLED: u32 = 1;

/// A Job Object whose processes all end when it is killed or dropped.
#[derive(Debug)]
pub struct Job {
    handle: OwnedHandle,
}

impl Job {
    /// A new, empty job that kills its processes when its last handle closes.
    pub fn new() -> io::Result<Job> {
        // SAFETY: both pointers may be null (default security, no name); the returned handle is
        // checked before it is owned, and owned once.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid job handle that nothing else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
        // SAFETY: a zeroed JOBOBJECT_EXTENDED_LIMIT_INFORMATION is a valid value (plain integers).
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
        // Only KILL_ON_JOB_CLOSE: no BREAKAWAY_OK, so a process in the job cannot start one outside it.
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the pointer and size describe `limits`, which lives across the call.
        let ok = unsafe {
            SetInformationJobObject(
                handle.as_raw_handle() as HANDLE,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Job { handle })
    }

    /// Puts the process `pid`, spawned with [`CREATE_SUSPENDED`] and not yet waited for (so the id
    /// still names it: the caller holds its handle), in this job, then resumes it. On an error the
    /// process is still suspended, outside the job: the caller kills it.
    pub fn adopt(&self, pid: u32) -> io::Result<()> {
        // SAFETY: OpenProcess takes plain integers; its handle is checked, then owned once.
        let process = unsafe { OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, 0, pid) };
        if process.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `process` is a valid handle that nothing else owns.
        let process = unsafe { OwnedHandle::from_raw_handle(process) };
        // SAFETY: both handles are valid for the call.
        if unsafe { AssignProcessToJobObject(self.handle.as_raw_handle() as HANDLE, process.as_raw_handle() as HANDLE) } == 0 {
            return Err(io::Error::last_os_error());
        }
        resume_threads(pid)
    }

    /// Ends every process in the job now. Also what dropping it does (KILL_ON_JOB_CLOSE), for the
    /// processes no other handle keeps the job open for.
    pub fn kill(&self) -> io::Result<()> {
        // SAFETY: the handle is valid for the call.
        if unsafe { TerminateJobObject(self.handle.as_raw_handle() as HANDLE, KILLED) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Resumes the threads of the suspended process `pid` (a process created suspended has one, its
/// main thread; std does not give us its handle, so it is found by a snapshot of the threads).
fn resume_threads(pid: u32) -> io::Result<()> {
    let threads = threads_of(pid)?;
    if threads.is_empty() {
        return Err(io::Error::other(format!("process {pid} has no thread to resume")));
    }
    for id in threads {
        // SAFETY: plain integers in; the handle is checked, then owned once.
        let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, id) };
        if thread.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `thread` is a valid handle that nothing else owns.
        let thread = unsafe { OwnedHandle::from_raw_handle(thread) };
        // SAFETY: the handle is valid for the call.
        if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } == u32::MAX {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
