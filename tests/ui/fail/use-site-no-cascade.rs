use jobs::prelude::*;

// One mistake in the attribute is one error: the struct, `new(..)` and `impl Job` are still
// generated, so the code that builds and enqueues the job compiles.
#[job(qeue = "email")]
async fn send_welcome_email(user_id: i64) -> Result<u64, JobError> {
    Ok(user_id as u64)
}

async fn signup(backend: &jobs::MemoryBackend) -> Result<u64, jobs::Error> {
    let job = SendWelcomeEmail::new(1);
    assert_eq!(job.user_id, 1);
    let handle = job.priority(1).enqueue(backend).await?;
    handle.wait(backend).await
}

fn main() {
    let _ = signup;
}
