// A step whose input is not the result of the stage before it does not compile: `Pay` takes
// a `u64`, but `Reserve` returns a `String`.
use jobs::prelude::*;
use jobs::Workflow;

#[job]
async fn reserve(order: u64) -> Result<String, JobError> {
    Ok(format!("reserved {order}"))
}

#[job]
async fn pay(amount: u64) -> Result<u64, JobError> {
    Ok(amount)
}

fn main() {
    let _ = Workflow::start(Reserve::new(1)).then::<Pay>();
}
