//! The addon's build script: napi-build's setup, and for Windows built with MinGW
//! (`x86_64-pc-windows-gnu`, how this Linux machine builds the Windows engine: scripts/package.js)
//! the one thing napi-build asks that we answer differently.
//!
//! On Windows the Node-API functions live in the program that loads the addon: `node.exe`, but in
//! VS Code `Code.exe` (Electron's extension host), and `Cursor.exe` or another fork's name
//! elsewhere. An addon that imports them from a named DLL fails to load in every other host: linked
//! against `libnode.dll` (what napi-build 2 links on windows-gnu) or against an import library of
//! `node.exe` (what node-gyp does, rescued there by a delay-load hook MinGW does not have), Windows
//! looks for that file at load time. So the addon imports no Node at all: napi's `dyn-symbols`
//! (Cargo.toml) finds every Node-API function in the host process at load time
//! (`GetModuleHandle(NULL)`), which is what napi-rs always does with Microsoft's toolchain. This
//! needs nothing downloaded: no `node.exe` to read exports from, no `libnode.dll` (which Node's
//! Windows releases do not ship).
//!
//! napi-build still insists on a `libnode.dll` to link with `-lnode` on windows-gnu, and fails the
//! build without one. With `dyn-symbols` no code refers to it, so an empty archive under that name
//! (in OUT_DIR, found through `LIBNODE_PATH`) satisfies the linker and adds no import: the PE import
//! table names no `node`/`libnode` DLL, which scripts/vsix.js checks in every packed Windows .vsix.

use std::{env, fs, path::PathBuf};

fn main() {
    let windows_gnu =
        env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") && env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if windows_gnu {
        let dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts")).join("no-libnode");
        fs::create_dir_all(&dir).expect("OUT_DIR is writable");
        // An `ar` archive with no member: the linker accepts it for `-lnode` and takes nothing from it.
        fs::write(dir.join("libnode.dll"), b"!<arch>\n").expect("OUT_DIR is writable");
        // SAFETY: a build script is one thread here; nothing reads the environment concurrently.
        #[allow(unsafe_code)]
        unsafe {
            env::set_var("LIBNODE_PATH", &dir)
        };
    }
    napi_build::setup();
}
