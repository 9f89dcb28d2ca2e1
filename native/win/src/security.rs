//! Security descriptors from SDDL text, and this process's user: what the pipe's and the
//! supervisor's access control are written with.

use std::io;
use std::mem::size_of;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use windows_sys::Win32::Foundation::{HANDLE, LocalFree};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{GetTokenInformation, PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY, TOKEN_USER, TokenUser};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// A security descriptor parsed from SDDL, freed when dropped.
pub(crate) struct Descriptor(PSECURITY_DESCRIPTOR);

impl Descriptor {
    pub(crate) fn from_sddl(sddl: &str) -> io::Result<Descriptor> {
        let text: Vec<u16> = sddl.encode_utf16().chain(Some(0)).collect();
        let mut descriptor = std::ptr::null_mut();
        // SAFETY: `text` is NUL-terminated and lives across the call; the descriptor it returns is
        // owned by the value made of it, which frees it once (Drop).
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(text.as_ptr(), SDDL_REVISION_1, &mut descriptor, std::ptr::null_mut())
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Descriptor(descriptor))
    }

    /// The descriptor, valid while `self` lives.
    pub(crate) fn as_ptr(&self) -> PSECURITY_DESCRIPTOR {
        self.0
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW, freed once.
        unsafe { LocalFree(self.0) };
    }
}

/// This process's user SID as a string (`S-1-5-21-…`).
pub(crate) fn user_sid_string() -> io::Result<String> {
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
pub(crate) fn token_user(process: HANDLE) -> io::Result<Vec<u64>> {
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
pub(crate) fn sid_of(user: &[u64]) -> PSID {
    // SAFETY: `user` holds a TOKEN_USER written by GetTokenInformation, aligned for it.
    unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid }
}
