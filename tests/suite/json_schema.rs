//! `--json`: one shape (docs/report.schema.json) for a check, a repair and
//! a run that could not check anything, with the schema version and the
//! file system's UUID, label and features. Each output is validated
//! against the schema with Python's `jsonschema` where it is installed,
//! and its keys against the schema's always.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn schema() -> (std::path::PathBuf, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    let v = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, v)
}

fn json(args: &[&str]) -> Value {
    let out = pfsck(args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The keys of `doc` are the schema's: all required ones, no others.
fn keys_match(doc: &Value, schema: &Value) {
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for r in &required {
        assert!(doc.get(r).is_some(), "missing {r}: {doc}");
    }
    for k in keys {
        assert!(
            schema["properties"].get(k).is_some(),
            "{k} not in the schema"
        );
    }
    assert_eq!(doc["schema_version"], 1);
}

fn dumpe2fs_field(img: &Path, field: &str) -> String {
    let out = Command::new(tool("dumpe2fs"))
        .arg("-h")
        .arg(img)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(field).map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

#[test]
fn json_reports_follow_the_schema() {
    let (schema_path, schema) = schema();
    let dir = TempDir::new("json-schema");
    let img = dir.join("img");
    let mut opts = MkfsOpts::ext4();
    opts.extra_args = vec!["-L".into(), "jsonlabel".into()];
    mkfs(&img, 16 << 20, &opts, Some(&standard_tree_dir()));
    let s = img.to_str().unwrap();
    let clean = json(&["-fn", "--json", s]);
    assert_eq!(clean["error"], Value::Null);
    let fs = &clean["filesystem"];
    assert_eq!(fs["label"], "jsonlabel");
    assert_eq!(
        fs["uuid"],
        dumpe2fs_field(&img, "Filesystem UUID:").as_str()
    );
    let features: Vec<&str> = fs["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        features.join(" "),
        dumpe2fs_field(&img, "Filesystem features:")
    );
    debugfs_w(&img, &["sif <12> links_count 5"]);
    let damaged = json(&["-fn", "-t", "--json", s]);
    assert_eq!(damaged["exit_code"], 4);
    let repaired = json(&["-fy", "--json", s, "-z", dir.join("undo").to_str().unwrap()]);
    assert_eq!(repaired["modified"], true);
    // Open failures: the same object, `error` set.
    let zero = dir.join("zero");
    std::fs::write(&zero, vec![0u8; 4 << 20]).unwrap();
    let zeroed = json(&["-fn", "--json", zero.to_str().unwrap()]);
    let missing = json(&["-fn", "--json", dir.join("missing").to_str().unwrap()]);
    for doc in [&zeroed, &missing] {
        assert!(doc["error"].is_string(), "{doc}");
        assert_eq!(doc["filesystem"], Value::Null);
        assert_eq!(doc["exit_code"], 8);
    }
    let docs = [clean, damaged, repaired, zeroed, missing];
    let mut files = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        keys_match(doc, &schema);
        let f = dir.join(format!("doc{k}.json"));
        std::fs::write(&f, doc.to_string()).unwrap();
        files.push(f);
    }
    let validate = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        for f in sys.argv[2:]:\n    jsonschema.validate(json.load(open(f)), schema)\n";
    let has = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("NOTICE: python3 jsonschema not found: outputs not validated");
        return;
    }
    let out = Command::new("python3")
        .args(["-c", validate])
        .arg(&schema_path)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
