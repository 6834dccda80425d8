//! What an installed pfsck tells about itself: `--version` names the
//! release and the commit it was built from (issue 16, "Installing").

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// The commit build.rs should have seen: HEAD of the checkout whose top
/// directory is this package, or none outside one (a tarball).
fn expected_commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let ours = git(&["rev-parse", "--show-toplevel"]).is_some_and(|top| {
        std::fs::canonicalize(top).ok() == std::fs::canonicalize(Path::new(dir)).ok()
    });
    ours.then(|| git(&["rev-parse", "--short", "HEAD"]))
        .flatten()
        .unwrap_or_else(|| "unknown".into())
}

#[test]
fn version_names_release_and_commit() {
    let want = format!(
        "pfsck {} (git {})\n",
        env!("CARGO_PKG_VERSION"),
        expected_commit()
    );
    for flag in ["-V", "--version"] {
        let out = pfsck(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{flag}");
        assert!(out.stderr.is_empty(), "{flag}");
    }
}

/// docs/pfsck.8 is what `--help-man` makes from the option table: run
/// `target/release/pfsck --help-man > docs/pfsck.8` after changing it.
#[test]
fn man_page_is_current() {
    let out = pfsck(&["--help-man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/pfsck.8");
    let committed = std::fs::read_to_string(&page).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "docs/pfsck.8 is stale: run `target/release/pfsck --help-man > docs/pfsck.8`"
    );
}

/// docs/pfsck.bash is what `--help-bash` makes from the option table: run
/// `target/release/pfsck --help-bash > docs/pfsck.bash` after changing it.
/// bash, sourcing it, completes options, `-E`'s names and files.
#[test]
fn bash_completion_is_current_and_completes() {
    let out = pfsck(&["--help-bash"]);
    assert_eq!(out.status.code(), Some(0));
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/pfsck.bash");
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "docs/pfsck.bash is stale: run `target/release/pfsck --help-bash > docs/pfsck.bash`"
    );
    let Some(bash) = try_tool("bash") else {
        eprintln!("NOTICE: bash not found: completion not tried");
        return;
    };
    let script = format!(
        "source '{}'\n\
         t() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _pfsck; echo \"${{COMPREPLY[*]}}\"; }}\n\
         t pfsck --thr; t pfsck -E journal_only,fix; t pfsck -m a; t pfsck -fn '{}/docs/pfsck.ba'\n",
        file.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(bash).args(["-c", &script]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], "--threads");
    assert_eq!(lines[1], "journal_only,fixes_only");
    assert_eq!(lines[2], "auto");
    assert!(lines[3].ends_with("docs/pfsck.bash"), "{text}");
}
