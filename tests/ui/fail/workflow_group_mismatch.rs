// The step after a group takes the group's results in order: `Close` takes (String, u64) but
// the group returns (u64, String).
use jobs::prelude::*;
use jobs::Workflow;

#[job]
async fn start(order: u64) -> Result<u64, JobError> {
    Ok(order)
}

#[job]
async fn count(order: u64) -> Result<u64, JobError> {
    Ok(order)
}

#[job]
async fn name(order: u64) -> Result<String, JobError> {
    Ok(order.to_string())
}

#[job]
async fn close(name: String, count: u64) -> Result<(), JobError> {
    let _ = (name, count);
    Ok(())
}

fn main() {
    let _ = Workflow::start(Start::new(1))
        .then_all::<(Count, Name)>()
        .then::<Close>();
}
