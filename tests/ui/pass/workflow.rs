// A typed workflow of `#[job]` fns: a chain, a group whose results reach the step after it in
// order, and a compensation; run to its end on the memory backend.
use jobs::prelude::*;
use jobs::{MemoryBackend, Worker, Workflow, WorkflowState};

#[job]
async fn reserve(order: u64) -> Result<u64, JobError> {
    Ok(order * 10)
}

#[job]
async fn release(reservation: u64) -> Result<(), JobError> {
    let _ = reservation;
    Ok(())
}

#[job]
async fn pay(reservation: u64) -> Result<String, JobError> {
    Ok(format!("receipt-{reservation}"))
}

#[job]
async fn email(receipt: String) -> Result<bool, JobError> {
    Ok(!receipt.is_empty())
}

#[job]
async fn pdf(receipt: String) -> Result<String, JobError> {
    Ok(format!("{receipt}.pdf"))
}

#[job]
async fn finish(sent: bool, pdf: String) -> Result<String, JobError> {
    Ok(format!("{pdf} sent={sent}"))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let backend = MemoryBackend::new();
        let order = Workflow::start(Reserve::new(4))
            .compensate::<Release>()
            .then::<Pay>()
            .then_all::<(Email, Pdf)>()
            .then::<Finish>()
            .enqueue(&backend)
            .await
            .unwrap();
        let worker = Worker::new(backend.clone()).poll_interval(std::time::Duration::from_millis(5));
        let running = tokio::spawn(worker.run_until(std::future::pending::<()>()));
        assert_eq!(order.wait(&backend).await.unwrap(), "receipt-40.pdf sent=true");
        let status = order.status(&backend).await.unwrap().unwrap();
        assert_eq!(status.state, WorkflowState::Completed);
        running.abort();
    });
}
