//! Links the pfsck binary with `link/hot-text.ld` (made by
//! scripts/hot-text.py): the functions a check runs are placed together,
//! so a check keeps ~1 MiB less code resident (issue 4: peak RSS no higher
//! than e2fsck's). The layout changes nothing else.
//!
//! It also records the git commit the binary is built from, for
//! `pfsck --version` ("unknown" when built outside a git checkout, e.g. from
//! a release tarball or `cargo install` of a packaged crate).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Reruns when HEAD moves: a checkout rewrites HEAD itself, a commit the
/// branch ref HEAD names (or packed-refs). Outside a checkout, nothing to
/// watch, and cargo's default (any package file changed) stays.
fn watch_head() {
    let mut files = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        files.push(branch);
    }
    for f in files {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &f]) {
            // A missing file would make cargo rerun this script every build.
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}

/// The commit, only when this package is the checkout's top directory: a
/// tarball unpacked inside some other repository is not that repository.
fn own_commit() -> Option<String> {
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let here = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).ok()?;
    if std::fs::canonicalize(top).ok()? != here {
        return None;
    }
    watch_head();
    git(&["rev-parse", "--short", "HEAD"])
}

fn main() {
    println!(
        "cargo:rustc-env=PFSCK_GIT_COMMIT={}",
        own_commit().unwrap_or_else(|| "unknown".into())
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-text.ld");
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    let target = std::env::var("TARGET").unwrap_or_default();
    // GNU ld and lld read the INSERT form on ELF targets; elsewhere the
    // default layout stays.
    if target.contains("linux") && script.exists() {
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
}
