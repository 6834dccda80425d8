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

/// The man page installs as the README says (`install -m 644 docs/pfsck.8`
/// into a man8 directory): man(1) finds it there, groff renders it
/// without a warning, and the page names every option `--help` lists.
#[test]
fn man_page_installs_and_renders() {
    let (Some(install), Some(man), Some(groff)) =
        (try_tool("install"), try_tool("man"), try_tool("groff"))
    else {
        eprintln!("NOTICE: install, man or groff not found: man page not tried");
        return;
    };
    let dir = TempDir::new("install-man");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = dir.join("share/man/man8/pfsck.8");
    let st = Command::new(install)
        .arg("-Dm644")
        .arg(root.join("docs/pfsck.8"))
        .arg(&page)
        .status()
        .unwrap();
    assert!(st.success());
    let found = Command::new(&man)
        .args(["-w", "pfsck"])
        .env("MANPATH", dir.join("share/man"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&found.stdout).trim(),
        page.display().to_string(),
        "man -w: {}",
        String::from_utf8_lossy(&found.stderr)
    );
    let warn = Command::new(groff)
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(warn.status.success() && warn.stderr.is_empty(), "{warn:?}");
    let shown = Command::new(&man)
        .arg("pfsck")
        .env("MANPATH", dir.join("share/man"))
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.starts_with("PFSCK(8)"), "{text}");
    let help = String::from_utf8_lossy(&pfsck(&["--help"]).stdout).into_owned();
    for opt in [
        "-n", "-y", "-p", "-f", "-C", "-E", "-l", "-c", "-j", "--json",
    ] {
        assert!(help.contains(opt), "--help lacks {opt}");
        assert!(text.contains(opt), "the man page lacks {opt}:\n{text}");
    }
}

/// Linked as `fsck.ext4` in a directory early in PATH, pfsck is what
/// fsck(8) runs (the README's install, without root): `fsck -N` names the
/// link, and options after `--` reach pfsck (`--json` is pfsck's alone).
#[test]
fn fsck_runs_the_fsck_ext4_link() {
    let Some(fsck) = try_tool("fsck") else {
        eprintln!("NOTICE: fsck not found: the link not tried");
        return;
    };
    let dir = TempDir::new("install-fsck");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(pfsck_bin(), bin.join("fsck.ext4")).unwrap();
    let img = dir.join("img");
    mkfs(&img, 8 << 20, &MkfsOpts::ext4(), None);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        Command::new(&fsck)
            .args(args)
            .env("PATH", &path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let img_s = img.to_str().unwrap();
    let dry = run(&["-N", "-t", "ext4", img_s]);
    let dry_text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry_text.contains(&format!("{}/fsck.ext4", bin.display())),
        "{dry_text}"
    );
    let out = run(&["-t", "ext4", img_s, "--", "-fn", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // fsck(8)'s own "fsck from util-linux" line comes first.
    let json = &text[text.find('{').unwrap_or(0)..];
    let v: serde_json::Value = serde_json::from_str(json).expect("pfsck's JSON");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["device"], img_s);
}
