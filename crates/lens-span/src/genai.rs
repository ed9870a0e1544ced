//! The GenAI opt-in: a call the user says is a GenAI operation (its operation name, provider
//! and, where known, model) gets the GenAI semantic conventions' attributes and, when its
//! response is streamed ([`crate::stream`]), their time-to-first-chunk figures, recorded from
//! the same marks:
//!
//! - span attributes `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`
//!   (when given), and on a streamed response `gen_ai.response.time_to_first_chunk` (s, the
//!   same figure as `lens.stream.time_to_first_chunk`);
//! - with the adapter's metrics on, histograms in seconds with the conventions' bucket advice:
//!   on a client `gen_ai.client.operation.time_to_first_chunk` and
//!   `gen_ai.client.operation.time_per_output_chunk`, on a server
//!   `gen_ai.server.time_to_first_token` and `gen_ai.server.time_per_output_token` (a chunk
//!   counted as a token: what a transport sees), with `gen_ai.operation.name`,
//!   `gen_ai.provider.name`, `gen_ai.request.model` and, on a client, `server.address` and
//!   `server.port`. The time to the first chunk is recorded when it arrives (or leaves); the
//!   time per chunk after the first, `(end − first chunk) / (chunks − 1)`, when a stream ends
//!   complete. Like the conventions say, nothing is recorded for a response that is not streamed.
//!
//! The conventions are those of the GenAI semantic-conventions repository (status
//! Development); the names are written out here rather than taken from the deprecated
//! constants of `opentelemetry-semantic-conventions`.

use std::borrow::Cow;

use opentelemetry::KeyValue;

/// `gen_ai.operation.name`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`.
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.time_to_first_chunk` (span attribute, s).
pub const RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
/// `gen_ai.client.operation.time_to_first_chunk` (histogram, s).
pub const CLIENT_TIME_TO_FIRST_CHUNK: &str = "gen_ai.client.operation.time_to_first_chunk";
/// `gen_ai.client.operation.time_per_output_chunk` (histogram, s).
pub const CLIENT_TIME_PER_OUTPUT_CHUNK: &str = "gen_ai.client.operation.time_per_output_chunk";
/// `gen_ai.server.time_to_first_token` (histogram, s).
pub const SERVER_TIME_TO_FIRST_TOKEN: &str = "gen_ai.server.time_to_first_token";
/// `gen_ai.server.time_per_output_token` (histogram, s).
pub const SERVER_TIME_PER_OUTPUT_TOKEN: &str = "gen_ai.server.time_per_output_token";

/// The conventions' bucket advice for the time to the first token or chunk (s).
pub const TIME_TO_FIRST_BUCKETS_S: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// The conventions' bucket advice for the time per output token or chunk (s).
pub const TIME_PER_OUTPUT_BUCKETS_S: [f64; 13] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];

/// A GenAI operation, as the user names it: the conventions' `gen_ai.operation.name` (`chat`,
/// `text_completion`, `generate_content`, `embeddings`, ...), `gen_ai.provider.name`
/// (`openai`, `aws.bedrock`, or the user's own: `vllm`, `sglang`, ...) and, where known,
/// `gen_ai.request.model`.
///
/// ```
/// use lens_span::genai::GenAi;
///
/// let op = GenAi::new("chat", "vllm").with_model("llama-3.1-8b");
/// assert_eq!(op.operation_name(), "chat");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GenAi {
    operation_name: Cow<'static, str>,
    provider_name: Cow<'static, str>,
    request_model: Option<Cow<'static, str>>,
}

impl GenAi {
    /// Operation `operation_name` served by `provider_name`.
    pub fn new(
        operation_name: impl Into<Cow<'static, str>>,
        provider_name: impl Into<Cow<'static, str>>,
    ) -> Self {
        GenAi {
            operation_name: operation_name.into(),
            provider_name: provider_name.into(),
            request_model: None,
        }
    }

    /// The model the request asks for (`gen_ai.request.model`).
    pub fn with_model(mut self, model: impl Into<Cow<'static, str>>) -> Self {
        self.request_model = Some(model.into());
        self
    }

    /// `gen_ai.operation.name`.
    pub fn operation_name(&self) -> &str {
        &self.operation_name
    }

    /// `gen_ai.provider.name`.
    pub fn provider_name(&self) -> &str {
        &self.provider_name
    }

    /// `gen_ai.request.model`, when given.
    pub fn request_model(&self) -> Option<&str> {
        self.request_model.as_deref()
    }

    /// The attributes: operation, provider, model when given.
    pub(crate) fn push_attributes(&self, attributes: &mut Vec<KeyValue>) {
        attributes.push(KeyValue::new(OPERATION_NAME, self.operation_name.clone()));
        attributes.push(KeyValue::new(PROVIDER_NAME, self.provider_name.clone()));
        if let Some(model) = &self.request_model {
            attributes.push(KeyValue::new(REQUEST_MODEL, model.clone()));
        }
    }
}
