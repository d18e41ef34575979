//! The checked-in JSON Schema matches the types. `MMSCHED_BLESS=1` regenerates it.

#[test]
fn checked_in_schema_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/mmtrace.schema.json");
    let fresh = mmsched_trace::schema::line_schema_json();
    if std::env::var_os("MMSCHED_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write schema");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == fresh,
        "{} is stale: run `MMSCHED_BLESS=1 cargo test -p mmsched-trace --test schema_current` and commit it",
        path.display()
    );
}
