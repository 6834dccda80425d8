//! Links the pfsck binary with `link/hot-text.ld` (made by
//! scripts/hot-text.py): the functions a check runs are placed together,
//! so a check keeps ~1 MiB less code resident (issue 4: peak RSS no higher
//! than e2fsck's). The layout changes nothing else.

fn main() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-text.ld");
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    let target = std::env::var("TARGET").unwrap_or_default();
    // GNU ld and lld read the INSERT form on ELF targets; elsewhere the
    // default layout stays.
    if target.contains("linux") && script.exists() {
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
}
