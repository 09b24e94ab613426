//! The plugin file checked before it is mapped.
//!
//! `dlopen` maps a library and runs its initialisers; a file cut short (a copy interrupted, a
//! full disk) is mapped past its end and the first touch of the missing pages kills the process
//! with SIGBUS, in `plugins list` and `check` alike. So the host first reads the file and parses
//! it with the `object` crate: it must be at most [`MAX_LIBRARY_BYTES`], a dynamic library of
//! this host's format and architecture, every loadable segment must lie inside the file, and it
//! must export the entry symbol. Only then is it handed to the loader.

use std::path::Path;

use object::{Architecture, BinaryFormat, Object, ObjectKind, ObjectSegment};
use tributary_sdk::plugin::abi::{ABI_VERSION, ENTRY_SYMBOL, ENTRY_SYMBOL_PREFIX};
use tributary_sdk::plugin::export::target;
use tributary_sdk::Result;

use crate::plugin::manifest::bad;

/// The largest plugin file read (a plugin library is tens of MiB at most).
pub(crate) const MAX_LIBRARY_BYTES: u64 = 1 << 30;

/// The object format libraries of this host have.
fn host_format() -> Option<BinaryFormat> {
    if cfg!(target_os = "macos") {
        Some(BinaryFormat::MachO)
    } else if cfg!(target_os = "windows") {
        Some(BinaryFormat::Pe)
    } else if cfg!(unix) {
        Some(BinaryFormat::Elf)
    } else {
        None
    }
}

/// The architecture of this host, where `object` names it.
fn host_architecture() -> Option<Architecture> {
    match std::env::consts::ARCH {
        "x86_64" => Some(Architecture::X86_64),
        "aarch64" => Some(Architecture::Aarch64),
        "x86" => Some(Architecture::I386),
        "arm" => Some(Architecture::Arm),
        "riscv64" => Some(Architecture::Riscv64),
        "powerpc64" => Some(Architecture::PowerPc64),
        "s390x" => Some(Architecture::S390x),
        _ => None,
    }
}

/// Checks the file at `path` (see the module docs); the error names the file and the reason.
pub(crate) fn check_library(path: &Path) -> Result<()> {
    let not_a_library = |why: &str| {
        bad(
            path,
            &format!(
                "it cannot be loaded as a shared library for this host ({}): {why}",
                target()
            ),
        )
    };
    let len = std::fs::metadata(path)
        .map_err(|e| not_a_library(&format!("it cannot be read: {e}")))?
        .len();
    if len > MAX_LIBRARY_BYTES {
        return Err(not_a_library(&format!(
            "it is {len} bytes, more than the {MAX_LIBRARY_BYTES} a plugin may be"
        )));
    }
    let data =
        std::fs::read(path).map_err(|e| not_a_library(&format!("it cannot be read: {e}")))?;
    check_library_bytes(path, &data)
}

/// [`check_library`] on the file's bytes, already read (`path` names it in errors).
pub(crate) fn check_library_bytes(path: &Path, data: &[u8]) -> Result<()> {
    let not_a_library = |why: &str| {
        bad(
            path,
            &format!(
                "it cannot be loaded as a shared library for this host ({}): {why}",
                target()
            ),
        )
    };
    let file = object::File::parse(data)
        .map_err(|e| not_a_library(&format!("it is not a complete object file ({e})")))?;
    if let Some(format) = host_format() {
        if file.format() != format {
            return Err(not_a_library(&format!(
                "it is a {:?} file, this host loads {format:?}",
                file.format()
            )));
        }
    }
    if let Some(arch) = host_architecture() {
        if file.architecture() != arch {
            return Err(not_a_library(&format!(
                "it was built for {:?}, this host is {arch:?}",
                file.architecture()
            )));
        }
    }
    if file.kind() != ObjectKind::Dynamic {
        return Err(not_a_library(&format!(
            "it is a {:?} object, not a dynamic library",
            file.kind()
        )));
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        if offset
            .checked_add(size)
            .is_none_or(|end| end > data.len() as u64)
        {
            return Err(not_a_library(&format!(
                "it is truncated: a segment of {size} bytes at offset {offset} ends past the \
                 file's {} bytes",
                data.len()
            )));
        }
    }
    let exports = file
        .exports()
        .map_err(|e| not_a_library(&format!("its exported symbols cannot be read ({e})")))?;
    let exported = |name: &str| exports.iter().any(|x| x.name() == name.as_bytes());
    if exported(ENTRY_SYMBOL) {
        return Ok(());
    }
    let other = (0..=32u32)
        .filter(|v| *v != ABI_VERSION)
        .find(|v| exported(&format!("{ENTRY_SYMBOL_PREFIX}{v}")));
    Err(match other {
        Some(v) => bad(
            path,
            &format!(
                "it exports {ENTRY_SYMBOL_PREFIX}{v} (a plugin for a different host generation), \
                 this host (plugin ABI version {ABI_VERSION}) needs {ENTRY_SYMBOL}"
            ),
        ),
        None => bad(
            path,
            &format!(
                "it does not export the symbol {ENTRY_SYMBOL}: it is not a Tributary plugin \
                 (plugins call tributary_sdk::export_plugin!; this host supports plugin ABI \
                 version {ABI_VERSION})"
            ),
        ),
    })
}
