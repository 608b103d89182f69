// A chain of upgrades, 1 → 2 → 3, each a plain typed fn; a job stored at any older version
// runs on this build's handler.
use jobs::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct GreetV1 {
    user: u64,
}

#[derive(Serialize, Deserialize)]
struct GreetV2 {
    user_id: u64,
}

/// Greets a user in their language.
#[job(version = 3)]
async fn greet(user_id: u64, greeting: String) -> Result<String, JobError> {
    Ok(format!("{greeting}, {user_id}"))
}

#[job_upgrade(from = 1)]
fn greet_v1(old: GreetV1) -> GreetV2 {
    GreetV2 { user_id: old.user }
}

#[job_upgrade(from = 2)]
fn greet_v2(old: GreetV2) -> Greet {
    Greet { user_id: old.user_id, greeting: "Hello".into() }
}

fn main() {
    use jobs::__private::Job;
    assert_eq!(<Greet as Job>::VERSION, 3);
    let schema = <Greet as Job>::schema().expect("a schema");
    assert_eq!(schema["required"], serde_json::json!(["user_id", "greeting"]));
    assert_eq!(schema["description"], "Greets a user in their language.");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let v1 = jobs::testing::perform_stored::<Greet>(serde_json::json!({ "user": 7 }), 1);
        assert_eq!(v1.await.unwrap(), "Hello, 7");
        let v2 = jobs::testing::perform_stored::<Greet>(serde_json::json!({ "user_id": 8 }), 2);
        assert_eq!(v2.await.unwrap(), "Hello, 8");
        let v3 = serde_json::json!({ "user_id": 9, "greeting": "Hej" });
        let v3 = jobs::testing::perform_stored::<Greet>(v3, 3);
        assert_eq!(v3.await.unwrap(), "Hej, 9");
        let bad = jobs::testing::perform_stored::<Greet>(serde_json::json!({ "usr": 1 }), 1);
        let e = bad.await.unwrap_err();
        assert!(e.to_string().contains("upgrade of job `greet` from version 1"), "{e}");
    });
}
