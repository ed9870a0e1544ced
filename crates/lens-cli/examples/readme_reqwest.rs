//! lens-reqwest: a CLIENT span and W3C headers on every outgoing reqwest call.
use lens_reqwest::ClientMiddleware;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ClientMiddleware::new()) // after any retry middleware: one CLIENT span per attempt
        .build();
    // The span's parent is Context::current(), or a Context given with .with_extension(cx).
    let response = client.get("http://127.0.0.1:8080/hello").send().await?;
    println!("{}", response.status());
    Ok(())
}
