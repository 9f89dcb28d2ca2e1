//! Snapshots of the system's threads and processes (Tool Help): the threads of a process (std
//! gives no handle to them), and a process's parent.

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS, TH32CS_SNAPTHREAD, THREADENTRY32,
    Thread32First, Thread32Next,
};

fn snapshot(what: u32) -> io::Result<OwnedHandle> {
    // SAFETY: plain integers in; the handle is checked, then owned once.
    let raw = unsafe { CreateToolhelp32Snapshot(what, 0) };
    if raw == INVALID_HANDLE_VALUE || raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a valid handle that nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(raw) })
}

/// The ids of process `pid`'s threads, as the snapshot found them.
pub(crate) fn threads_of(pid: u32) -> io::Result<Vec<u32>> {
    let snapshot = snapshot(TH32CS_SNAPTHREAD)?;
    let mut entry = THREADENTRY32 { dwSize: size_of::<THREADENTRY32>() as u32, ..THREADENTRY32::default() };
    let mut out = Vec::new();
    // SAFETY: the snapshot handle is valid and `entry` is a THREADENTRY32 with its size set.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            out.push(entry.th32ThreadID);
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    }
    Ok(out)
}

/// The pid process `pid` names as its parent (the process that created it, which may have ended
/// since and its pid been reused: the caller checks), `None` when `pid` is not running.
pub(crate) fn parent_of(pid: u32) -> io::Result<Option<u32>> {
    let snapshot = snapshot(TH32CS_SNAPPROCESS)?;
    let mut entry = PROCESSENTRY32W { dwSize: size_of::<PROCESSENTRY32W>() as u32, ..PROCESSENTRY32W::default() };
    // SAFETY: the snapshot handle is valid and `entry` is a PROCESSENTRY32W with its size set.
    let mut more = unsafe { Process32FirstW(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    while more {
        if entry.th32ProcessID == pid {
            return Ok(Some(entry.th32ParentProcessID));
        }
        // SAFETY: as for Process32FirstW.
        more = unsafe { Process32NextW(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    }
    Ok(None)
}
