//! The supervisor's guard (`supervisor.rs`), on this test process itself: a test binary of its own, so
//! the guard changes no other test's process. Run under Wine in the platforms layer (`npm test --
//! platforms`). The end-to-end cases, a command that tries to end `chokepoint exec` and an agent
//! that ends the shell that started it (`Parent`: under Wine a test binary's own parent is a Linux
//! process, no Windows one), are `native/cli/tests/supervisor.rs`.
#![cfg(windows)]
#![allow(unsafe_code)]

use chokepoint_win::supervisor::guard;
use std::time::Duration;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::Threading::{
    GetCurrentThreadId, OpenProcess, OpenThread, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SUSPEND_RESUME, PROCESS_SYNCHRONIZE,
    PROCESS_TERMINATE, PROCESS_VM_WRITE, THREAD_SUSPEND_RESUME, THREAD_SYNCHRONIZE, THREAD_TERMINATE,
};

const WRITE_DAC: u32 = 0x0004_0000;

/// Whether this process's user may open the object with `access`, as another of its processes
/// would (by id, so through the object's DACL, not through a pseudo-handle's rights).
fn opens(open: impl Fn() -> HANDLE) -> bool {
    let handle = open();
    if handle.is_null() {
        return false;
    }
    // SAFETY: a handle just opened, closed once.
    unsafe { CloseHandle(handle) };
    true
}

fn process(access: u32) -> bool {
    // SAFETY: plain integers in; the handle is checked by `opens`.
    opens(|| unsafe { OpenProcess(access, 0, std::process::id()) })
}

fn thread(access: u32, id: u32) -> bool {
    // SAFETY: plain integers in; the handle is checked by `opens`.
    opens(|| unsafe { OpenThread(access, 0, id) })
}

#[test]
fn a_guarded_process_and_its_threads_are_only_waited_for_and_named() {
    // SAFETY: no arguments; the id of the calling thread.
    let this = unsafe { GetCurrentThreadId() };
    let (tell, told) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        // SAFETY: as above.
        tell.send(unsafe { GetCurrentThreadId() }).unwrap();
        std::thread::sleep(Duration::from_secs(2));
    });
    let other = told.recv().unwrap();
    assert!(process(PROCESS_TERMINATE), "before: the user may end its own process");
    guard().unwrap();
    for (what, access) in [
        ("end", PROCESS_TERMINATE),
        ("suspend", PROCESS_SUSPEND_RESUME),
        ("write into", PROCESS_VM_WRITE),
        ("rewrite the DACL of", WRITE_DAC),
    ] {
        // Wine grants an object's owner the right to rewrite its DACL whatever the DACL says (it
        // does not read `OWNER RIGHTS`, which takes that right away on Windows).
        if cfg!(wine) && access == WRITE_DAC {
            continue;
        }
        assert!(!process(access), "the user may no longer {what} the process");
    }
    assert!(process(PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION), "waited for and named, still");
    for id in [this, other] {
        assert!(!thread(THREAD_TERMINATE, id), "thread {id} cannot be ended");
        assert!(!thread(THREAD_SUSPEND_RESUME, id), "thread {id} cannot be suspended");
        assert!(thread(THREAD_SYNCHRONIZE, id), "thread {id} can be waited for");
    }
    worker.join().unwrap();
}
