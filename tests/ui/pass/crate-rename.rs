//! `crate = "…"` for a renamed or re-exported `jobs`.

extern crate jobs as my_jobs;

mod framework {
    pub use ::jobs;
}

use my_jobs::Job;

#[my_jobs::job(crate = "my_jobs", queue = "renamed")]
async fn through_rename(n: i32) -> Result<i32, my_jobs::JobError> {
    Ok(n)
}

#[framework::jobs::job(crate = "crate::framework::jobs", unique)]
async fn through_reexport(s: String) {
    let _ = s;
}

fn main() {
    assert_eq!(ThroughRename::options().queue, "renamed");
    assert_eq!(<ThroughReexport as Job>::NAME, "through_reexport");
    let key = Job::unique_key(&ThroughReexport::new("x".into()));
    assert_eq!(key.as_deref(), Some(r#"through_reexport:{"s":"x"}"#));
    let names: Vec<&str> = jobs_core::registered().iter().map(|t| t.name).collect();
    assert!(names.contains(&"through_rename") && names.contains(&"through_reexport"));
}
