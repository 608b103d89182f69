//! The order's workflow: stock check → payment → confirmation e-mail and PDF side by side →
//! order complete, with the stock released should the payment end dead.
//!
//! Each step records its side effect through the [`Shop`]; on PostgreSQL the record commits
//! with the step's completion (and so with the next step's input), so a step that runs again
//! after a crash records nothing twice.

use jobs::prelude::*;
use jobs::Workflow;
use serde::{Deserialize, Serialize};

use crate::shop::{Effect, Shop};

/// What the customer ordered.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Order {
    pub(crate) order_id: String,
    pub(crate) items: u32,
    pub(crate) card: String,
}

/// Stock held for an order.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Reserved {
    order_id: String,
    items: u32,
    card: String,
}

/// A payment taken.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Paid {
    order_id: String,
    payment_id: i64,
}

/// A confirmation sent.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Sent {
    order_id: String,
    message: String,
}

/// An invoice rendered.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Invoice {
    order_id: String,
    path: String,
}

/// The card that the example's payment provider always declines.
pub(crate) const DECLINED_CARD: &str = "4000-0000-0000-0002";

/// The whole workflow of one order; its result is the order's completion note.
pub(crate) fn order_workflow(order: Order) -> Workflow<String> {
    Workflow::start(CheckStock::new(order))
        .compensate::<ReleaseStock>()
        .then::<TakePayment>()
        .then_all::<(SendConfirmation, RenderPdf)>()
        .then::<CompleteOrder>()
}

/// Holds the order's items.
#[job(queue = "orders", attempts = 5, backoff = "exponential(50ms)")]
async fn check_stock(
    order: Order,
    shop: State<Shop>,
    ctx: JobContext,
) -> Result<Reserved, JobError> {
    if order.items == 0 {
        return Err(JobError::fatal("an order needs at least one item"));
    }
    ctx.progress(50).await?;
    shop.record(&ctx, &order.order_id, Effect::StockReserved)
        .await?;
    Ok(Reserved {
        order_id: order.order_id,
        items: order.items,
        card: order.card,
    })
}

/// Gives the held items back (the compensation of `check_stock`).
#[job(queue = "orders", attempts = 5, backoff = "exponential(50ms)")]
async fn release_stock(
    reserved: Reserved,
    shop: State<Shop>,
    ctx: JobContext,
) -> Result<u32, JobError> {
    shop.record(&ctx, &reserved.order_id, Effect::StockReleased)
        .await?;
    Ok(reserved.items)
}

/// Charges the card, idempotently by the order's id: a repeated attempt gets the payment the
/// provider already made. A declined card ends the step dead at once.
#[job(queue = "orders", attempts = 5, backoff = "exponential(50ms)")]
async fn take_payment(
    reserved: Reserved,
    shop: State<Shop>,
    ctx: JobContext,
) -> Result<Paid, JobError> {
    if reserved.card == DECLINED_CARD {
        return Err(JobError::fatal("card declined"));
    }
    let cents = i64::from(reserved.items) * 1_250;
    let payment_id = shop.charge(&reserved.order_id, cents).await?;
    ctx.progress(80).await?;
    shop.record(&ctx, &reserved.order_id, Effect::Payment)
        .await?;
    Ok(Paid {
        order_id: reserved.order_id,
        payment_id,
    })
}

/// Sends the confirmation e-mail.
#[job(queue = "email", attempts = 5, backoff = "exponential(50ms)")]
async fn send_confirmation(
    paid: Paid,
    shop: State<Shop>,
    ctx: JobContext,
) -> Result<Sent, JobError> {
    shop.record(&ctx, &paid.order_id, Effect::Email).await?;
    Ok(Sent {
        message: format!("confirmation of payment {}", paid.payment_id),
        order_id: paid.order_id,
    })
}

/// Renders the invoice PDF; returns its path.
#[job(queue = "pdf", attempts = 5, backoff = "exponential(50ms)")]
async fn render_pdf(paid: Paid, shop: State<Shop>, ctx: JobContext) -> Result<Invoice, JobError> {
    ctx.progress(50).await?;
    shop.record(&ctx, &paid.order_id, Effect::Pdf).await?;
    Ok(Invoice {
        path: format!("invoices/{}.pdf", paid.order_id),
        order_id: paid.order_id,
    })
}

/// Marks the order complete once the e-mail is sent and the PDF rendered.
#[job(queue = "orders", attempts = 5, backoff = "exponential(50ms)")]
async fn complete_order(
    sent: Sent,
    invoice: Invoice,
    shop: State<Shop>,
    ctx: JobContext,
) -> Result<String, JobError> {
    shop.record(&ctx, &invoice.order_id, Effect::Completed)
        .await?;
    Ok(format!("{}; invoice at {}", sent.message, invoice.path))
}

/// A worker running every step of the workflow.
pub(crate) fn worker(backend: &jobs::AnyBackend, shop: Shop) -> jobs::Worker {
    jobs::Worker::new(backend.clone())
        .queues(["orders", "email", "pdf"])
        .concurrency(16)
        .state(shop)
}
