use jobs::prelude::*;

#[job]
async fn move_to((x, y): (i32, i32)) {
    let _ = (x, y);
}

fn main() {}
