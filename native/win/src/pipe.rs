//! A named pipe open only to this user: see the crate's doc.

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Security::{EqualSid, SECURITY_ATTRIBUTES};
use windows_sys::Win32::System::Pipes::{GetNamedPipeClientProcessId, GetNamedPipeServerProcessId};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};

use crate::security::{Descriptor, sid_of, token_user, user_sid_string};

/// Creates an instance of the pipe `name` with `options`, its DACL granting this user alone
/// (`D:P(A;;GA;;;<our SID>)`: no inherited entry, no one else, not even administrators by ACL).
pub fn create(options: &ServerOptions, name: &str) -> io::Result<NamedPipeServer> {
    let descriptor = Descriptor::from_sddl(&format!("D:P(A;;GA;;;{})", user_sid_string()?))?;
    let mut attributes = SECURITY_ATTRIBUTES {
        nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: descriptor.as_ptr(),
        bInheritHandle: 0,
    };
    // SAFETY: `attributes` is a valid SECURITY_ATTRIBUTES whose descriptor lives until after the call.
    unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) }
}

/// The client process of a connected pipe when it runs as this user; `None` otherwise (or when
/// that cannot be read: refused, never assumed).
pub fn client_if_ours(pipe: &impl AsHandle) -> Option<u32> {
    let mut pid = 0u32;
    // SAFETY: the handle is borrowed, valid for the call; `pid` is a valid out pointer.
    if unsafe { GetNamedPipeClientProcessId(pipe.as_handle().as_raw_handle() as HANDLE, &mut pid) } == 0 {
        return None;
    }
    runs_as_us(pid).ok()?.then_some(pid)
}

/// The server process of a pipe we connected to when it runs as this user; `Err` says why not (a
/// pipe of that name another user created first is refused, never talked to).
pub fn server_if_ours(pipe: &impl AsHandle) -> io::Result<u32> {
    let mut pid = 0u32;
    // SAFETY: the handle is borrowed, valid for the call; `pid` is a valid out pointer.
    if unsafe { GetNamedPipeServerProcessId(pipe.as_handle().as_raw_handle() as HANDLE, &mut pid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    if runs_as_us(pid)? {
        Ok(pid)
    } else {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("the pipe's server (process {pid}) runs as another user")))
    }
}

/// Whether process `pid` runs as this process's user (its token's user SID equals ours).
fn runs_as_us(pid: u32) -> io::Result<bool> {
    // SAFETY: plain integers in; the handle is checked, then owned once.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid process handle nothing else owns.
    let process = unsafe { OwnedHandle::from_raw_handle(process) };
    let theirs = token_user(process.as_raw_handle() as HANDLE)?;
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
    let ours = token_user(unsafe { GetCurrentProcess() })?;
    // SAFETY: both buffers hold a TOKEN_USER (checked by `token_user`) whose SID points inside them.
    Ok(unsafe { EqualSid(sid_of(&theirs), sid_of(&ours)) } != 0)
}
