//! A named pipe open only to this user: see the crate's doc.

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
use windows_sys::Win32::Foundation::{HANDLE, LocalFree};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{EqualSid, GetTokenInformation, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser};
use windows_sys::Win32::System::Pipes::{GetNamedPipeClientProcessId, GetNamedPipeServerProcessId};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION};

/// Creates an instance of the pipe `name` with `options`, its DACL granting this user alone
/// (`D:P(A;;GA;;;<our SID>)`: no inherited entry, no one else, not even administrators by ACL).
pub fn create(options: &ServerOptions, name: &str) -> io::Result<NamedPipeServer> {
    let sid = user_sid_string()?;
    let sddl: Vec<u16> = format!("D:P(A;;GA;;;{sid})").encode_utf16().chain(Some(0)).collect();
    let mut descriptor = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated and lives across the call; the descriptor it returns is
    // freed below with LocalFree, as the API requires, after the pipe is created.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl.as_ptr(), SDDL_REVISION_1, &mut descriptor, std::ptr::null_mut())
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let mut attributes =
        SECURITY_ATTRIBUTES { nLength: size_of::<SECURITY_ATTRIBUTES>() as u32, lpSecurityDescriptor: descriptor, bInheritHandle: 0 };
    // SAFETY: `attributes` is a valid SECURITY_ATTRIBUTES whose descriptor lives until after the call.
    let created = unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) };
    // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW, freed once.
    unsafe { LocalFree(descriptor) };
    created
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

/// This process's user SID as a string (`S-1-5-21-…`).
fn user_sid_string() -> io::Result<String> {
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
    let user = token_user(unsafe { GetCurrentProcess() })?;
    let mut text = std::ptr::null_mut();
    // SAFETY: the SID is valid (inside `user`); the string it returns is freed with LocalFree.
    if unsafe { ConvertSidToStringSidW(sid_of(&user), &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `text` is a NUL-terminated UTF-16 string from the call above.
    let len = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
    // SAFETY: `len` u16s were read above.
    let sid = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, len) });
    // SAFETY: allocated by ConvertSidToStringSidW, freed once.
    unsafe { LocalFree(text.cast()) };
    Ok(sid)
}

/// The TOKEN_USER of `process`'s token, in a buffer aligned for it (u64s).
fn token_user(process: HANDLE) -> io::Result<Vec<u64>> {
    let mut token = std::ptr::null_mut();
    // SAFETY: `process` is valid for the call; `token` is a valid out pointer, owned once below.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a valid token handle nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut needed = 0u32;
    // SAFETY: a size query: no buffer, `needed` a valid out pointer (it fails, saying the size).
    unsafe { GetTokenInformation(token.as_raw_handle() as HANDLE, TokenUser, std::ptr::null_mut(), 0, &mut needed) };
    if (needed as usize) < size_of::<TOKEN_USER>() {
        return Err(io::Error::last_os_error());
    }
    let mut buffer = vec![0u64; (needed as usize).div_ceil(8)];
    // SAFETY: the buffer holds `needed` bytes, aligned for TOKEN_USER.
    if unsafe { GetTokenInformation(token.as_raw_handle() as HANDLE, TokenUser, buffer.as_mut_ptr().cast(), needed, &mut needed) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buffer)
}

/// The SID of a TOKEN_USER buffer from [`token_user`].
fn sid_of(user: &[u64]) -> windows_sys::Win32::Security::PSID {
    // SAFETY: `user` holds a TOKEN_USER written by GetTokenInformation, aligned for it.
    unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid }
}
