#[test]
fn probe() {
    trybuild::TestCases::new().compile_fail("tests/ui/probe/*.rs");
}
